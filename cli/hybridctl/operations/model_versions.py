"""status: the model version each host runs (read with playbooks/model-status.yml) against
what the applied plan's model-sync steps expect. Called by operations/status.py with --drift."""

from __future__ import annotations

from dataclasses import asdict

from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.core.deploy.model_versions import (
    ExpectedModel,
    HostModelVersion,
    compare_all,
    expected_models,
)
from hybridctl.core.deploy.steps import StepKind
from hybridctl.drivers.ansible import SshOptions
from hybridctl.drivers.state import State, StateStore


def check_model_versions(store: StateStore, state: State, ssh: SshOptions) -> list[HostModelVersion]:
    from hybridctl.drivers.ansible import HostState, run_playbook
    from hybridctl.paths import playbooks_dir
    from hybridctl.runners import write_inventory_file

    expected: list[ExpectedModel] = []
    hostvars: dict[str, dict[str, object]] = {}
    for deployed in sorted(state.deployed.values(), key=lambda d: d.step_id):
        if deployed.kind != StepKind.MODEL_SYNC:
            continue
        expected += expected_models(deployed.step_id, deployed.site, deployed.record)
        inventory = deployed.record.get("inventory")
        if isinstance(inventory, dict):
            for host, variables in AnsibleInventory.from_params(inventory).hostvars.items():
                hostvars.setdefault(host, dict(variables))
    if not expected:
        return []
    path = write_inventory_file(AnsibleInventory(hostvars, {}), store.ansible_dir, "model-status")
    try:
        result = run_playbook(playbooks_dir() / "model-status.yml", path, ssh=ssh, work_dir=store.ansible_dir)
    finally:
        path.unlink(missing_ok=True)
    reports: dict[str, dict[str, object]] = {}
    problems: dict[str, str] = {}
    for outcome in result.hosts:
        models = outcome.data.get("models")
        if outcome.state in (HostState.OK, HostState.CHANGED) and isinstance(models, dict):
            reports[outcome.host] = models
        else:
            first = ((outcome.message or "").splitlines() or [""])[0][:200]
            problems[outcome.host] = f"{outcome.state.value}: {first}"
    return compare_all(expected, reports, problems)


def model_versions_document(rows: list[HostModelVersion]) -> list[dict[str, object]]:
    return [{**asdict(r), "state": r.state.value} for r in rows]
