"""hybridctl bundle trust add|remove|list: the model-signing keys each on-prem and edge host trusts.

Keys are pinned on the hosts by key ID (playbooks/trust.yml). Changing them is this explicit
operation only, run under the state lock and journaled; model sync never replaces a pinned key.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import typer

from hybridctl.commands.bundle_cmds import bundle_app
from hybridctl.render.untrusted import echo

trust_app = typer.Typer(help="Pin, unpin and list the model-signing keys the hosts trust (by key ID).",
                        no_args_is_help=True)
bundle_app.add_typer(trust_app, name="trust")

_INVENTORY = typer.Option(..., "--inventory", "-i", help="Inventory file or directory: its on-prem and edge hosts.")
_SITE = typer.Option([], "--site", help="Only the hosts of this site; repeatable.")
_STATE = typer.Option(None, "--state", envvar="HYBRIDCTL_STATE", help="State directory: the change is journaled there.")
_KNOWN_HOSTS = typer.Option(None, "--known-hosts", help="known_hosts file to verify host keys against.")
_SSH_KEY = typer.Option(None, "--ssh-key", help="SSH private key for the hosts.")
_LOCK_TIMEOUT = typer.Option(0.0, "--lock-timeout", help="Seconds to wait for the state lock.")
_FORMAT = typer.Option("table", "--format", "-f", help="table or json.")


def _run(action: str, extravars: dict[str, str], key: str | None, inventory: Path, site: list[str],
         state: Path | None, known_hosts: Path | None, ssh_key: Path | None, lock_timeout: float,
         output_format: str) -> None:
    from hybridctl.errors import ExitCode, UsageError
    from hybridctl.operations.bundle_trust import run_trust
    from hybridctl.render.bundle_trust import render_trust
    from hybridctl.render.console import stdout
    from hybridctl.render.terminal import Terminal

    if output_format not in ("table", "json"):
        raise UsageError(f"--format {output_format!r}: expected table or json")
    run = run_trust(action, extravars, key, inventory, site, state, known_hosts, ssh_key, lock_timeout, Terminal())
    if output_format == "json":
        echo(json.dumps({"format_version": 1, "action": action, "key_id": key, "run_id": run.run_id,
                               "hosts": [asdict(r) for r in run.rows]}, indent=2))
    else:
        render_trust(stdout(), run)
    if run.failed:
        raise typer.Exit(ExitCode.FAILED)


@trust_app.command("add")
def add(
    public_key: Path = typer.Argument(..., help="The publisher's Ed25519 public key (PEM) to trust."),
    inventory: Path = _INVENTORY, site: list[str] = _SITE, state: Path | None = _STATE,
    known_hosts: Path | None = _KNOWN_HOSTS, ssh_key: Path | None = _SSH_KEY, lock_timeout: float = _LOCK_TIMEOUT,
    output_format: str = _FORMAT,
) -> None:
    """Pin a key on every host (next to the keys already trusted). Rotation: add the new key,
    sync bundles signed with it, then remove the old one. Exit 0 when every host has it, 1 otherwise."""
    from hybridctl.operations.bundle_trust import trusted_key_id

    identifier = trusted_key_id(public_key)
    _run("add", {"hybridctl_trust_key_file": str(public_key.resolve())}, identifier, inventory, site, state,
         known_hosts, ssh_key, lock_timeout, output_format)


@trust_app.command("remove")
def remove(
    key_id: str = typer.Argument(..., help="The key ID to stop trusting (32 hex digits, as `trust list` shows)."),
    inventory: Path = _INVENTORY, site: list[str] = _SITE, state: Path | None = _STATE,
    known_hosts: Path | None = _KNOWN_HOSTS, ssh_key: Path | None = _SSH_KEY, lock_timeout: float = _LOCK_TIMEOUT,
    output_format: str = _FORMAT,
) -> None:
    """Unpin a key on every host. A host's only key is not removed (pin its successor first)."""
    import re

    from hybridctl.errors import UsageError

    if not re.fullmatch(r"[0-9a-f]{32}", key_id):
        raise UsageError(f"{key_id!r} is not a key ID", hint="key IDs are 32 lower-case hex digits; see `bundle trust list`")
    _run("remove", {"hybridctl_trust_key_id": key_id}, key_id, inventory, site, state, known_hosts, ssh_key,
         lock_timeout, output_format)


@trust_app.command("list")
def list_keys(
    inventory: Path = _INVENTORY, site: list[str] = _SITE, state: Path | None = _STATE,
    known_hosts: Path | None = _KNOWN_HOSTS, ssh_key: Path | None = _SSH_KEY, lock_timeout: float = _LOCK_TIMEOUT,
    output_format: str = _FORMAT,
) -> None:
    """Show the key IDs each host trusts (read from the hosts)."""
    _run("list", {}, None, inventory, site, state, known_hosts, ssh_key, lock_timeout, output_format)
