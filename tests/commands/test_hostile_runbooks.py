"""Hostile runbooks (issue 34: findings 8 and 10): a runbook kept with the state is read back by `runbook
show`, `resume` and `rollback`. Its steps carry a digest, but its plans did not: an edited runbook's
before_plan, its digest recomputed, was what `runbook rollback` returned to. Now the rollback checks the
runbook's before_plan against what the state recorded when the failover finished (the content digest of
the plan it left, in runbooks/active.json), its incident against its before_plan, and its id against the
name the state knows it by; and every runbook file is read as strictly as a plan file (finding 8).
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile import applied_state, assert_clean, assert_refused, resummarize, run, snapshot


@pytest.fixture(scope="module")
def failed_over(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(inventory, state, runbook id): the cloud document applied, then failed over from aws-a."""
    inventory, state = applied_state(tmp_path_factory.mktemp("failover"))
    result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state)
    assert result.code == 0, result.output
    return inventory, state, json.loads((state / "runbooks" / "active.json").read_text())["failovers"][0]


def copied(failed_over: tuple[Path, Path, str], tmp_path: Path) -> tuple[Path, Path, Path]:
    inventory, source, runbook_id = failed_over
    state = shutil.copytree(source, tmp_path / "state")
    return inventory, state, state / "runbooks" / f"{runbook_id}.json"


def edit_runbook(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document, indent=2))


def more_replicas(runbook: dict[str, Any]) -> None:
    """The rollback's target with a replica more of api at aws-b, its summaries and content digest redone."""
    before = runbook["before_plan"]
    placement = next(p for p in before["placements"] if p["pool"] == "aws-a-g6")
    placement["replicas"] += 4
    placement["gpus"] += 4
    placement["usd_per_month"] = round(placement["gpus"] * placement["hours_per_month"] * 0.8, 2)
    resummarize(before)


class TestRollbackChecksTheRunbooksBeforePlan:
    def test_the_state_records_the_plan_the_failover_left(self, failed_over: tuple[Path, Path, str]) -> None:
        from hybridctl.core.plan.serialize import content_digest

        _, state, runbook_id = failed_over
        active = json.loads((state / "runbooks" / "active.json").read_text())
        runbook = json.loads((state / "runbooks" / f"{runbook_id}.json").read_text())
        assert active == {"failovers": [runbook_id], "before_plan": content_digest(runbook["before_plan"])}

    def test_the_unedited_runbook_rolls_back(self, failed_over: tuple[Path, Path, str], tmp_path: Path) -> None:
        _, state, _ = copied(failed_over, tmp_path)
        result = run("runbook", "rollback", "--dry-run", "--state", state, "--format", "json")
        assert result.code == 0, result.output

    def test_an_edited_before_plan_against_what_the_state_recorded(self, failed_over: tuple[Path, Path, str],
                                                                  tmp_path: Path) -> None:
        _, state, runbook = copied(failed_over, tmp_path)
        edit_runbook(runbook, more_replicas)
        before = snapshot(state)
        for argv in (("runbook", "rollback", "--dry-run"), ("runbook", "rollback", "--auto-approve")):
            result = run(*argv, "--state", state)
            assert_refused(result, "before_plan is not the plan that ran before the failover, as the state "
                           "recorded it", "the runbook file was edited", codes=frozenset({4}))
            assert snapshot(state) == before

    def test_an_edited_before_plan_against_its_incident(self, failed_over: tuple[Path, Path, str],
                                                       tmp_path: Path) -> None:
        """A state whose failover an older hybridctl recorded (active.json without before_plan)."""
        _, state, runbook = copied(failed_over, tmp_path)
        active = state / "runbooks" / "active.json"
        active.write_text(json.dumps({"failovers": json.loads(active.read_text())["failovers"]}))
        edit_runbook(runbook, more_replicas)
        result = run("runbook", "rollback", "--dry-run", "--state", state)
        assert_refused(result, "before_plan or base_serial is not what its incident was computed from", codes=frozenset({4}))

    def test_an_edited_incident_changes_the_runbooks_id(self, failed_over: tuple[Path, Path, str],
                                                       tmp_path: Path) -> None:
        _, state, runbook = copied(failed_over, tmp_path)
        edit_runbook(runbook, lambda r: r.update(incident="inc-000000000000"))
        for argv in (("runbook", "rollback", "--dry-run"), ("runbook", "show")):
            result = run(*argv, "--state", state)
            assert_refused(result, str(runbook), "the file was edited", codes=frozenset({1}))


HOSTILE: dict[str, tuple[str, str]] = {  # name: (text, what the message says)
    "garbage": ("\x01garbage{", "not valid JSON"),
    "a list": ("[1, 2]", "not a hybridctl runbook"),
    "100,000 levels of nesting": ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
}


TEXT_EDITS: dict[str, tuple[str, str, str]] = {  # name: (old, new, what the message says)
    "a key twice": ('"kind": "failover"', '"kind": "failover", "kind": "rollback"', "key 'kind' appears twice"),
    "1e400": ('"estimated_minutes": ', '"estimated_minutes": 1e400, "e": ', "a number beyond the range of a float"),
    "a lone surrogate": ('"kind": "failover"', '"kind": "\\udfff"', "kind: text with a lone surrogate"),
    "5,000 digits": ('"base_serial": 1', '"base_serial": ' + "9" * 5000, "base_serial: a number beyond the range of a float"),
}


@pytest.mark.parametrize("command", [("runbook", "show"), ("runbook", "rollback", "--dry-run")])
@pytest.mark.parametrize("name", sorted(HOSTILE) + sorted(TEXT_EDITS))
def test_json_no_runbook_holds(failed_over: tuple[Path, Path, str], tmp_path: Path, name: str,
                               command: tuple[str, ...]) -> None:
    inventory, state, runbook = copied(failed_over, tmp_path)
    if name in HOSTILE:
        content, named = HOSTILE[name]
    else:
        old, new, named = TEXT_EDITS[name]
        content = runbook.read_text()
        assert old in content, old
        content = content.replace(old, new, 1)
    runbook.write_text(content)
    before = snapshot(state)
    result = run(*command, "--state", state, *(("--inventory", str(inventory)) if "rollback" in command else ()))
    assert_refused(result, str(runbook), named, codes=frozenset({1}))
    assert snapshot(state) == before


_VALUES = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                   max_size=3), max_leaves=6)


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.sampled_from(["top", "step", "workload", "before_plan", "after_plan"]), index=st.integers(0, 40),
       value=_VALUES)
def test_fuzz_any_value_in_a_runbook(failed_over: tuple[Path, Path, str], tmp_path: Path, where: str, index: int,
                                     value: object) -> None:
    inventory, source, runbook_id = failed_over
    state = tmp_path / "fuzzed"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(source, state)
    path = state / "runbooks" / f"{runbook_id}.json"
    document = json.loads(path.read_text())
    target: dict[str, Any] = {"top": document, "step": document["steps"][0], "workload": document["workloads"][0],
                              "before_plan": document["before_plan"], "after_plan": document["after_plan"]}[where]
    target[sorted(target)[index % len(target)]] = value
    path.write_text(json.dumps(document))
    before = snapshot(state)
    for argv in (("runbook", "show"), ("runbook", "rollback", "--dry-run", "--inventory", str(inventory))):
        result = run(*argv, "--state", state)
        assert_clean(result, frozenset({0, 1, 2, 4}))
        if result.code:  # one message, naming the runbook
            assert_refused(result, f"{runbook_id}.json", codes=frozenset({1, 2, 4}))
        assert snapshot(state) == before


class TestResumeChecksTheRunbooksBeforePlan:
    @pytest.fixture
    def unfinished(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
        """A failover whose cloud step failed: its runbook is the state's unfinished run."""
        _, state = applied_state(tmp_path)
        monkeypatch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state)
        assert result.code == 1, result.output
        monkeypatch.delenv("HYBRIDCTL_RECORDING_CLOUD_FAIL")
        pending = json.loads((state / "state.json").read_text())["pending"]
        return state, state / "runbooks" / f"{pending['target']}.json"

    def test_the_unedited_runbook_resumes(self, unfinished: tuple[Path, Path]) -> None:
        state, _ = unfinished
        result = run("runbook", "resume", "--auto-approve", "--state", state)
        assert result.code == 0, result.output

    def test_an_edited_before_plan_is_refused(self, unfinished: tuple[Path, Path]) -> None:
        state, runbook = unfinished
        edit_runbook(runbook, more_replicas)
        before = snapshot(state)
        result = run("runbook", "resume", "--auto-approve", "--state", state)
        assert_refused(result, "starts from another plan than the one applied in", "its before_plan was changed",
                       codes=frozenset({4}))
        assert snapshot(state) == before

    def test_a_resumed_failover_records_the_digest_its_stacks_are_tagged_with(self, unfinished: tuple[Path, Path],
                                                                             tmp_path: Path) -> None:
        """Issue 34, finding 10: the failover plan has no data movement (its data cost sums to the int 0): a
        resumed failover recorded the digest of the plan read back (0.0), not the one its stacks carry."""
        state, runbook = unfinished
        tags = set(SHA256_TAG.findall(runbook.read_text()))
        assert run("runbook", "resume", "--auto-approve", "--state", state).code == 0
        recorded = json.loads((state / "state.json").read_text())["applied_plan_digest"]
        assert tags == {recorded}
        _, uninterrupted = applied_state(tmp_path / "uninterrupted")
        assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", uninterrupted).code == 0
        assert json.loads((uninterrupted / "state.json").read_text())["applied_plan_digest"] == recorded


SHA256_TAG = re.compile(r'"planDigest": "(sha256:[0-9a-f]{64})"')


# --- the steps of a runbook run only what hybridctl ships (security audit: an edited runbook ran any playbook) -----


@pytest.fixture(scope="module")
def unfinished_source(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """(state, runbook id): a failover of the cloud document whose cloud step cloud-pools/aws-b failed."""
    _, state = applied_state(tmp_path_factory.mktemp("unfinished"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state)
    assert result.code == 1, result.output
    return state, json.loads((state / "state.json").read_text())["pending"]["target"]


FAILED_STEP = "cloud-pools/aws-b"


def evil_playbook(directory: Path) -> tuple[Path, Path]:
    """(playbook, the file it makes): a play that runs a command on the controller."""
    marker = directory / "evil-ran"
    playbook = directory / "evil.yml"
    playbook.write_text("- hosts: localhost\n  connection: local\n  gather_facts: false\n  tasks:\n"
                        f"    - ansible.builtin.command: touch {marker}\n")
    return playbook, marker


def no_hosts() -> dict[str, Any]:
    return {"hostvars": {}, "groups": {}}


def one_host(**variables: object) -> dict[str, Any]:
    return {"hostvars": {"h1": {"ansible_host": "h1.example.com", "ansible_port": 22, "ansible_user": "root",
                                **variables}}, "groups": {"hybridctl": ["h1"]}}


# name: (the failed step's new kind, its new params (EVIL: the evil playbook's path), what the message says)
FORGED_STEPS: dict[str, tuple[str, dict[str, Any], str]] = {
    "a playbook by absolute path": ("preflight", {"playbook": "EVIL", "inventory": no_hosts(), "extravars": {}},
                                    "params.playbook"),
    "a playbook up the tree": ("preflight", {"playbook": "../" * 12 + "EVIL", "inventory": no_hosts(),
                                             "extravars": {}}, "params.playbook"),
    "a playbook hybridctl ships, but not for this step": ("preflight", {"playbook": "trust.yml", "inventory": no_hosts(),
                                                                        "extravars": {}}, "params.playbook"),
    "ssh options in a host variable": ("preflight", {"playbook": "preflight.yml", "extravars": {}, "inventory": one_host(
        ansible_ssh_common_args="-oProxyCommand='touch /tmp/x'")}, "ansible_ssh_common_args"),
    "a local connection": ("preflight", {"playbook": "preflight.yml", "extravars": {},
                                         "inventory": one_host(ansible_connection="local")}, "ansible_connection"),
    "an address read as an ssh option": ("preflight", {"playbook": "preflight.yml", "extravars": {},
                                                       "inventory": one_host(ansible_host="-oProxyCommand=x")},
                                         "ansible_host"),
    "a user with a shell word": ("preflight", {"playbook": "preflight.yml", "extravars": {},
                                               "inventory": one_host(ansible_user="root;id")}, "ansible_user"),
    "a port beyond 65535": ("preflight", {"playbook": "preflight.yml", "extravars": {},
                                          "inventory": one_host(ansible_port=70000)}, "ansible_port"),
    "a host name with a space": ("preflight", {"playbook": "preflight.yml", "extravars": {},
                                               "inventory": {"hostvars": {"h 1": {}}, "groups": {}}}, "'h 1'"),
    "extra variables a preflight never carries": ("preflight", {"playbook": "preflight.yml", "inventory": no_hosts(),
                                                                "extravars": {"ansible_connection": "local"}},
                                                  "params.extravars"),
    "a Pulumi project outside stacks/": ("cloud-pools", {"project": "../../../tmp/evil", "stack_name": "hostile-aws-b",
                                                         "config": {}, "site": "aws-b", "cluster": None, "sites": []},
                                         "params.project"),
}


def forge_step(runbook: Path, kind: str, params: dict[str, Any], *, identity: bool) -> Path:
    """The runbook with its failed step's kind and params replaced and steps_digest worked out again, as the audit
    did. With `identity`, the forger goes on: the step's digest and key, the runbook's id and file name, and the
    state's pending run are all made to agree with the edit. Returns the runbook's (new) path."""
    from hybridctl.core.deploy.steps import canonical_json, inputs_digest
    from hybridctl.core.failover.serialize import steps_digest

    document = json.loads(runbook.read_text())
    step = next(s for s in document["steps"] if s["id"] == FAILED_STEP)
    step["kind"], step["params"] = kind, params
    if identity:
        step["digest"] = inputs_digest(kind, params)
        step["key"] = f"{step['id']}@{step['digest'].removeprefix('sha256:')[:16]}"
    document["steps_digest"] = steps_digest(document["steps"])
    if not identity:
        runbook.write_text(json.dumps(document, indent=2))
        return runbook
    keys = [s["key"] for s in document["steps"]]
    new_id = "rb-" + hashlib.sha256(canonical_json([document["kind"], document["incident"], keys])).hexdigest()[:16]
    forged = runbook.with_name(f"{new_id}.json")
    runbook.unlink()
    forged.write_text(json.dumps(document, indent=2))
    state_file = runbook.parent.parent / "state.json"
    state = json.loads(state_file.read_text())
    state["pending"]["target"] = new_id
    state["pending"]["detail"].update(file=f"runbooks/{new_id}.json", runbook=new_id)
    state_file.write_text(json.dumps(state, indent=2))
    return forged


class TestResumeRunsOnlyWhatHybridctlShips:
    """A runbook's step said which playbook to run, against which hosts, with which variables, and the runner
    took it as it came: `playbooks / "/tmp/evil.yml"` is /tmp/evil.yml, and any host variable (ansible_ssh_common_args,
    ansible_connection) reached Ansible and ssh. Now every step is checked when its runbook is read, before anything
    runs: its playbook is the one hybridctl ships for its kind, its hosts pass the inventory's own checks, its extra
    variables are those its kind carries; and its digest must be that of its kind and params, so that an edit shows
    in the runbook's id."""

    @pytest.fixture
    def unfinished(self, unfinished_source: tuple[Path, str], tmp_path: Path) -> tuple[Path, Path]:
        source, runbook_id = unfinished_source
        state = shutil.copytree(source, tmp_path / "state")
        return state, state / "runbooks" / f"{runbook_id}.json"

    @pytest.mark.parametrize("identity", [False, True], ids=["digest kept", "identity forged"])
    @pytest.mark.parametrize("name", sorted(FORGED_STEPS))
    def test_a_forged_step_is_refused_before_anything_runs(self, unfinished: tuple[Path, Path], tmp_path: Path,
                                                           name: str, identity: bool) -> None:
        state, runbook = unfinished
        playbook, marker = evil_playbook(tmp_path)
        kind, params, named = FORGED_STEPS[name]
        params = json.loads(json.dumps(params).replace("EVIL", str(playbook)))
        forged = forge_step(runbook, kind, params, identity=identity)
        before = snapshot(state)
        result = run("runbook", "resume", "--auto-approve", "--state", state)
        assert_refused(result, str(forged), f"step {FAILED_STEP}", named, "hybridctl failover", codes=frozenset({1}))
        assert not marker.exists()
        assert snapshot(state) == before

    def test_a_step_whose_params_changed_under_its_digest_is_refused(self, unfinished: tuple[Path, Path]) -> None:
        """Params hybridctl could have written, but not under this digest: the runbook's id would not show it."""
        state, runbook = unfinished
        step = next(s for s in json.loads(runbook.read_text())["steps"] if s["id"] == FAILED_STEP)
        forge_step(runbook, step["kind"], {**step["params"], "stack_name": "hostile-aws-c"}, identity=False)
        result = run("runbook", "resume", "--auto-approve", "--state", state)
        assert_refused(result, str(runbook), f"step {FAILED_STEP}", "digest", "hybridctl failover",
                       codes=frozenset({1}))

    def test_the_unedited_runbook_still_resumes(self, unfinished: tuple[Path, Path]) -> None:
        state, _ = unfinished
        result = run("runbook", "resume", "--auto-approve", "--state", state)
        assert result.code == 0, result.output
