"""A pay-per-use pool's machines per segment, with deferrable replicas' own machines counted by their share of the
segment (week/usage.py pool_weeks, what `status` and the plan file show), cross-checked with the machine-hours the
pool is billed (pricing/pools.py through week/usage.py machine_weeks).

One p5.48xlarge pool (8 GPUs a machine, $4 a GPU-hour): svc (4 GPUs) always on, day (4 GPUs) Monday to Friday
08:00-20:00 UTC, and batch (one 16-GPU gang) 20 hours a week anywhere. svc and day share one machine by day and
svc has one to itself at night: 168 shared machine-hours; batch runs two machines of its own for its 20 hours,
wherever the plan puts them: 40. 208 machine-hours a week, 208 x 8 x $4 x 730 / 168 = $28,921.90 a month; in a
segment of L hours where batch runs h, 1 + 2 h / L machines.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.week.running import running_at
from hybridctl.core.week.usage import pool_weeks
from support.cases import cash_inventory, cloud, rented, work
from support.plan_week import AT_PLAN_WEEK, PLAN_WEEK

DAYTIME = {"windows": [{"days": "mon-fri", "from": "08:00", "to": "20:00"}]}
INVENTORY = cash_inventory(
    [cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 64, 4.0))],
    [work("svc", types=["H100"], count=4, kind="realtime_inference", hours=730),
     work("day", types=["H100"], count=4, kind="realtime_inference", schedule=DAYTIME, hours=60 * 730 / 168),
     work("batch", types=["H100"], count=16, kind="training", hours=20 * 730 / 168)])
MACHINE_HOURS = 208.0


@pytest.fixture(scope="module")
def planned() -> Plan:
    result = plan(INVENTORY, options=AT_PLAN_WEEK)
    assert check_plan(INVENTORY, result) == [] and not result.unplaced
    return result


def test_the_billed_machine_hours(planned: Plan) -> None:
    [pool] = planned.pools
    assert pool.usd_per_month == round(MACHINE_HOURS * 8 * 4.0 * 730 / 168, 2) == 28921.90


def test_each_segments_machines_are_the_shared_ones_and_batchs_share(planned: Plan) -> None:
    [week] = pool_weeks(planned)
    [batch] = [pl for pl in planned.placements if pl.workload == "batch"]
    assert sum(batch.segment_hours) == pytest.approx(20.0)
    for s, segment in enumerate(planned.segments):
        assert week.machines[s] == pytest.approx(1 + 2 * batch.segment_hours[s] / segment.hours, abs=1e-6)
    billed = sum(m * s.hours for m, s in zip(week.machines, planned.segments, strict=True))
    assert billed == pytest.approx(MACHINE_HOURS, abs=1e-4)


def test_status_shows_the_same_machines_in_every_segment(planned: Plan) -> None:
    [week] = pool_weeks(planned)
    monday = datetime.combine(PLAN_WEEK.monday, datetime.min.time(), tzinfo=UTC)
    seen = []
    for s, segment in enumerate(planned.segments):
        now = running_at(planned, monday + timedelta(hours=segment.start_hour))
        assert now is not None and now.index == s
        [pool] = now.pools
        seen.append(pool.machines)
    assert seen == list(week.machines)
    assert sum(m * s.hours for m, s in zip(seen, planned.segments, strict=True)) == pytest.approx(MACHINE_HOURS,
                                                                                                   abs=1e-4)
