"""report: a plan, with a drill and a previous plan, written as one self-contained HTML file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from hybridctl.errors import UsageError
from hybridctl.operations.common import check_output_path, read_plan, write_atomically


def write_report(plan_file: Path, out: Path, drill: Path | None, previous: Path | None) -> int:
    """Read the plan (and the previous plan, and the drill report), render the report and write it: its size in
    bytes."""
    from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_utf8
    from hybridctl.render.report import drill_view, render_report

    check_output_path(out, "--out")
    the_plan = read_plan(plan_file)
    before = read_plan(previous) if previous is not None else None
    view = None
    if drill is not None:
        try:
            text = read_utf8(drill, DOCUMENT_LIMIT, what="a drill report")
        except FileNotFoundError:
            raise UsageError(f"{drill}: no such drill report",
                             hint="write one with `hybridctl drill INVENTORY --json-out FILE`") from None
        except OSError as exc:
            raise UsageError(f"{drill}: cannot read: {exc.strerror or exc}") from None
        view = drill_view(text, str(drill))
    # the plan's date: when its file was written (a plan records no clock of its own)
    planned_on = datetime.fromtimestamp(plan_file.stat().st_mtime, UTC).date().isoformat()
    html = render_report(the_plan, drill=view, previous=before, source=str(plan_file),
                         previous_source=str(previous or ""), drill_source=str(drill or ""), planned_on=planned_on)
    write_atomically(out, html)
    return len(html.encode())
