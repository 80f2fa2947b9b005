"""hybridctl discover: what the on-prem and edge hosts really have, against what the inventory says."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.errors import ExitCode
from hybridctl.render.untrusted import echo


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
    from hybridctl.operations.discover import discover_hosts
    from hybridctl.render.console import stdout
    from hybridctl.render.discover import render_discovery
    from hybridctl.render.terminal import Terminal

    found = discover_hosts(inventory, site, state=state, known_hosts=known_hosts, ssh_key=ssh_key, view=Terminal())
    if output_format == "json":
        echo(json.dumps({"format_version": 1, "hosts": [asdict(h) for h in found]}, indent=2))
    else:
        render_discovery(stdout(), found)
    if any(h.state != "ok" for h in found):
        raise typer.Exit(ExitCode.FAILED)
