"""report: a plan (with a drill and a previous plan) as one self-contained HTML file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.operations.common import check_output_path, read_plan, write_atomically


@app.command()
def report(
    plan_file: Path = typer.Argument(..., help="A plan file written by `plan --out`."),
    out: Path = typer.Option(..., "--out", "-o", help="The HTML file to write."),
    drill: Path | None = typer.Option(None, "--drill", help="A drill report (`drill --json-out FILE`): adds the "
                                      "scenario × workload impact matrix."),
    previous: Path | None = typer.Option(None, "--previous", help="A previous plan file: adds the changes."),
) -> None:
    """Write an HTML report of a plan: cost, pools, placement, drill impact, changes. Works offline."""
    from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_utf8
    from hybridctl.errors import UsageError
    from hybridctl.render.console import stderr
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
    stderr().print(f"wrote {out} ({len(html.encode()):,} bytes; self-contained, opens offline)")
