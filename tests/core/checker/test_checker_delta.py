"""Checking a failover plan where it differs from the checked base plan (what a drill does) gives what
checking it whole gives: on every example and every standard scenario, and when anything a part of
the verdict reads is then broken — a placement, an unplaced count, a pool report, a data movement,
a pool, a dataset, a workload (its ceiling, its hours) or the policies."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import pytest
from hybridctl.core.checker.check import PlacementMemo, PlanCheck, check
from hybridctl.core.checker.delta import changed_parts, check_changes
from hybridctl.core.failover.replan import replan, replanned_inventory
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.inventory.models import CostModel, Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan, Unplaced
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLE_PATHS, EXAMPLES
from support.plan_week import AT_PLAN_WEEK

Case = tuple[Inventory, Plan]


def _same(reference: PlanCheck, inventory: Inventory, result: Plan, memo: PlacementMemo | None = None) -> list[str]:
    whole = check(inventory, result).problems
    assert sorted(check_changes(reference, inventory, result, memo).problems) == sorted(whole)
    return whole


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.stem)
def test_every_standard_scenario_is_judged_as_a_whole_check_judges_it(path) -> None:
    inventory = load_inventory(path).inventory
    base = plan(inventory, options=AT_PLAN_WEEK)
    memo = PlacementMemo()
    reference = check(inventory, base, memo)
    assert reference.problems == []
    for scenario in standard_scenarios(inventory):
        result = replan(inventory, base, scenario.events)
        assert _same(reference, replanned_inventory(result), result.after, memo) == [], scenario.name


@pytest.fixture(scope="module")
def failover() -> tuple[PlanCheck, Inventory, Plan]:
    """The enterprise example after the loss of its EU cloud region. (Not its busiest site: the example has a
    week, and a timed replan frees all work that shares a pool with what moved (scope._timed_scope), which
    after the loss of the Frankfurt data centre is every workload, leaving nothing to keep.)"""
    inventory = load_inventory(EXAMPLES / "enterprise").inventory
    base = plan(inventory, options=AT_PLAN_WEEK)
    scenario = next(s for s in standard_scenarios(inventory) if s.name == "site-lost-aws-eu-central-1")
    result = replan(inventory, base, scenario.events)
    return check(inventory, base), replanned_inventory(result), result.after


def _placement_repriced(inv: Inventory, p: Plan) -> Case:
    kept = p.placements[len(p.placements) // 2]
    return inv, dataclasses.replace(p, placements=tuple(dataclasses.replace(x, usd_per_month=x.usd_per_month + 500)
                                                        if x is kept else x for x in p.placements))


def _placement_dropped(inv: Inventory, p: Plan) -> Case:
    return inv, dataclasses.replace(p, placements=p.placements[1:])


def _unplaced_miscounted(inv: Inventory, p: Plan) -> Case:
    first = p.placements[0]
    return inv, dataclasses.replace(p, unplaced=(*p.unplaced, Unplaced(first.workload, "x", 1, first.tier)))


def _pool_misreported(inv: Inventory, p: Plan) -> Case:
    return inv, dataclasses.replace(p, pools=(dataclasses.replace(p.pools[0], machines=p.pools[0].machines + 1),
                                              *p.pools[1:]))


def _movement_repriced(inv: Inventory, p: Plan) -> Case:
    m = p.data_movements[0]
    return inv, dataclasses.replace(p, data_movements=(dataclasses.replace(m, usd_per_month=m.usd_per_month + 99),
                                                       *p.data_movements[1:]))


def _pool_shrunk(inv: Inventory, p: Plan) -> Case:
    used = p.placements[0].pool
    sites = [s.model_copy(update={"pools": [q.model_copy(update={"gpus": 0} if q.gpus is not None else
                                                         {"max_gpus": 0}) if q.name == used else q for q in s.pools]})
             if any(q.name == used for q in s.pools) else s for s in inv.sites]
    return inv.model_copy(update={"sites": sites}), p


def _pool_retyped(inv: Inventory, p: Plan) -> Case:
    # the placements on it stay the very objects: only the pool changed, which their rules read
    used = p.placements[-1].pool
    sites = [s.model_copy(update={"pools": [q.model_copy(update={"gpu": "no-such-gpu"}) if q.name == used else q
                                            for q in s.pools]})
             if any(q.name == used for q in s.pools) else s for s in inv.sites]
    return inv.model_copy(update={"sites": sites}), p


def _dataset_resident_elsewhere(inv: Inventory, p: Plan) -> Case:
    # the last placed reader stays where it ran: only the changed dataset has it checked again
    read = next(w for w in reversed(inv.workloads) if w.datasets and any(x.workload == w.name for x in p.placements))
    name = read.datasets[0]
    datasets = [d.model_copy(update={"residency": ["XX"]}) if d.name == name else d for d in inv.datasets]
    return inv.model_copy(update={"datasets": datasets}), p


def _ceiling_lowered(inv: Inventory, p: Plan) -> Case:
    placed = p.placements[-1].workload
    workloads = [w.model_copy(update={"max_usd_per_month": 0.01}) if w.name == placed else w for w in inv.workloads]
    return inv.model_copy(update={"workloads": workloads}), p


def _hours_changed(inv: Inventory, p: Plan) -> Case:
    # its placements stay the very objects: only the workload changed, and its pools' machines and cash read its hours
    placed = p.placements[-1].workload
    workloads = [w.model_copy(update={"hours_per_month": 100.0 if w.hours != 100.0 else 200.0}) if w.name == placed
                 else w for w in inv.workloads]
    return inv.model_copy(update={"workloads": workloads}), p


def _policies_changed(inv: Inventory, p: Plan) -> Case:
    model = CostModel.AMORTIZED if inv.policies.cost_model is CostModel.CASH else CostModel.CASH
    return inv.model_copy(update={"policies": inv.policies.model_copy(update={"cost_model": model})}), p


def _site_renamed_egress(inv: Inventory, p: Plan) -> Case:
    sites = [s.model_copy(update={"egress_usd_per_gb": s.egress_usd_per_gb + 1}) for s in inv.sites]
    return inv.model_copy(update={"sites": sites}), p


BREAKS: list[Callable[[Inventory, Plan], Case]] = [
    _placement_repriced, _placement_dropped, _unplaced_miscounted, _pool_misreported, _movement_repriced,
    _pool_shrunk, _pool_retyped, _dataset_resident_elsewhere, _ceiling_lowered, _hours_changed, _policies_changed,
    _site_renamed_egress]


@pytest.mark.parametrize("break_it", BREAKS, ids=lambda f: f.__name__.strip("_"))
def test_a_broken_part_is_found_as_a_whole_check_finds_it(failover, break_it) -> None:
    reference, inventory, after = failover
    broken_inventory, broken = break_it(inventory, after)
    assert _same(reference, broken_inventory, broken) != []


def test_only_what_differs_is_checked_again(failover) -> None:
    reference, inventory, after = failover
    parts = changed_parts(reference, inventory, after)
    assert parts is not None
    workloads, pools = parts
    kept = set(map(id, reference.plan.placements))
    moved = {p.workload for p in after.placements if id(p) not in kept}
    assert moved and moved <= workloads < set(reference.workloads)
    assert 0 < len(pools) < len(reference.pools)
