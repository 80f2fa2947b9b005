"""The step graphs the failover and rollback commands build (steps_builder), against apply's from scratch."""

from __future__ import annotations

import dataclasses
from functools import reduce
from typing import Any

import pytest
from hybridctl.core.deploy.stackconfig import kept_plan_digest, plan_digest
from hybridctl.core.deploy.steps import DeployedStep, apply_steps
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.replan import FailoverOptions, replan, replanned_inventory
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.statemodel import State
from hybridctl.executor import record_deployed
from hybridctl.operations.failover_compute import failover_of_state, steps_builder
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
    memo = RunMemo()  # the command's: its steps' digests are asked of it
    steps_builder(inventory, State(applied_plan_digest="sha256:recorded"), None, None, applied=applied, run_memo=memo)
    assert kept_plan_digest(memo, applied) == "sha256:recorded"
    unrecorded = dataclasses.replace(base)
    memo = RunMemo()
    steps_builder(inventory, State(), None, None, applied=unrecorded, run_memo=memo)
    assert kept_plan_digest(memo, unrecorded) == plan_digest(base) != "sha256:recorded"


def _assets() -> dict[str, str]:
    from hybridctl.operations.run import assets_digest

    return dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"), assets_digest())


def test_the_failover_plans_stacks_carry_its_own_digest() -> None:
    from hybridctl.core.failover.serialize import runbook_to_json

    inventory, base = planned_enterprise()
    state = _applied_state(inventory, base)
    applied = dataclasses.replace(base)  # nothing worked out for it before
    runbook = failover_of_state(inventory, state, lambda: applied, [Event(EventKind.SITE_LOST, "dc-frankfurt")],
                                refs=None, public_key=None, options=FailoverOptions(), memo=RunMemo())
    text = runbook_to_json(runbook)
    assert f'"planDigest": "{plan_digest(runbook.after)}"' in text  # worked out now: the plan file's
    assert f'"planDigest": "{plan_digest(base)}"' not in text


# an owned site and a cloud region whose loss leaves some placements kept: the example has a week, and losing
# Frankfurt or us-east-1 frees all its work at once (a timed replan frees all work sharing a pool with what moved)
@pytest.mark.parametrize("site", ["edge-berlin-01", "aws-eu-central-1"])
def test_the_failover_plan_is_found_as_broken_as_a_check_of_its_own_finds_it(
        site: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A placement the replan moved and one it kept, each broken: the command is handed what a whole check
    of the failover plan gives."""
    from hybridctl.core.checker import verify
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.failover import replan as replan_module

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
    applied = dataclasses.replace(base)
    failover_of_state(inventory, state, lambda: applied, [Event(EventKind.SITE_LOST, site)], refs=None,
                      public_key=None, options=FailoverOptions(), memo=RunMemo())
    result = broken[-1]
    whole = check_plan(replanned_inventory(result), result.after)
    assert len(whole) == 2 and sorted(found[-1]) == sorted(whole)
