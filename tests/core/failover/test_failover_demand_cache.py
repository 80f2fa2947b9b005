"""DemandCache: the demands of disrupted inventories, reused across a drill's scenarios, are exactly
what eligibility.demands() gives; a drill that uses it replans every scenario as replan() alone does."""

from __future__ import annotations

import dataclasses

import pytest
from hybridctl.core.failover.demand_cache import DemandCache, MovementMemo, UsageMemo
from hybridctl.core.failover.disrupt import disrupt
from hybridctl.core.failover.drill import drill
from hybridctl.core.failover.impact import impacts
from hybridctl.core.failover.replan import replan
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.placement.eligibility import demands, pool_infos
from hybridctl.core.placement.movements import data_movements
from hybridctl.core.placement.planner import WorkloadFacts, plan
from hybridctl.core.placement.tiers import classify_workload
from hybridctl.core.pricing.incident import cash_change
from hybridctl.core.pricing.pools import pool_usage
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from support.plan_week import AT_PLAN_WEEK


@pytest.fixture(scope="module")
def enterprise():
    inventory = load_inventory(inventories_dir() / "enterprise").inventory
    return inventory, plan(inventory, options=AT_PLAN_WEEK)


def test_the_cache_gives_what_demands_gives_for_every_disrupted_inventory(enterprise) -> None:
    inventory, base = enterprise
    cache = DemandCache()
    assert cache.demands(inventory) == demands(inventory)
    assert cache.facts(inventory) == WorkloadFacts.of(inventory)
    for scenario in standard_scenarios(inventory):
        disrupted = disrupt(inventory, scenario.events, base).inventory
        assert cache.demands(disrupted) == demands(disrupted), scenario.name
        assert cache.facts(disrupted) == WorkloadFacts.of(disrupted), scenario.name
    teamless = inventory.model_copy(update={"workloads": [w.model_copy(update={"team": None}) if i == 0 else w
                                                          for i, w in enumerate(inventory.workloads)]})
    assert cache.facts(teamless) == WorkloadFacts.of(teamless)


def test_a_changed_workload_or_dataset_is_worked_out_again(enterprise) -> None:
    inventory, _ = enterprise
    cache = DemandCache()
    cache.demands(inventory)
    changed = inventory.model_copy(update={
        "workloads": [w.model_copy(update={"replicas": 9}) if w.name == "fraud-scoring" else w
                      for w in inventory.workloads],
        "datasets": [d.model_copy(update={"site": "edge-nyc-01"}) if d.name == "store-video-paris" else d
                     for d in inventory.datasets]})
    got = {d.key: d for d in cache.demands(changed)}
    assert got["fraud-scoring"].replicas == 9
    assert "federated-retail@edge-nyc-01" in got and "federated-retail@edge-paris-01" not in got


def test_a_copy_with_the_same_workloads_and_other_data_or_policies_is_worked_out_again(enterprise) -> None:
    """The first inventory's demands go to a copy only when its workloads, datasets and policies are the
    very same objects: a dataset moved, or other policies, give the demands that demands() gives."""
    inventory, _ = enterprise
    cache = DemandCache()
    first = cache.demands(inventory)
    same = inventory.model_copy(update={"workloads": list(inventory.workloads)})
    assert cache.demands(same) == first
    moved = inventory.model_copy(update={"datasets": [
        d.model_copy(update={"site": "edge-nyc-01"}) if d.name == "store-video-paris" else d
        for d in inventory.datasets]})
    stricter = inventory.model_copy(update={"policies": inventory.policies.model_copy(update={"spread_fixed_across": 1})})
    renamed = inventory.model_copy(update={"datasets": [  # its readers no longer find it by name
        d.model_copy(update={"name": "store-video-elsewhere"}) if d.name == "store-video-paris" else d
        for d in inventory.datasets]})
    for copy in (moved, stricter, renamed):
        got = cache.demands(copy)
        assert got == demands(copy) and got != first


def test_a_drill_replans_each_scenario_as_replan_does(enterprise) -> None:
    inventory, base = enterprise
    scenarios = standard_scenarios(inventory)
    report = drill(inventory, base, scenarios)
    for scenario, result in zip(scenarios, report.results, strict=True):
        alone = replan(inventory, base, scenario.events)
        assert [i.workload for i in result.impacts] == [i.workload for i in impacts(inventory, alone)], scenario.name
        # in cash, the committed capacity it loses still paid (pricing/incident.py)
        assert result.usd_per_month_after == cash_change(base, alone.after).after_usd_per_month, scenario.name


def test_the_movement_memo_gives_what_data_movements_gives_for_every_scenario(enterprise) -> None:
    inventory, base = enterprise
    cache = DemandCache()
    memo = MovementMemo()
    assert memo.movements(inventory, demands(inventory), base.placements) == \
        data_movements(inventory, demands(inventory), base.placements)
    for scenario in standard_scenarios(inventory):
        result = replan(inventory, base, scenario.events, run=FailoverRun(demand_cache=cache))
        disrupted = result.disruption.inventory
        wanted = demands(disrupted)
        # the replan's own plan, and the applied plan's placements on the disrupted inventory (other sites)
        for placements in (result.after.placements, base.placements):
            assert memo.movements(disrupted, wanted, placements) == data_movements(disrupted, wanted, placements), \
                scenario.name
        assert list(result.after.data_movements) == data_movements(disrupted, wanted, result.after.placements), \
            scenario.name


def test_a_replan_gives_every_workload_the_tier_the_rules_give(enterprise) -> None:
    inventory, base = enterprise
    cache = DemandCache()
    for scenario in standard_scenarios(inventory)[:8]:
        result = replan(inventory, base, scenario.events, run=FailoverRun(demand_cache=cache))
        disrupted = result.disruption.inventory
        assert result.after.tiers == {w.name: classify_workload(w, disrupted.policies).tier.value
                                      for w in disrupted.workloads}, scenario.name


def test_the_usage_memo_gives_what_pool_usage_gives_for_every_scenario(enterprise) -> None:
    """The pools' usage by the pinned work, kept per pool for the base plan, is what pool_usage counts."""
    inventory, base = enterprise
    memo = UsageMemo()
    for scenario in standard_scenarios(inventory):
        disruption = disrupt(inventory, scenario.events, base)
        pools = pool_infos(disruption.inventory)
        touched = {c.pool for c in disruption.pool_changes}
        free = {p.workload for p in base.placements if p.pool in touched}
        pinned = [p for p in base.placements if p.workload not in free]
        unpinned = [p for p in base.placements if p.workload in free]
        assert memo.pinned(pools, base, free, pinned, unpinned) == pool_usage(pools, pinned), scenario.name
    other = dataclasses.replace(base, placements=base.placements[1:])  # another applied plan: counted afresh
    pools = pool_infos(inventory)
    assert memo.pinned(pools, other, set(), list(other.placements), []) == pool_usage(pools, other.placements)


def test_the_movement_memo_follows_work_that_stops_or_moves(enterprise) -> None:
    """After its first call, the memo gives the first call's movements but those of workloads whose
    placements or demands differ: a reader left with no placement moves nothing any more."""
    inventory, base = enterprise
    wanted = demands(inventory)
    memo = MovementMemo()
    assert memo.movements(inventory, wanted, base.placements) == data_movements(inventory, wanted, base.placements)
    reader = base.data_movements[0].workload
    stopped = [p for p in base.placements if p.workload != reader]
    moved = [dataclasses.replace(p, site=base.data_movements[0].from_site) if p.workload == reader else p
             for p in base.placements]
    for placements in (stopped, moved, base.placements):
        assert memo.movements(inventory, wanted, placements) == data_movements(inventory, wanted, placements)
