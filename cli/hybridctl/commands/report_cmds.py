"""report: a plan (with a drill and a previous plan) as one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path

import typer

from hybridctl.commands.app import app


@app.command()
def report(
    plan_file: Path = typer.Argument(..., help="A plan file written by `plan --out`."),
    out: Path = typer.Option(..., "--out", "-o", help="The HTML file to write."),
    drill: Path | None = typer.Option(None, "--drill", help="A drill report (`drill --json-out FILE`): adds the "
                                      "scenario × workload impact matrix."),
    previous: Path | None = typer.Option(None, "--previous", help="A previous plan file: adds the changes."),
) -> None:
    """Write an HTML report of a plan: cost, pools, placement, drill impact, changes. Works offline."""
    from hybridctl.operations.report import write_report
    from hybridctl.render.console import stderr

    size = write_report(plan_file, out, drill, previous)
    stderr().print(f"wrote {out} ({size:,} bytes; self-contained, opens offline)")
