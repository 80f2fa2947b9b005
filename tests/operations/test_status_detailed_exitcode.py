"""`status --detailed-exitcode` (issue 44, item 5): 2 means every check ran and something drifted; a
check that failed is an error (1), whatever the other sites' checks found."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.core.deploy.steps import Step, StepKind
from hybridctl.drivers.ansible import HostResult, HostState, PlaybookResult, RunStatus, SshOptions
from hybridctl.drivers.state import Deployed, State, StateStore
from hybridctl.errors import ExitCode
from hybridctl.operations.status import status_report
from hybridctl.render.terminal import Terminal


def _baseline(site: str) -> Deployed:
    return Deployed(step_id=f"node-baseline/{site}", kind=StepKind.NODE_BASELINE, key=f"node-baseline/{site}@1",
                    site=site, applied_at="2026-11-26T00:00:00+00:00",
                    record={"playbook": "node.yml", "inventory": {"hostvars": {}, "groups": {}}})


def test_with_detailed_exitcode_a_failed_drift_check_exits_1_even_beside_drift(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # dc-a drifted, dc-b could not be checked: not everything was checked, so not "changes" (2)
    def run_ansible_step(step: Step, context: object, **kwargs: object) -> PlaybookResult:
        host = (HostResult("dc-a-01", HostState.CHANGED, changed=1) if step.site == "dc-a"
                else HostResult("dc-b-01", HostState.UNREACHABLE, message="ssh: connect to host dc-b-01: timed out"))
        return PlaybookResult("node.yml", RunStatus.SUCCESSFUL, 0, (host,), 0.0)

    monkeypatch.setattr("hybridctl.runners.run_ansible_step", run_ansible_step)
    store = StateStore(tmp_path / "state")
    with store.locked(command="test"):
        store.write(State(serial=1, deployed={f"node-baseline/{s}": _baseline(s) for s in ("dc-a", "dc-b")}))
    code = status_report(store, drift=True, detailed_exitcode=True, as_json=False, lock_timeout_s=0,
                         ssh_factory=lambda _: SshOptions(known_hosts=tmp_path / "kh"), view=Terminal())
    assert code == ExitCode.FAILED
    out = capsys.readouterr().out
    assert "dc-a" in out and "dc-b" in out
