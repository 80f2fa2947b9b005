"""hybridctl discover: what the on-prem and edge hosts really have, against what the inventory says."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.errors import ExitCode


@app.command()
def discover(
    inventory: Path = typer.Argument(..., help="Inventory file or directory."),
    site: list[str] = typer.Option([], "--site", help="Only the hosts of this site; repeatable."),
    state: str | None = typer.Option(None, "--state", envvar="HYBRIDCTL_STATE",
                                      help="State directory (its known_hosts file is used by default)."),
    known_hosts: Path | None = typer.Option(None, "--known-hosts", help="known_hosts file to verify host keys against."),
    ssh_key: Path | None = typer.Option(None, "--ssh-key", help="SSH private key for the hosts."),
    output_format: str = typer.Option("table", "--format", "-f", help="table or json."),
) -> None:
    """Run preflight on every on-prem and edge host: reachability, GPUs (nvidia-smi), driver, free disk.
    Shows, per host, the GPUs declared against the GPUs found. Exit 0 when all match, 1 otherwise."""
    from rich.table import Table

    from hybridctl.commands.apply_flow import open_store, ssh_options
    from hybridctl.commands.common import site_hosts
    from hybridctl.core.discovery import compare_host
    from hybridctl.drivers.ansible import run_playbook
    from hybridctl.paths import playbooks_dir
    from hybridctl.render.console import stderr, stdout
    from hybridctl.runners import write_inventory_file

    hosts = site_hosts(inventory, site)
    store = open_store(state)
    ssh = ssh_options(store, known_hosts, ssh_key)
    work_dir = store.ansible_dir
    path = write_inventory_file(hosts, work_dir, "discover")
    try:
        with stderr().status(f"preflight on {len(hosts.hosts)} host(s)..."):
            result = run_playbook(playbooks_dir() / "preflight.yml", path, ssh=ssh, work_dir=work_dir)
    finally:
        path.unlink(missing_ok=True)
    outcome = {h.host: h for h in result.hosts}
    found = [compare_host(name, hosts.hostvars[name], outcome[name].state.value if name in outcome else "unreachable",
                          outcome[name].data if name in outcome else {}, outcome[name].message if name in outcome else None)
             for name in hosts.hosts]
    if output_format == "json":
        typer.echo(json.dumps({"format_version": 1, "hosts": [asdict(h) for h in found]}, indent=2))
    else:
        table = Table(title="Discovery", title_justify="left")
        for column in ("host", "site", "pool", "declared", "found", "driver", "free disk", "state"):
            table.add_column(column)
        for h in found:
            colour = {"ok": "green", "mismatch": "yellow"}.get(h.state, "red")
            table.add_row(h.host, h.site, h.pool, f"{h.declared_gpus} × {h.declared_gpu}",
                          "-" if h.found_gpus is None else f"{h.found_gpus} × {', '.join(h.found_models) or '-'}",
                          h.driver_version or "-", "-" if h.free_disk_gb is None else f"{h.free_disk_gb:,.1f} GB",
                          f"[{colour}]{h.state}[/]" + (f": {'; '.join(h.problems)}" if h.problems else ""))
        stdout().print(table)
    if any(h.state != "ok" for h in found):
        raise typer.Exit(ExitCode.FAILED)
