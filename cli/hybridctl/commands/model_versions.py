"""status: the model version each host runs (read with playbooks/model-status.yml) against
what the applied plan's model-sync steps expect. Called by status_flow with --drift."""

from __future__ import annotations

from dataclasses import asdict

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hybridctl.core.ansible_inventory import AnsibleInventory
from hybridctl.core.model_versions import (
    ExpectedModel,
    HostModelVersion,
    VersionState,
    compare_all,
    expected_models,
)
from hybridctl.core.steps import StepKind
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


def render_model_versions(out: Console, rows: list[dict[str, object]]) -> None:
    if not rows:
        return
    table = Table(title="models on hosts", title_justify="left")
    for column in ("site", "workload", "host", "model", "expected", "active", "activated (UTC)", "state"):
        table.add_column(column)
    colours = {VersionState.AS_PLANNED.value: "green", VersionState.UNKNOWN.value: "yellow"}
    for r in rows:
        state = str(r["state"])
        text = f"[{colours.get(state, 'red')}]{escape(state)}[/]" + (f": {escape(str(r['note']))}" if r["note"] else "")
        table.add_row(str(r["site"] or "-"), str(r["workload"]), str(r["host"]), str(r["model"]), str(r["expected"]),
                      str(r["active"] or "-"), str(r["activated_at"] or "-").replace("T", " ")[:16], text)
    out.print(table)
