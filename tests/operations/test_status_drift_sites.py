"""`status`'s drift check runs node.yml at every site at the same time, as apply configures them:
each run waits mostly on its own hosts, so one site after the other only added up the waits."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from hybridctl.core.deploy.steps import Step, StepKind
from hybridctl.drivers.ansible import HostResult, HostState, PlaybookResult, RunStatus, SshOptions
from hybridctl.drivers.state import Deployed, State, StateStore
from hybridctl.operations import status


def _baseline(site: str) -> Deployed:
    return Deployed(step_id=f"node-baseline/{site}", kind=StepKind.NODE_BASELINE, key=f"node-baseline/{site}@1",
                    site=site, applied_at="2026-11-26T00:00:00+00:00",
                    record={"playbook": "node.yml", "inventory": {"hosts": {}, "hostvars": {}}})


def test_the_sites_are_checked_at_the_same_time_and_reported_each_with_its_own_hosts(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sites = ["dc-a", "dc-b", "edge-c"]
    # Every run waits until all sites' runs have started: one after the other, the first never returns.
    all_started = threading.Barrier(len(sites), timeout=120)  # a loaded machine's bound; ends when all start

    def run_ansible_step(step: Step, context: object, **kwargs: object) -> PlaybookResult:
        assert kwargs["check"] is True and kwargs["diff"] is True
        all_started.wait()
        site = str(step.site)
        drifted = HostResult(f"{site}-01", HostState.CHANGED, changed=1 if site == "dc-b" else 0)
        return PlaybookResult("node.yml", RunStatus.SUCCESSFUL, 0, (drifted,), 0.0)

    monkeypatch.setattr("hybridctl.runners.run_ansible_step", run_ansible_step)
    state = State(deployed={f"node-baseline/{s}": _baseline(s) for s in sites})
    report = status.check_drift(StateStore(tmp_path / "state"), state, SshOptions(known_hosts=tmp_path / "kh"))
    assert [(i.step, i.drifted, list(i.hosts)) for i in report.items] == [
        ("node-baseline/dc-a", False, []), ("node-baseline/dc-b", True, ["dc-b-01"]),
        ("node-baseline/edge-c", False, [])]
