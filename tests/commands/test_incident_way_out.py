"""The operator at 3 a.m. (issue 46): the failover commands in-process against the recording cloud, with the
small two-region state of support/hostile.py (api on aws-a, failed over to aws-b)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hybridctl.drivers.state import JournalEvent, StateStore
from support.hostile import applied_state, run
from support.text import flat


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return applied_state(tmp_path_factory.mktemp("applied"))


@pytest.fixture
def lab(applied: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    inventory, source = applied
    return inventory, shutil.copytree(source, tmp_path / "state")


class TestManualStepsStayManual:
    def test_auto_approve_without_a_terminal_is_refused_for_the_fencing_step(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--state", state)
        said = flat(result.stderr)
        assert result.code == 4, result.output
        assert "manual/fence/aws-a" in said and "--auto-approve never approves those" in said
        assert "--manual-steps-done" in said
        assert StateStore(state).read().pending is None

    def test_the_named_flag_is_journaled_with_who_and_how(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                     "--state", state)
        assert result.code == 0, result.output
        done = {r.step: r for r in StateStore(state).journal.records() if r.event == JournalEvent.STEP_DONE}
        fence = done["manual/fence/aws-a"]
        assert fence.detail["how"] == "--manual-steps-done" and "@" in str(fence.detail["approved_by"])
        assert done["confirm/capacity"].detail["how"] == "--auto-approve"


def _failed_mid_runbook(state: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """site-lost aws-a executed, its cloud step in aws-b failing: the runbook is left unfinished."""
    with monkeypatch.context() as patch:
        patch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                     "--state", state)
    assert result.code == 1, result.output
    pending = StateStore(state).read().pending
    assert pending is not None
    return pending.target


class TestAWayOutOfEveryRunbook:
    def test_a_runbook_whose_cloud_step_failed_rolls_back_to_the_plan_before_it(
            self, lab: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        _, state = lab
        before = StateStore(state).read().applied_plan
        unfinished = _failed_mid_runbook(state, monkeypatch)
        shown = run("runbook", "rollback", "--dry-run", "--format", "json", "--state", state)
        assert shown.code == 0, shown.output
        assert f"runbook {unfinished} is unfinished; its steps that ran: cloud-pools/aws-b" in flat(shown.stderr)
        # aws-b's pools were being made for the failover: they are destroyed; nothing at the lost aws-a is touched
        undo = json.loads(shown.stdout)
        assert [s["id"] for s in undo["steps"]] == ["confirm/release", "destroy/cloud-pools/aws-b"]
        # no workload moved, so none moves back, and no money changes: the money text says what changed
        assert undo["summary"]["usd_per_month_delta"] == 0 and undo["workloads"] == []
        back = run("runbook", "rollback", "--auto-approve", "--state", state)
        assert back.code == 0, back.output
        after = StateStore(state).read()
        assert after.pending is None and after.applied_plan == before
        assert "no failover is in effect" in run("runbook", "show", "--state", state).stdout
        # the way is free again: a new failover runs
        again = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                    "--state", state)
        assert again.code == 0, again.output

    def test_every_refusal_names_the_way_out(self, lab: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        _, state = lab
        _failed_mid_runbook(state, monkeypatch)
        refused = run("failover", "site-lost", "aws-b", "--execute", "--auto-approve", "--manual-steps-done",
                      "--state", state)
        said = flat(refused.stderr)
        assert refused.code == 4, refused.output
        assert f"hybridctl runbook rollback --state {state}" in said
        assert f"hybridctl runbook abandon --state {state} --reason TEXT" in said

    def test_an_abandoned_runbook_is_journaled_with_why_and_what_it_left(
            self, lab: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
        _, state = lab
        unfinished = _failed_mid_runbook(state, monkeypatch)
        done = run("runbook", "abandon", "--reason", "aws-b quota; moving by hand", "--state", state)
        assert done.code == 0, done.output
        assert f"runbook {unfinished} abandoned" in flat(done.stdout) and "cloud-pools/aws-b" in flat(done.stdout)
        store = StateStore(state)
        assert store.read().pending is None
        record = store.journal.records()[-1]
        assert record.summary == "abandoned" and record.detail is not None
        assert record.detail["why"] == "aws-b quota; moving by hand" and record.detail["left_changed"] == [
            "cloud-pools/aws-b"]
        assert "@" in record.detail["by"]


class TestAMistypedStateDirectory:
    @pytest.mark.parametrize("command", [("runbook", "resume"), ("runbook", "rollback"),
                                         ("runbook", "abandon", "--reason", "x")])
    def test_fails_and_creates_nothing(self, tmp_path: Path, command: tuple[str, ...]) -> None:
        typo = tmp_path / "sate"
        result = run(*command, "--auto-approve", "--state", typo) if command[1] != "abandon" else run(
            *command, "--state", typo)
        assert result.code == 2, result.output
        assert "is --state mistyped?" in flat(result.stderr)
        assert not typo.exists()


class TestStatusKnowsTheIncident:
    def test_status_names_the_failover_in_effect_and_checks_no_fenced_site(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                   "--state", state).code == 0
        text = run("status", "--state", state)
        said = flat(text.stdout)
        assert text.code == 0, text.output
        assert "failover in effect: rb-" in said and "(site-lost aws-a)" in said and "fenced: aws-a since 20" in said
        assert f"once the sites are back: `hybridctl runbook rollback --state {state}`" in said
        document = json.loads(run("status", "--state", state, "--format", "json").stdout)
        incident = document["failover"]
        assert [f["events"] for f in incident["failovers"]] == [["site-lost aws-a"]]
        assert [s["site"] for s in incident["fenced_sites"]] == ["aws-a"] and incident["link_down_sites"] == []
        assert incident["rollback"] == f"hybridctl runbook rollback --state {state}"
        aws_a = next(s for s in document["sites"] if s["site"] == "aws-a")
        assert all(step["drift"] is None for step in aws_a["steps"])
        assert any(n.startswith("drift of aws-a not checked: fenced by failover rb-") for n in document["drift"]["notes"])

    def test_no_failover_in_effect_is_null(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        assert json.loads(run("status", "--state", state, "--format", "json").stdout)["failover"] is None


def test_a_no_op_price_failover_leaves_apply_free(lab: tuple[Path, Path]) -> None:
    inventory, state = lab
    done = run("failover", "price", "aws-a-g6=x1.01", "--execute", "--auto-approve", "--state", state)
    assert done.code == 0, done.output
    assert "has no steps: nothing to run, and no failover is recorded" in flat(done.stdout)
    assert "once the site is back" not in flat(done.stdout).lower()
    assert "no failover is in effect" in run("runbook", "show", "--state", state).stdout
    applied = run("apply", inventory, "--auto-approve", "--state", state)
    assert applied.code == 0, applied.output


def test_runbook_show_has_a_status_per_step(lab: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    _, state = lab
    _failed_mid_runbook(state, monkeypatch)
    shown = run("runbook", "show", "--format", "json", "--state", state)
    assert shown.code == 0, shown.output
    progress = {r["step"]: r for r in json.loads(shown.stdout)["progress"]}
    assert {k: r["status"] for k, r in progress.items()} == {
        "confirm/contain": "done", "manual/fence/aws-a": "done", "confirm/capacity": "done",
        "cloud-pools/aws-b": "failed", "confirm/admission": "pending", "cluster-queues/k8s-aws-b": "pending",
        "destroy/cluster-queues/k8s-aws-a": "deferred", "destroy/cloud-pools/aws-a": "deferred"}
    assert progress["manual/fence/aws-a"]["how"] == "--manual-steps-done" and progress["confirm/contain"]["at"]
    text = flat(run("runbook", "show", "--state", state).output)
    assert "Progress" in text and "runbook abandon" in text and "runbook rollback" in text


def test_statuss_resume_hint_is_a_complete_command_that_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shlex

    from support.hostile import cloud_document, write_json

    inventory = write_json(tmp_path / "inventory.json.yaml", cloud_document())
    state = tmp_path / "state"
    with monkeypatch.context() as patch:
        patch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-a")
        assert run("apply", inventory, "--state", state, "--auto-approve").code == 1
    hint = json.loads(run("status", "--state", state, "--format", "json").stdout)["pending"]["resume"]
    assert hint == f"hybridctl apply {inventory} --state {state}"
    again = run(*shlex.split(hint)[1:], "--auto-approve")
    assert again.code == 0, again.output


def test_plan_with_the_state_of_a_failover_in_effect_says_so(lab: tuple[Path, Path]) -> None:
    inventory, state = lab
    quiet = run("plan", inventory, "--state", state)
    assert quiet.code == 0, quiet.output
    assert "is in effect" not in quiet.stderr
    assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
               "--state", state).code == 0
    planned = run("plan", inventory, "--state", state)
    assert planned.code == 0, planned.output
    said = flat(planned.stderr)
    assert "is in effect in" in said and "this plan ignores it" in said
    assert f"hybridctl runbook rollback --state {state}" in said


def test_resume_and_rollback_reuse_the_runs_ssh_options(lab: tuple[Path, Path], tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    _, state = lab
    known_hosts, key = tmp_path / "known_hosts", tmp_path / "id_ed25519"
    known_hosts.write_text("")
    key.write_text("")
    with monkeypatch.context() as patch:
        patch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
        assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                   "--known-hosts", known_hosts, "--ssh-key", key, "--state", state).code == 1
    for command in (("runbook", "rollback", "--dry-run"), ("runbook", "resume", "--auto-approve")):
        said = flat(run(*command, "--state", state).stderr)
        assert f"with the SSH options of the run before: --known-hosts {known_hosts} --ssh-key {key}" in said


def test_a_declined_rollback_is_not_an_unfinished_failover(lab: tuple[Path, Path],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    import typer

    _, state = lab
    assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
               "--state", state).code == 0
    with monkeypatch.context() as patch:
        patch.setattr(sys.stdin, "isatty", lambda: True)
        patch.setattr(typer, "confirm", lambda question, default=False: False)  # "the site is not back"
        declined = run("runbook", "rollback", "--state", state)
    assert declined.code == 1, declined.output
    said = flat(declined.stdout)
    assert f"stopped: confirm/capacity declined; `hybridctl runbook resume --state {state}` asks again" in said
    assert "fix the cause" not in said
    # a new failover runs: the declined rollback changed nothing, and blocks nothing
    again = run("failover", "capacity", "aws-b-g6=1", "--execute", "--auto-approve", "--manual-steps-done",
                "--state", state)
    assert again.code == 0, again.output


def test_a_second_failover_of_the_same_site_is_recognised(lab: tuple[Path, Path]) -> None:
    _, state = lab
    assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
               "--state", state).code == 0
    again = run("failover", "site-lost", "aws-a", "--state", state)
    said = flat(again.stderr)
    assert again.code == 4, again.output
    assert "site-lost aws-a: already in effect, by failover rb-" in said
    assert f"hybridctl runbook rollback --state {state}" in said


def test_each_incident_has_an_id_of_its_own(lab: tuple[Path, Path]) -> None:
    _, state = lab
    incidents = []
    for _ in range(2):  # the same site lost, rolled back, lost again: two incidents
        assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                   "--state", state).code == 0
        incidents.append(json.loads(run("runbook", "show", "--format", "json", "--state", state).stdout)["incident"])
        assert run("runbook", "rollback", "--auto-approve", "--state", state).code == 0
    assert incidents[0] != incidents[1]
