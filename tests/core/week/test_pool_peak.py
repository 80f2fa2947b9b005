"""A timed plan's pool figures: `used_gpus` is the most a pool holds at once over the week, never the
sum of work that takes turns on the same GPUs (a daytime service and a nightly batch on one 32-GPU
pool showed as "36/32", and showback's idle committed GPUs went negative)."""

from __future__ import annotations

import dataclasses
import math

from hybridctl.core.checker.verify import plan_file_violations, plan_violations
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.showback import IDLE_COMMITTED, CostDimension, showback
from hybridctl.core.week.usage import pool_weeks
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES
from support.plan_week import AT_PLAN_WEEK

WEEK = AT_PLAN_WEEK


def _planned() -> tuple[Inventory, Plan]:
    inventory = load_inventory(EXAMPLES / "train-onprem-serve-cloud.yaml").inventory
    return inventory, plan(inventory, options=WEEK)


def test_a_pool_shared_over_the_week_uses_its_peak_not_the_sum_of_its_placements() -> None:
    _, result = _planned()
    summed = {u.pool: sum(p.gpus for p in result.placements if p.pool == u.pool) for u in result.pools}
    shared = [u for u in result.pools if u.committed and summed[u.pool] > u.capacity_gpus]
    assert shared, "the example no longer has work taking turns on an owned pool"
    weeks = {w.pool: w for w in pool_weeks(result)}
    for usage in result.pools:
        peak = max(weeks[usage.pool].gpus, default=0.0)
        assert usage.used_gpus == math.ceil(peak - 1e-6), (usage.pool, usage.used_gpus, peak)
        assert usage.used_gpus <= usage.capacity_gpus or not usage.committed


def test_showback_idle_committed_gpus_are_never_negative_in_a_timed_plan() -> None:
    _, result = _planned()
    idle = [line for line in showback(result, CostDimension.team) if line.key == IDLE_COMMITTED]
    assert idle and idle[0].gpus >= 0


def test_a_timed_plan_file_listing_the_summed_gpus_is_refused() -> None:
    inventory, result = _planned()
    assert plan_violations(inventory, result) == []
    pools = tuple(dataclasses.replace(u, used_gpus=sum(p.gpus for p in result.placements if p.pool == u.pool))
                  for u in result.pools)
    forged = dataclasses.replace(result, pools=pools)
    problems = plan_file_violations(forged)
    assert any("GPUs used" in p for p in problems), problems
