"""Tier priority (spec, "Tier priority"): a lower-tier replica never holds capacity a higher-tier
replica needs; placed GPU-hours are maximized tier by tier, then cost; an unplaced replica's reason
never blames a lower tier's capacity."""

from __future__ import annotations

from dataclasses import replace

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.checker import check_plan
from hybridctl.core.plan.model import Placement, Unplaced
from hybridctl.core.plan.planner import plan
from test_planner_cases import cloud, inventory, onprem, owned, placed, rented, work


def _clinic(burst_hours: float = 730) -> Inventory:
    # the fleet: a 64-GPU burst pretraining run fits the whole on-demand quota; the
    # clinical service's second replica must go to the other failure domain, the same quota
    return inventory(
        [onprem("dc", "US", owned("h100-owned", "H100", 8, 1.0), domain="dc-row"),
         cloud("aws", "US", rented("p5-od", "H100", "p5.48xlarge", 64, 6.88))],
        [work("triage", types=["H100"], count=8, replicas=2, hours=730, kind="realtime_inference", tier="fixed"),
         work("pretrain", types=["H100"], count=64, hours=burst_hours, kind="pretraining", tier="burst",
              gpu={"types": ["H100"], "count": 64, "multi_node": True})],
        cost_model="cash")


def test_a_burst_run_never_holds_the_quota_a_fixed_replica_needs() -> None:
    inv = _clinic()
    result = plan(inv)
    assert placed(result).get("triage") == {"h100-owned": 1, "p5-od": 1}
    assert [(u.workload, u.replicas) for u in result.unplaced] == [("pretrain", 1)]
    assert check_plan(inv, result) == []


def test_the_reason_of_an_unplaced_fixed_replica_never_blames_a_lower_tier() -> None:
    # triage's ceiling pays for one replica of 8 GPUs ($5,840 a month), not two; the burst run then
    # takes the GPUs left: what blocks triage's second replica is its ceiling, not the burst run
    inv = inventory(
        [onprem("dc", "US", owned("h100-owned", "H100", 16, 1.0))],
        [work("triage", types=["H100"], count=8, replicas=2, hours=730, kind="realtime_inference", tier="fixed",
              max_usd_per_month=6000),
         work("pretrain", types=["H100"], count=8, hours=730, kind="pretraining", tier="burst")],
        cost_model="cash")
    result = plan(inv)
    assert placed(result) == {"triage": {"h100-owned": 1}, "pretrain": {"h100-owned": 1}}
    [missing] = result.unplaced
    assert "burst" not in missing.reason and "pretrain" not in missing.reason
    assert "max_usd_per_month" in missing.reason
    assert check_plan(inv, result) == []


def test_the_checker_refuses_a_lower_tier_holding_what_a_higher_tier_needed() -> None:
    # the plan the penalty weights made before: the burst run on the whole quota, triage short a replica
    inv = _clinic()
    good = plan(inv)
    [on_demand] = [p for p in good.placements if p.workload == "triage" and p.pool == "p5-od"]
    [owned_triage] = [p for p in good.placements if p.workload == "triage" and p.pool != "p5-od"]
    burst = Placement(workload="pretrain", tier="burst", site="aws", pool="p5-od", replicas=1, gpus=64,
                      usd_per_month=64 * 730 * 6.88, demand="pretrain", gpu_type="H100", gpus_per_replica=64,
                      hours_per_month=730)
    bad = replace(good, placements=(burst, owned_triage),
                  unplaced=(Unplaced("triage", "made up", 1, "fixed", "triage"),))
    assert on_demand.replicas == 1
    problems = check_plan(inv, bad)
    assert any(p.startswith("tier priority: triage (fixed)") and "pretrain (burst) holds 64 GPUs in p5-od" in p
               for p in problems), problems
    assert not any(p.startswith("tier priority") for p in check_plan(inv, good))
