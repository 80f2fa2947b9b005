"""hybridctl bundle trust add|remove|list: the model-signing keys each on-prem and edge host trusts.

Keys are pinned on the hosts by key ID (playbooks/trust.yml). Changing them is this explicit
operation only, run under the state lock and journaled; model sync never replaces a pinned key.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import typer

from hybridctl.commands.bundle_cmds import bundle_app

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


@dataclass(frozen=True)
class TrustRow:
    host: str
    site: str
    result: str  # changed, unchanged, failed, unreachable
    keys: list[str]  # the key IDs the host trusts after the run
    error: str | None


def _run(action: str, extravars: dict[str, str], key: str | None, inventory: Path, site: list[str],
         state: Path | None, known_hosts: Path | None, ssh_key: Path | None, lock_timeout: float,
         output_format: str) -> None:
    from rich.markup import escape
    from rich.table import Table

    from hybridctl.drivers.ansible import HostState, run_playbook
    from hybridctl.drivers.journal import JournalEvent
    from hybridctl.drivers.state import new_run_id
    from hybridctl.errors import ExitCode, UsageError
    from hybridctl.operations.common import site_hosts
    from hybridctl.operations.run import locked, open_store, ssh_options
    from hybridctl.paths import playbooks_dir
    from hybridctl.render.console import stderr, stdout
    from hybridctl.runners import write_inventory_file

    if output_format not in ("table", "json"):
        raise UsageError(f"--format {output_format!r}: expected table or json")
    hosts = site_hosts(inventory, site)
    store = open_store(state)
    ssh = ssh_options(store, known_hosts, ssh_key)
    what = f"bundle trust {action}" + (f" {key}" if key else "")
    with locked(store, what, lock_timeout, stderr()):
        run_id = new_run_id()
        changes = action != "list"
        if changes:
            store.journal.append(run_id, JournalEvent.RUN_STARTED, summary=f"{what} on {len(hosts.hosts)} host(s)",
                                 detail={"operation": "bundle-trust", "action": action, "key_id": key})
        path = write_inventory_file(hosts, store.ansible_dir, "trust")
        try:
            with stderr().status(f"{what} on {len(hosts.hosts)} host(s)..."):
                result = run_playbook(playbooks_dir() / "trust.yml", path, ssh=ssh, work_dir=store.ansible_dir,
                                      extravars={"hybridctl_trust_action": action, **extravars})
        finally:
            path.unlink(missing_ok=True)
        outcome = {h.host: h for h in result.hosts}
        rows: list[TrustRow] = []
        for name in hosts.hosts:
            host = outcome.get(name)
            ok = host is not None and host.state in (HostState.OK, HostState.CHANGED)
            keys = host.data.get("keys") if host is not None else None
            error = None if ok else (((host.message or "").splitlines() or ["no result"])[0][:300] if host
                                     else "no result (unreachable?)")
            rows.append(TrustRow(name, str(hosts.hostvars[name].get("hybridctl_site", "")),
                                 ("changed" if host is not None and host.state is HostState.CHANGED else "unchanged")
                                 if ok else (host.state.value if host is not None else "unreachable"),
                                 [str(k) for k in keys] if isinstance(keys, list) else [], error))
        failed = [r.host for r in rows if r.error is not None]
        if changes:
            store.journal.append(run_id, JournalEvent.RUN_FINISHED,
                                 summary=f"{what}: {len(rows) - len(failed)} of {len(rows)} host(s) done",
                                 detail={"operation": "bundle-trust", "action": action, "key_id": key,
                                         "hosts": {r.host: r.result for r in rows}})
    if output_format == "json":
        typer.echo(json.dumps({"format_version": 1, "action": action, "key_id": key, "run_id": run_id if changes
                               else None, "hosts": [asdict(r) for r in rows]}, indent=2))
    else:
        table = Table(title=what, title_justify="left")
        for column in ("host", "site", "result", "trusted key IDs"):
            table.add_column(column)
        for r in rows:
            colour = "red" if r.error else ("yellow" if r.result == "changed" else "green")
            table.add_row(r.host, r.site, f"[{colour}]{r.result}[/]" + (f": {escape(r.error)}" if r.error else ""),
                          "\n".join(r.keys) or "-")
        stdout().print(table)
        if changes:
            stdout().print(f"journaled as run {run_id} in {store.root}")
    if failed:
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
    from hybridctl.core.deploy.bundle import key_id
    from hybridctl.drivers.bundle import load_public_key

    identifier = key_id(load_public_key(public_key))
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
