"""`bundle trust` for people: per host, the result and the key IDs it trusts."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hybridctl.core.deploy.bundle import TrustRun


def render_trust(console: Console, run: TrustRun) -> None:
    table = Table(title=run.what, title_justify="left")
    for column in ("host", "site", "result", "trusted key IDs"):
        table.add_column(column)
    for r in run.rows:
        colour = "red" if r.error else ("yellow" if r.result == "changed" else "green")
        table.add_row(r.host, r.site, f"[{colour}]{r.result}[/]" + (f": {escape(r.error)}" if r.error else ""),
                      "\n".join(r.keys) or "-")
    console.print(table)
    if run.run_id is not None:
        console.print(f"journaled as run {run.run_id} in {run.state_root}")
