"""discover: preflight on every on-prem and edge host, and what each has against what the inventory says."""

from __future__ import annotations

from pathlib import Path

from hybridctl.core.deploy.discovery import HostDiscovery
from hybridctl.render.terminal import Terminal


def discover_hosts(inventory: Path, sites: list[str], *, state: str | None, known_hosts: Path | None,
                   ssh_key: Path | None, view: Terminal) -> list[HostDiscovery]:
    """Run playbooks/preflight.yml on the hosts of `sites` (all when empty); per host, declared against found."""
    from hybridctl.core.deploy.discovery import compare_host
    from hybridctl.drivers.ansible import run_playbook
    from hybridctl.operations.common import site_hosts
    from hybridctl.operations.run import open_store, ssh_options
    from hybridctl.paths import playbooks_dir
    from hybridctl.runners import write_inventory_file

    hosts = site_hosts(inventory, sites)
    store = open_store(state, view)
    ssh = ssh_options(store, known_hosts, ssh_key)
    work_dir = store.ansible_dir
    path = write_inventory_file(hosts, work_dir, "discover")
    try:
        with view.working(f"preflight on {len(hosts.hosts)} host(s)..."):
            result = run_playbook(playbooks_dir() / "preflight.yml", path, ssh=ssh, work_dir=work_dir)
    finally:
        path.unlink(missing_ok=True)
    outcome = {h.host: h for h in result.hosts}
    return [compare_host(name, hosts.hostvars[name], outcome[name].state.value if name in outcome else "unreachable",
                         outcome[name].data if name in outcome else {}, outcome[name].message if name in outcome else None)
            for name in hosts.hosts]
