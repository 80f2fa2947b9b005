"""The step graphs the failover and rollback commands build (steps_builder), against apply's from scratch."""

from __future__ import annotations

import dataclasses
from functools import reduce
from pathlib import Path
from typing import Any

import pytest
from hybridctl.commands.failover_compute import steps_builder
from hybridctl.core.failover.demand_cache import MovementMemo
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.replan import FailoverOptions, replan, replanned_inventory
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.checker import SteppedCheck
from hybridctl.core.plan.model import Plan
from hybridctl.core.stackconfig import plan_digest, plan_file_digest, remember_digest
from hybridctl.core.steps import DeployedStep, apply_steps
from hybridctl.drivers.statemodel import State
from hybridctl.executor import record_deployed
from support.examples import planned_enterprise


def _applied_state(inventory: Inventory, applied: Plan) -> State:
    """The state an apply of `applied` leaves: what it deployed, and the plan's digest."""
    return reduce(record_deployed, apply_steps(applied, inventory).graph,
                  State(serial=3, applied_plan_digest=plan_digest(applied)))


def test_from_a_state_the_failover_plans_steps_are_apply_steps_tagged_with_its_digest() -> None:
    inventory, base = planned_enterprise()
    state = _applied_state(inventory, base)
    deployed = {sid: DeployedStep(sid, d.kind, d.site, dict(d.record)) for sid, d in state.deployed.items()}
    build = steps_builder(inventory, state, None, None, applied=base)
    cloud = next(s.name for s in inventory.sites if s.kind.value == "cloud")
    after = replan(inventory, base, [Event(EventKind.SITE_LOST, cloud)]).after
    assert build(base) == apply_steps(base, inventory, deployed=deployed, asset_digests=_assets())
    assert build(after) == apply_steps(after, inventory, deployed=deployed, asset_digests=_assets())


def test_the_applied_plans_digest_is_the_one_the_state_recorded() -> None:
    inventory, base = planned_enterprise()
    applied = dataclasses.replace(base)  # an object whose digest nothing worked out yet
    steps_builder(inventory, State(applied_plan_digest="sha256:recorded"), None, None, applied=applied)
    assert plan_digest(applied) == "sha256:recorded"
    unrecorded = dataclasses.replace(base)
    steps_builder(inventory, State(), None, None, applied=unrecorded)
    assert plan_digest(unrecorded) == plan_digest(base) != "sha256:recorded"


def _assets() -> dict[str, str]:
    from hybridctl.commands.apply_flow import assets_digest

    return dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"), assets_digest())


def test_a_digest_being_worked_out_elsewhere_is_waited_for_once() -> None:
    _, base = planned_enterprise()
    pending = dataclasses.replace(base)
    calls: list[int] = []

    def work_out() -> str:
        calls.append(1)
        return "sha256:pending"

    remember_digest(pending, work_out)
    assert plan_digest(pending) == "sha256:pending" == plan_digest(pending)
    assert calls == [1]


@pytest.mark.parametrize("site", ["dc-frankfurt", "aws-us-east-1"])
def test_the_runbook_is_the_same_with_the_digests_and_the_check_in_forked_children(
        site: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from hybridctl.commands import failover_compute
    from hybridctl.core.failover.serialize import runbook_to_json

    inventory, base = planned_enterprise()
    state = _applied_state(inventory, base)
    texts = []
    for placements in (10**9, 0):  # checked here, then in children
        monkeypatch.setattr(failover_compute, "BACKGROUND_CHECK_PLACEMENTS", placements)
        applied = dataclasses.replace(base)  # nothing worked out for it before
        runbook = failover_compute.checked_failover(
            inventory, applied, [Event(EventKind.SITE_LOST, site)], options=FailoverOptions(),
            steps_for=steps_builder(inventory, state, None, None, applied=applied))
        texts.append(runbook_to_json(runbook))
    assert texts[0] == texts[1]
    # the failover plan's stacks carry its own digest, the plan file's
    assert f'"planDigest": "{plan_file_digest(runbook.after)}"' in texts[1]
    assert f'"planDigest": "{plan_digest(base)}"' not in texts[1]


def test_work_beside_the_solver_runs_during_a_solve_once_and_the_runbook_is_the_same(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hybridctl.commands import failover_compute
    from hybridctl.core.failover import runbook as runbook_module
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.core.plan import beside, solve

    inventory, base = planned_enterprise()
    state = _applied_state(inventory, base)
    events = [Event(EventKind.SITE_LOST, "dc-frankfurt")]

    def failover() -> str:
        applied = dataclasses.replace(base)
        return runbook_to_json(failover_compute.checked_failover(
            inventory, applied, events, options=FailoverOptions(),
            steps_for=steps_builder(inventory, state, None, None, applied=applied)))

    alone = failover()
    solving_now: list[bool] = []

    def watched(run: object, columns: int) -> None:
        solving_now.append(True)
        try:
            beside.solving(run, columns)  # type: ignore[arg-type]
        finally:
            solving_now.pop()

    fingerprints: list[bool] = []
    fingerprint = runbook_module.applied_fingerprint

    def watched_fingerprint(plan: Plan) -> str:
        fingerprints.append(bool(solving_now))
        return fingerprint(plan)

    baselines: list[bool] = []  # the replan's: the applied placements' data movements
    movements = MovementMemo.movements

    def watched_movements(memo: MovementMemo, inventory: Inventory, demands: Any, placements: Any,
                          **options: Any) -> Any:
        if placements is base.placements:
            baselines.append(bool(solving_now))
        return movements(memo, inventory, demands, placements, **options)

    checked_steps: list[bool] = []  # the applied plan's check, a part at a time
    step = SteppedCheck.step

    def watched_step(stepped: SteppedCheck) -> bool:
        checked_steps.append(bool(solving_now))
        return step(stepped)

    monkeypatch.setattr(failover_compute, "BACKGROUND_CHECK_PLACEMENTS", 0)
    monkeypatch.setattr(beside, "MIN_COLUMNS", 0)  # the example's models are small
    monkeypatch.setattr(SteppedCheck, "step", watched_step)
    monkeypatch.setattr(solve, "solving", watched)
    monkeypatch.setattr(runbook_module, "applied_fingerprint", watched_fingerprint)
    monkeypatch.setattr(MovementMemo, "movements", watched_movements)
    assert failover() == alone
    assert fingerprints == [True]  # worked out while a model was solved, and not again for the runbook
    assert baselines == [True]
    assert checked_steps[0] is True  # its first part at least, beside the solver (the rest may be left for later)


@pytest.mark.parametrize("delta_after", [0.0, 2.0], ids=["where-it-differs", "whole"])
@pytest.mark.parametrize("site", ["dc-frankfurt", "aws-us-east-1"])
def test_checked_in_a_child_the_failover_plan_is_found_as_broken_as_a_check_here_finds_it(
        site: str, delta_after: float, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A placement the replan moved and one it kept, each broken: the child's check finds both, and the command
    is handed what a check of its own gives; checked where it differs from the applied plan (the applied plan's
    check finished in the child) or whole."""
    from hybridctl.commands import failover_compute
    from hybridctl.core.failover import replan as replan_module
    from hybridctl.core.plan import checker_delta, verify
    from hybridctl.core.plan.checker import check_plan
    from hybridctl.core.plan.checker_delta import check_changes

    inventory, base = planned_enterprise()
    state = _applied_state(inventory, base)
    real = replan_module.replan
    broken: list[Any] = []

    def broken_replan(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        moved = next(p for p in result.after.placements if not any(p is q for q in base.placements))
        kept = next(p for p in result.after.placements if any(p is q for q in base.placements))
        after = dataclasses.replace(result.after, placements=tuple(
            dataclasses.replace(p, usd_per_month=p.usd_per_month + 7) if p is moved or p is kept else p
            for p in result.after.placements))
        broken.append(dataclasses.replace(result, after=after))
        return broken[-1]

    found: list[list[str]] = []
    monkeypatch.setattr(replan_module, "replan", broken_replan)
    monkeypatch.setattr(verify, "accepted", lambda plan, problems, what: found.append(list(problems)))
    monkeypatch.setattr(failover_compute, "BACKGROUND_CHECK_PLACEMENTS", 0)
    monkeypatch.setattr(failover_compute, "DELTA_CHECK_AFTER", delta_after)
    asked = tmp_path / "delta-checks"  # the child's check asks: a file, since a list would be the child's copy

    def counted_check_changes(*args: Any) -> Any:
        with asked.open("a") as out:
            out.write("asked\n")
        return check_changes(*args)

    monkeypatch.setattr(checker_delta, "check_changes", counted_check_changes)
    applied = dataclasses.replace(base)
    failover_compute.checked_failover(inventory, applied, [Event(EventKind.SITE_LOST, site)],
                                      options=FailoverOptions(),
                                      steps_for=steps_builder(inventory, state, None, None, applied=applied))
    result = broken[-1]
    whole = check_plan(replanned_inventory(result), result.after)
    assert len(whole) == 2 and sorted(found[-1]) == sorted(whole)
    assert (asked.read_text().count("asked") if asked.exists() else 0) == (delta_after == 0.0)
