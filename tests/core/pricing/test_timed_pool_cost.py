"""A timed plan's pay-per-use pools cost the machine-hours they run in each segment of the week, worked by
hand (inventory revision 3: replicas that run a segment whole share its machines).

HAND (tests/support/timed.py) with a 4-GPU owned pool, no batch, the day service free to rent, and an
evening service of one 4-GPU replica, Monday to Friday 14:00-22:00 UTC. The owned pool holds one day
replica (the dearer hours); p5 machines (8 GPUs, $10 a GPU-hour) run, each weekday:
- 08:00-14:00: two day replicas, 8 GPUs: 1 machine for 6 h;
- 14:00-20:00: two day replicas and the evening one, 12 GPUs: 2 machines for 6 h;
- 20:00-22:00: the evening replica: 1 machine for 2 h;
20 machine-hours a day, 100 a week, 100 x 730/168 x 8 x $10 = $34,761.90 a month. The month's rule (each
part-time replica its own machine for its hours) said 2 x 8 x 260.71 x $10 + 8 x 173.81 x $10 = $55,619.05.
"""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.pricing.totals import pay_per_use_usd_per_month, total_usd_per_month
from support.timed import HAND, load

EVENING = """\
  - name: evening-service
    type: realtime_inference
    gpu: {types: [H100], count: 4}
    replicas: 1
    schedule:
      windows: [{days: mon-fri, from: "14:00", to: "22:00"}]
"""
TEXT = HAND.replace("gpus: 16, gpus_per_node: 8,", "gpus: 4, gpus_per_node: 4,").replace("    sites: [dc]\n", "") \
    .split("  - name: batch\n")[0] + EVENING
BY_HAND = 100 * 730 / 168 * 8 * 10.0


@pytest.fixture(scope="module")
def planned():  # type: ignore[no-untyped-def]
    from hybridctl.core.placement.planner import plan
    from support.timed import WEEK

    inventory = load(0, TEXT)
    return inventory, plan(inventory, options=WEEK)


def test_the_rented_pool_costs_its_machine_hours_per_segment(planned) -> None:  # type: ignore[no-untyped-def]
    inventory, result = planned
    assert not result.unplaced
    assert sorted((pl.workload, pl.pool, pl.replicas) for pl in result.placements) == [
        ("day-service", "own", 1), ("day-service", "rent", 2), ("evening-service", "rent", 1)]
    rent = next(p for p in result.pools if p.pool == "rent")
    assert rent.usd_per_month == pytest.approx(BY_HAND, abs=0.01)
    assert pay_per_use_usd_per_month(result) == pytest.approx(BY_HAND, abs=0.01)
    own = 4 * 730 * 2.0
    assert total_usd_per_month(result) == pytest.approx(own + BY_HAND, abs=0.01)
    # the solver counted the same machine-hours (its objective adds only the amortized tie-break)
    assert result.solver.objective == pytest.approx(own + BY_HAND, rel=1e-3)
    assert check_plan(inventory, result) == []


def test_the_checker_refuses_the_months_rule(planned) -> None:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    inventory, result = planned
    month_rule = 2 * 8 * (60 * 730 / 168) * 10.0 + 8 * (40 * 730 / 168) * 10.0
    pools = tuple(replace(p, usd_per_month=round(month_rule, 2)) if p.pool == "rent" else p for p in result.pools)
    problems = check_plan(inventory, replace(result, pools=pools))
    assert any("pool cost: pool rent" in p for p in problems)
