"""Spot rework (spec, Cost): a preemptible replica on spot runs its hours times
1 + interruptions_per_day / 24 × (checkpoint_minutes / 2 + provision_minutes) / 60, in machine-hours,
cost and GPU-hours alike; the figures here are worked by hand."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.pricing.showback import CostDimension, showback
from support.cases import cloud, inventory, placed, rented, work


def _sweep(interruptions: float, spot_price: float = 2.45, **policies: Any) -> Inventory:
    spot = {**rented("p5-spot", "H100", "p5.48xlarge", 64, spot_price, "spot"), "interruptions_per_day": interruptions}
    return inventory([cloud("aws", "US", spot, rented("p5-od", "H100", "p5.48xlarge", 64, 6.88))],
                     [work("sweep", types=["H100"], count=8, hours=100, kind="experiment", preemptible=True,
                           checkpoint_minutes=30)],
                     cost_model="cash", **policies)


def test_a_reclaimed_replica_pays_for_the_work_it_loses() -> None:
    # 0.4 reclaims a day, each losing 30/2 min of work and 12 min of provisioning (cloud default):
    # 1 + 0.4 / 24 × (15 + 12) / 60 = 1.0075; 100 h → 100.75 h; one p5 of 8 GPUs at $2.45:
    # 8 × 100.75 × 2.45 = $1,974.70 (no rework: $1,960.00)
    inv = _sweep(0.4)
    result = plan(inv)
    [pl] = result.placements
    assert pl.pool == "p5-spot"
    assert pl.hours_per_month == 100.75
    assert pl.usd_per_month == 1974.70
    assert result.total_usd_per_month == 1974.70
    assert [(line.key, line.compute_usd_per_month) for line in showback(result, CostDimension.workload)] == [
        ("sweep", 1974.70)]
    assert check_plan(inv, result) == []


def test_the_checker_prices_rework_on_its_own() -> None:
    inv = _sweep(0.4)
    result = plan(inv)
    [pl] = result.placements
    unreworked = replace(result, placements=(replace(pl, hours_per_month=100.0, usd_per_month=1960.0),))
    assert any("costs 1974.70, plan says 1960.00" in p for p in check_plan(inv, unreworked))


def test_rework_can_make_spot_dearer_than_on_demand() -> None:
    # $6.80 spot looks cheaper than $6.88 on demand; with 2 reclaims a day it costs
    # 1 + 2 / 24 × (15 + 12) / 60 = 1.0375 times its hours: $7.055 a GPU-hour, so on demand wins
    inv = _sweep(2.0, spot_price=6.80, allow_on_demand_for_opportunistic=True)
    result = plan(inv)
    assert placed(result) == {"sweep": {"p5-od": 1}}
    assert result.total_usd_per_month == 8 * 100 * 6.88
    assert check_plan(inv, result) == []
