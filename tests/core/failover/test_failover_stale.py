"""stale_work: what of an applied plan the inventory no longer supports once it was edited (failover/stale.py)."""

from __future__ import annotations

from hybridctl.core.failover.stale import stale_work
from support.examples import planned_enterprise


def test_an_unchanged_inventory_supports_all_of_its_plan() -> None:
    inventory, applied = planned_enterprise()
    stale = stale_work(inventory, applied)
    assert stale.plan is applied and not stale.workloads


def test_a_removed_workload_is_dropped_and_a_repriced_pools_work_is_stale() -> None:
    inventory, applied = planned_enterprise()
    placed = applied.placements[0]
    workloads = [w for w in inventory.workloads if w.name != placed.workload]
    sites = [s.model_copy(update={"pools": [p.model_copy(update={"usd_per_gpu_hour": p.usd_per_gpu_hour + 1})
                                            if p.name == applied.placements[-1].pool else p for p in s.pools]})
             for s in inventory.sites]
    edited = inventory.model_copy(update={"workloads": workloads, "sites": sites})
    stale = stale_work(edited, applied)
    assert placed.workload not in {p.workload for p in stale.plan.placements}
    assert placed.workload not in {m.workload for m in stale.plan.data_movements}
    repriced = {p.workload for p in applied.placements if p.pool == applied.placements[-1].pool} - {placed.workload}
    assert repriced and repriced <= stale.workloads
    assert placed.workload not in stale.workloads
