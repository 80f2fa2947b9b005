"""Steps read back bound to their source (issue 45, item 1). The audit edited a runbook's cloud step to scale a pool
to 100 × p5.48xlarge, and renamed the stacks in a state.json, each time working out every digest, key, the steps
digest and the runbook id again with hybridctl's own functions: `runbook resume` ran the forged step, and `destroy`
took down another environment's stacks in a shared backend. Now every step read back is derived again from the
inventory and the plan it claims to come from (core/deploy/stepbind.py, operations/binding.py), and a step that
differs is refused, exit 4, before any cloud call (the recording cloud records every call: none is made).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.hostile import (
    applied_state,
    assert_refused,
    cloud_document,
    resummarize,
    run,
    snapshot,
    write_json,
)
from support.recording_cloud import RecordingCloud

Document = dict[str, Any]


def _calls(recording: Path) -> list[dict[str, object]]:
    return RecordingCloud(recording).calls()


@pytest.fixture
def unfinished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(inventory, state): a failover from aws-a whose cloud step failed; its runbook is the state's unfinished run."""
    inventory, state = applied_state(tmp_path)
    monkeypatch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
    result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state)
    assert result.code == 1, result.output
    monkeypatch.delenv("HYBRIDCTL_RECORDING_CLOUD_FAIL")
    return inventory, state


def forge_runbook(state: Path, change: Callable[[Document], None]) -> str:
    """The unfinished runbook changed by `change`, then every step's digest and key, the steps digest and the
    runbook's id worked out again with hybridctl's functions, the file renamed to that id and the state pointed at
    it: what the audit did. Returns the forged runbook's id."""
    from hybridctl.core.deploy.steps import params_digest
    from hybridctl.core.failover.serialize import runbook_from_dict, steps_digest

    state_file = state / "state.json"
    recorded = json.loads(state_file.read_text())
    old = recorded["pending"]["target"]
    path = state / "runbooks" / f"{old}.json"
    document = json.loads(path.read_text())
    change(document)
    for step in document["steps"]:
        step["digest"] = params_digest(step["kind"], step["params"])
        step["key"] = f"{step['id']}@{step['digest'].removeprefix('sha256:')[:16]}"
    document["steps_digest"] = steps_digest(document["steps"])
    forged = runbook_from_dict(document).id  # the loader's own checks pass: digests, kinds, params
    document["id"] = forged
    path.unlink()
    write_json(state / "runbooks" / f"{forged}.json", document)
    text = state_file.read_text().replace(old, forged)
    state_file.write_text(text)
    return forged


def _pool_step(document: Document) -> Document:
    step: Document = next(s for s in document["steps"] if s["id"] == "cloud-pools/aws-b")
    return step


def hundred_p5(document: Document) -> None:
    """The failover's cloud step scaling its pool to 100 × p5.48xlarge (800 H100s); the plan says 2 machines."""
    pool = _pool_step(document)["params"]["config"]["nodePools"][0]
    pool.update(instanceTypes=["p5.48xlarge"], gpuType="H100", gpusPerNode=8, minSize=100, desiredSize=100,
                maxSize=100)


class TestAForgedRunbookIsRefused:
    def test_the_unforged_runbook_resumes(self, unfinished: tuple[Path, Path]) -> None:
        _, state = unfinished
        forge_runbook(state, lambda document: None)  # every id worked out again, nothing changed: still runs
        result = run("runbook", "resume", "--auto-approve", "--manual-steps-done", "--state", state)
        assert result.code == 0, result.output

    def test_100_p5_machines_are_refused_before_any_cloud_call(self, unfinished: tuple[Path, Path]) -> None:
        _, state = unfinished
        forged = forge_runbook(state, hundred_p5)
        calls = _calls(state / "recording-cloud")
        before = snapshot(state)
        result = run("runbook", "resume", "--auto-approve", "--manual-steps-done", "--state", state)
        assert_refused(result, f"{forged}.json", "step cloud-pools/aws-b",
                       "params.config.nodePools[0].desiredSize: 100, its after_plan makes 2", "nothing was run",
                       codes=frozenset({4}))
        assert _calls(state / "recording-cloud") == calls
        assert snapshot(state) == before

    @pytest.mark.parametrize(("name", "edit", "said"), [
        ("another stack", lambda p: p.update(stack_name="other-aws-b"), "params.stack_name: \"other-aws-b\""),
        ("another region", lambda p: p["config"].update({"aws:region": "us-east-1"}), "params.config.aws:region"),
        ("another site", lambda p: p.update(site="aws-a"), "params.site"),
        ("a pool more", lambda p: p["config"]["nodePools"].append(dict(p["config"]["nodePools"][0], name="x")),
         "params.config.nodePools: 2 item(s), its after_plan makes 1"),
    ])
    def test_any_change_of_a_cloud_step(self, unfinished: tuple[Path, Path], name: str,
                                        edit: Callable[[Document], None], said: str) -> None:
        _, state = unfinished
        forge_runbook(state, lambda document: edit(_pool_step(document)["params"]))
        calls = _calls(state / "recording-cloud")
        result = run("runbook", "resume", "--auto-approve", "--manual-steps-done", "--state", state)
        assert_refused(result, "step cloud-pools/aws-b", said, codes=frozenset({4}))
        assert _calls(state / "recording-cloud") == calls

    def test_a_step_its_plan_does_not_make(self, unfinished: tuple[Path, Path]) -> None:
        """The forged step under another id: a cloud site's pools that the plan never scaled."""
        _, state = unfinished

        def renamed(document: Document) -> None:
            step = _pool_step(document)
            step["id"] = "cloud-pools/aws-z"
            for other in document["steps"]:
                other["depends_on"] = ["cloud-pools/aws-z" if d == "cloud-pools/aws-b" else d
                                       for d in other["depends_on"]]
                if "steps" in other["params"]:
                    other["params"]["steps"] = ["cloud-pools/aws-z" if d == "cloud-pools/aws-b" else d
                                                for d in other["params"]["steps"]]

        forge_runbook(state, renamed)
        result = run("runbook", "resume", "--auto-approve", "--manual-steps-done", "--state", state)
        assert_refused(result, "step cloud-pools/aws-z: its after_plan makes no such step", codes=frozenset({4}))

    def test_a_forged_after_plan_with_its_steps_is_refused(self, unfinished: tuple[Path, Path]) -> None:
        """The forger changes the plan too (its summaries and content digest redone), and the step to match it:
        the plan no longer keeps the inventory's rules."""
        _, state = unfinished

        def more(document: Document) -> None:
            after = document["after_plan"]
            placement = next(p for p in after["placements"] if p["pool"] == "aws-b-g6")
            placement["replicas"] += 6
            placement["gpus"] += 6
            placement["usd_per_month"] = round(placement["gpus"] * placement["hours_per_month"] * 1.0, 2)
            resummarize(after)
            pool = _pool_step(document)["params"]["config"]["nodePools"][0]
            pool.update(minSize=8, desiredSize=8)

        forge_runbook(state, more)
        calls = _calls(state / "recording-cloud")
        result = run("runbook", "resume", "--auto-approve", "--manual-steps-done", "--state", state)
        assert_refused(result, "its after_plan breaks the inventory's rules", "nothing was run", codes=frozenset({4}))
        assert _calls(state / "recording-cloud") == calls


OWN = ("aws-a", "k8s-aws-a")  # the stacks each environment's plan makes: api's two replicas run at aws-a


@pytest.fixture
def shared_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path, Path]]:
    """(hostile's inventory and state, the shared recording backend) beside another environment, `other`, applied
    into the same backend from its own state."""
    backend = tmp_path / "backend"
    monkeypatch.setenv("HYBRIDCTL_RECORDING_CLOUD_DIR", str(backend))
    inventory, state = applied_state(tmp_path / "hostile")
    other = write_json(tmp_path / "other" / "inventory.json.yaml", {**cloud_document(), "name": "other"})
    assert run("apply", other, "--state", tmp_path / "other" / "state", "--auto-approve").code == 0
    assert set(json.loads((backend / "stacks.json").read_text())) == {
        f"{env}-{s}" for env in ("hostile", "other") for s in OWN}
    yield inventory, state, backend


def renamed_stacks(state: Path, to: str = "other") -> None:
    """Every stack the state records renamed to the other environment's, its configuration too, and each record's
    key worked out again from its params as hybridctl does."""
    from hybridctl.core.deploy.steps import params_digest

    path = state / "state.json"
    recorded = json.loads(path.read_text())
    for step_id, deployed in recorded["deployed"].items():
        record = deployed["record"]
        record["stack_name"] = record["stack_name"].replace("hostile-", f"{to}-", 1)
        record["config"]["inventoryName"] = to
        digest = params_digest(deployed["kind"], record)
        deployed["key"] = f"{step_id}@{digest.removeprefix('sha256:')[:16]}"
    path.write_text(json.dumps(recorded, indent=2))


class TestAStateWithRenamedStacksDestroysNothingElse:
    def test_destroy_is_refused_before_any_cloud_call(self, shared_backend: tuple[Path, Path, Path]) -> None:
        _, state, backend = shared_backend
        renamed_stacks(state)
        calls, stacks = _calls(backend), (backend / "stacks.json").read_text()
        before = snapshot(state)
        result = run("destroy", "--auto-approve", "--state", state)
        assert_refused(result, str(state / "state.json"), "params.stack_name: \"other-",
                       "is not the stack of a", "of inventory hostile", "nothing was run", codes=frozenset({4}))
        assert _calls(backend) == calls and (backend / "stacks.json").read_text() == stacks
        assert snapshot(state) == before

    def test_a_site_renamed_with_its_stack(self, shared_backend: tuple[Path, Path, Path], tmp_path: Path) -> None:
        """`prod` and `prod-eu` share a backend: `prod-eu-aws-a` reads as prod's stack of a site `eu-aws-a`,
        which the inventory does not have."""
        _, state, backend = shared_backend
        path = state / "state.json"
        recorded = json.loads(path.read_text())
        pools = recorded["deployed"]["cloud-pools/aws-a"]
        pools["record"].update(stack_name="hostile-eu-aws-a", site="eu-aws-a")
        pools["site"] = "eu-aws-a"
        path.write_text(json.dumps(recorded, indent=2))
        calls = _calls(backend)
        result = run("destroy", "--auto-approve", "--state", state, "--site", "eu-aws-a")
        assert_refused(result, "\"hostile-eu-aws-a\" is not the stack of a cloud site of inventory hostile",
                       codes=frozenset({4}))
        assert _calls(backend) == calls

    def test_the_unrenamed_state_destroys_its_own(self, shared_backend: tuple[Path, Path, Path]) -> None:
        _, state, backend = shared_backend
        renamed_stacks(state, to="hostile")  # keys worked out again, nothing renamed
        assert run("destroy", "--auto-approve", "--state", state).code == 0
        assert set(json.loads((backend / "stacks.json").read_text())) == {f"other-{s}" for s in OWN}

    def test_apply_does_not_tear_down_a_stack_the_state_renamed(self, shared_backend: tuple[Path, Path, Path]) -> None:
        """A renamed record under an id the plan does not make: apply would take it down as a dropped stack."""
        inventory, state, backend = shared_backend
        path = state / "state.json"
        recorded = json.loads(path.read_text())
        pools = dict(recorded["deployed"]["cloud-pools/aws-a"], step_id="cloud-pools/aws-z")
        pools["record"] = dict(pools["record"], stack_name="other-aws-a")
        recorded["deployed"]["cloud-pools/aws-z"] = pools
        path.write_text(json.dumps(recorded, indent=2))
        calls = _calls(backend)
        result = run("apply", inventory, "--auto-approve", "--state", state)
        assert_refused(result, "step destroy/cloud-pools/aws-z", "\"other-aws-a\"", codes=frozenset({4}))
        assert _calls(backend) == calls
