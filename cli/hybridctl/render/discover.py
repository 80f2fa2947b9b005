"""`discover` for people: per host, the GPUs declared against the GPUs found."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from hybridctl.core.deploy.discovery import HostDiscovery


def render_discovery(console: Console, found: list[HostDiscovery]) -> None:
    table = Table(title="Discovery", title_justify="left")
    for column in ("host", "site", "pool", "declared", "found", "driver", "MIG", "free disk", "state"):
        table.add_column(column)
    for h in found:
        colour = {"ok": "green", "mismatch": "yellow"}.get(h.state, "red")
        table.add_row(h.host, h.site, h.pool, f"{h.declared_gpus} × {h.declared_gpu}",
                      "-" if h.found_gpus is None else f"{h.found_gpus} × {', '.join(h.found_models) or '-'}",
                      h.driver_version or "-",
                      ("on: GPU " + ", ".join(map(str, h.mig_enabled))) if h.mig_enabled else "-",
                      "-" if h.free_disk_gb is None else f"{h.free_disk_gb:,.1f} GB",
                      f"[{colour}]{h.state}[/]" + (f": {'; '.join(h.problems)}" if h.problems else ""))
    console.print(table)
