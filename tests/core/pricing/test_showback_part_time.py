"""Showback per line for part-time replicas of very different hours (spec, Cost: Showback): each runs machines of
its own while it runs, so each carries its own machines' idle GPUs for its own hours, never a share of another's.
One p5.48xlarge pool (8 GPUs a machine, $4 a GPU-hour), worked by hand.
"""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.placement.planner import plan
from hybridctl.core.pricing.cents import to_cents
from hybridctl.core.pricing.showback import CostDimension, placement_costs, showback
from support.cases import cash_inventory, cloud, rented, work
from support.plan_week import AT_PLAN_WEEK

POOL = [cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 64, 4.0))]


def _lines(result) -> dict[str, tuple[float, float]]:  # type: ignore[no-untyped-def]
    return {line.key: (line.total_usd_per_month, line.idle_usd_per_month)
            for line in showback(result, CostDimension.workload)}


def test_untimed() -> None:
    """brief: 2 GPUs for 10 h a month, its own machine: 8 x 10 x $4 = $320.00, of it idle 6 x 10 x $4 = $240.00;
    long: 2 GPUs for 700 h, 8 x 700 x $4 = $22,400.00, idle $16,800.00; svc: 2 GPUs always on, alone on a shared
    machine: 8 x 730 x $4 = $23,360.00, idle $17,520.00. Total $46,080.00. (Split by GPUs, brief would carry a third of
    all the idle GPUs, $11,520.00 of them.)"""
    inventory = cash_inventory(POOL, [work("brief", types=["H100"], count=2, hours=10),
                                      work("long", types=["H100"], count=2, hours=700),
                                      work("svc", types=["H100"], count=2, kind="realtime_inference", hours=730)])
    result = plan(inventory)
    assert check_plan(inventory, result) == [] and result.total_usd_per_month == 46080.0
    assert _lines(result) == {"brief": (320.0, 240.0), "long": (22400.0, 16800.0), "svc": (23360.0, 17520.0)}
    assert sorted(placement_costs(result).placements) == [320.0, 22400.0, 23360.0]


def test_timed() -> None:
    """In a timed plan (a GPU-hour a week is 730 / 168 x $4 = $17.380952... a month): day, 4 GPUs Monday to Friday
    08:00-20:00 UTC, alone on a shared machine for its 60 h: 8 x 60 = 480 GPU-hours, $8,342.86 (idle 240, $4,171.43);
    brief, 2 GPUs for 1 h a week on its own machine: 8 GPU-hours, $139.05 (idle 6, $104.29); long, 2 GPUs for 150 h:
    1,200 GPU-hours, $20,857.14 (idle 900, $15,642.86). 211 machine-hours, $29,339.05."""
    daytime = {"windows": [{"days": "mon-fri", "from": "08:00", "to": "20:00"}]}
    inventory = cash_inventory(POOL, [
        work("day", types=["H100"], count=4, kind="realtime_inference", schedule=daytime, hours=60 * 730 / 168),
        work("brief", types=["H100"], count=2, hours=1 * 730 / 168),
        work("long", types=["H100"], count=2, hours=150 * 730 / 168)])
    result = plan(inventory, options=AT_PLAN_WEEK)
    assert check_plan(inventory, result) == [] and result.segments and not result.unplaced
    assert result.total_usd_per_month == 29339.05
    assert _lines(result) == {"day": (8342.86, 4171.43), "brief": (139.05, 104.29), "long": (20857.14, 15642.86)}
    for by in CostDimension:
        assert sum(to_cents(line.total_usd_per_month) for line in showback(result, by)) == 2_933_905
    hours = {pl.workload: sum(pl.segment_hours) for pl in result.placements}
    assert hours == pytest.approx({"brief": 1.0, "day": 60.0, "long": 150.0})
