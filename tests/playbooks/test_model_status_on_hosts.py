"""status's per-host model versions on real SSH test hosts: read from the hosts (model-status.yml)
against what the applied model-sync step expects."""

from __future__ import annotations

from pathlib import Path

import pytest
from hosts.lab import HostLab
from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.core.deploy.model_versions import VersionState
from hybridctl.drivers.ansible import SshOptions
from hybridctl.drivers.state import Deployed, State, StateStore
from hybridctl.operations.model_versions import check_model_versions

from .support import MODEL, Bundles, describe
from .test_playbooks_on_hosts import run

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


def test_status_shows_each_hosts_active_version_against_the_plan(host_lab: HostLab, bundles: Bundles,
                                                                 tmp_path: Path) -> None:
    current, behind, _empty = hosts = host_lab.start(3, names=["ms-01", "ms-02", "ms-03"])
    for version, targets in (("v1", [current, behind]), ("v2", [current])):
        synced = run(host_lab, "model-sync.yml", targets, hybridctl_bundle_dir=str(bundles.good[version]),
                     hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert synced.succeeded, describe(synced)
    names = [h.name for h in hosts]
    inventory_vars = host_lab.inventory(hosts)["all"]["children"]["lab"]["hosts"]  # type: ignore[index]
    # as apply records it: the variables hybridctl gives a host (the interpreter is found on the host), its groups
    inventory = AnsibleInventory({n: {k: v for k, v in inventory_vars[n].items() if k != "ansible_python_interpreter"}
                                  for n in names}, {"hybridctl": tuple(names)})
    record = {"playbook": "model-sync.yml", "inventory": inventory.to_params(),
              "extravars": {"hybridctl_model": MODEL, "hybridctl_model_version": "v2"}}
    state = State(deployed={"model-sync/dc-lab/fraud": Deployed("model-sync/dc-lab/fraud", "model-sync", "k",
                                                                "dc-lab", "2026-05-01T00:00:00+00:00", record)})
    ssh = SshOptions(host_lab.known_hosts_path, host_lab.client_key_path)
    rows = {r.host: r for r in check_model_versions(StateStore(tmp_path / "state"), state, ssh)}
    assert rows["ms-01"].state is VersionState.AS_PLANNED and rows["ms-01"].active == "v2"
    assert rows["ms-01"].activated_at is not None and rows["ms-01"].activated_at.endswith("Z")
    assert rows["ms-02"].state is VersionState.BEHIND and rows["ms-02"].active == "v1"
    assert rows["ms-03"].state is VersionState.MISSING and rows["ms-03"].workload == "fraud"
