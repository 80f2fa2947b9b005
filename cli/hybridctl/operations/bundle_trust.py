"""bundle trust add|remove|list: pin, unpin or list the model-signing keys on every on-prem and edge host, under the
state lock and journaled (playbooks/trust.yml)."""

from __future__ import annotations

from pathlib import Path

from hybridctl.core.deploy.bundle import TrustRow, TrustRun
from hybridctl.render.terminal import Terminal


def run_trust(action: str, extravars: dict[str, str], key: str | None, inventory: Path, site: list[str],
              state: Path | None, known_hosts: Path | None, ssh_key: Path | None, lock_timeout: float,
              view: Terminal) -> TrustRun:
    from hybridctl.drivers.ansible import HostState, run_playbook
    from hybridctl.drivers.journal import JournalEvent
    from hybridctl.drivers.state import new_run_id
    from hybridctl.operations.common import site_hosts
    from hybridctl.operations.run import locked, open_store, ssh_options
    from hybridctl.paths import playbooks_dir
    from hybridctl.runners import write_inventory_file

    hosts = site_hosts(inventory, site)
    store = open_store(state, view)
    ssh = ssh_options(store, known_hosts, ssh_key)
    what = f"bundle trust {action}" + (f" {key}" if key else "")
    with locked(store, what, lock_timeout, view):
        run_id = new_run_id()
        changes = action != "list"
        if changes:
            store.journal.append(run_id, JournalEvent.RUN_STARTED, summary=f"{what} on {len(hosts.hosts)} host(s)",
                                 detail={"operation": "bundle-trust", "action": action, "key_id": key})
        path = write_inventory_file(hosts, store.ansible_dir, "trust")
        try:
            with view.working(f"{what} on {len(hosts.hosts)} host(s)..."):
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
    return TrustRun(what, rows, run_id if changes else None, store.root)


def trusted_key_id(public_key: Path) -> str:
    """The key ID hosts pin a publisher's public key (PEM) by."""
    from hybridctl.core.deploy.bundle import key_id
    from hybridctl.drivers.bundle import load_public_key

    return key_id(load_public_key(public_key))
