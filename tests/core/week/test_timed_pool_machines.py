"""A timed plan's pay-per-use machines follow its week, in every figure (inventory revision 3): the pool's cash,
its machine count, its always-on machines, the idle machines the summary shows, and the arithmetic a plan file
is checked against when it is read back.

The week fleet with nine daytime service replicas of 4 GPUs: the owned 24 GPUs hold six by day, the other
three rent p5.48xlarge machines of 8 GPUs. They run every weekday daytime segment whole, so they share
ceil(12 / 8) = 2 machines there (what the plan pays, and what the scaling schedule resizes the node group to),
not a machine each, as the month's rule for part-time replicas would count them.
"""

from __future__ import annotations

import pytest
from hybridctl.core.checker.verify import plan_file_violations, plan_violations
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.shares import idle_machines, placement_shares
from hybridctl.core.pricing.showback import IDLE_COMMITTED, CostDimension, showback
from hybridctl.core.week.usage import pool_weeks
from support.plan_week import AT_PLAN_WEEK
from support.week_fleet import WEEK_FLEET, week_fleet

INVENTORY = week_fleet(WEEK_FLEET.replace("    replicas: 3\n", "    replicas: 9\n"))


@pytest.fixture(scope="module")
def planned() -> Plan:
    return plan(INVENTORY, options=AT_PLAN_WEEK)


def test_the_rented_replicas_share_the_machines_of_the_segments_they_run_whole(planned: Plan) -> None:
    [rent] = [u for u in planned.pools if u.pool == "rent"]
    assert [(p.replicas, p.gpus) for p in planned.placements if p.pool == "rent"] == [(3, 12)]
    assert (rent.machines, rent.always_on_machines, rent.gpus_per_node) == (2, 0, 8)  # 0: idle at night
    [week] = [w for w in pool_weeks(planned) if w.pool == "rent"]
    assert max(week.machines) == rent.machines and min(week.machines) == 0
    # 2 machines of 8 GPUs for the weekday daytime's hours, every week of the month, at $10 a GPU-hour
    daytime = sum(s.hours for s, m in zip(planned.segments, week.machines, strict=True) if m)
    assert rent.usd_per_month == pytest.approx(2 * 8 * daytime * 730 / 168 * 10.0, abs=0.01)


def test_a_timed_plan_reads_back_as_the_plan_it_is(planned: Plan) -> None:
    # apply and cost read a plan file and check its arithmetic: the month's rule refused this one
    assert plan_file_violations(planned) == []
    assert plan_violations(INVENTORY, planned) == []


def test_the_idle_machines_are_the_weeks(planned: Plan) -> None:
    [idle] = [m for m in idle_machines(planned) if m.pool == "rent"]
    assert (idle.machines, idle.gpus_used, idle.gpus_per_node) == (2, 12, 8)
    [rent] = [u for u in planned.pools if u.pool == "rent"]
    # what the showback's idle column says of the pool; the pool's cash less its placements' compute, each rounded
    # to the cent, is within a cent a placement of it
    by_pool = {line.key: line for line in showback(planned, CostDimension.pool)}
    assert idle.idle_usd_per_month == by_pool["rent"].idle_usd_per_month
    on_rent = sum(1 for p in planned.placements if p.pool == "rent")
    assert idle.idle_usd_per_month == pytest.approx(rent.usd_per_month - rent.amortized_usd_per_month,
                                                    abs=0.005 * on_rent + 0.01)


def test_the_showback_shares_add_up_to_the_pools_cash(planned: Plan) -> None:
    shares = placement_shares(planned)
    [rent] = [u for u in planned.pools if u.pool == "rent"]
    on_rent = [s for s, p in zip(shares, planned.placements, strict=True) if p.pool == "rent"]
    assert sum(on_rent) == pytest.approx(rent.usd_per_month, abs=0.01)


def test_a_showback_lines_gpus_are_the_most_it_holds_at_once(planned: Plan) -> None:
    # the owned a-h100 holds day-service by day and the fine-tune and the evaluation at night: 16 GPUs, not 32
    lines = {line.key: line for line in showback(planned, CostDimension.pool)}
    by_pool = {key: line.gpus for key, line in lines.items()}
    assert {k: v for k, v in by_pool.items() if k != IDLE_COMMITTED} == {u.pool: u.used_gpus for u in planned.pools}
    assert by_pool["a-h100"] == 16 and sum(p.gpus for p in planned.placements if p.pool == "a-h100") == 32
    by_workload = {line.key: line.gpus for line in showback(planned, CostDimension.workload)}
    assert by_workload["day-service"] == 36  # all nine replicas by day


def test_the_idle_committed_gpu_hours_are_what_its_dollars_pay_for(planned: Plan) -> None:
    # both owned pools are full in some segment: their idle GPUs are 0, beside $17,449.52 of idle GPU-hours (the
    # weekend and the nights); the line's GPU-hours are those hours, at the pools' prices its dollars
    [idle] = [line for line in showback(planned, CostDimension.pool) if line.key == IDLE_COMMITTED]
    assert idle.gpus == 0 and all(u.used_gpus == u.capacity_gpus for u in planned.pools if u.committed)
    weeks = {w.pool: w for w in pool_weeks(planned)}
    idle_hours = {u.pool: sum(weeks[u.pool].idle_gpu_hours) * 730 / 168 for u in planned.pools if u.committed}
    assert idle.gpu_hours_per_month == pytest.approx(sum(idle_hours.values()), abs=0.01) and idle.gpu_hours_per_month > 0
    price = {u.pool: u.usd_per_gpu_hour for u in planned.pools}
    assert idle.total_usd_per_month == pytest.approx(sum(h * price[p] for p, h in idle_hours.items()), abs=0.01)


def test_the_gpu_hours_add_up_alike_in_every_view(planned: Plan) -> None:
    # GPUs held at once do not add up across lines (work takes turns on the same GPUs); GPU-hours do, as dollars do
    totals = {by: sum(line.gpu_hours_per_month for line in showback(planned, by)) for by in CostDimension}
    assert len({round(t, 2) for t in totals.values()}) == 1, totals  # to the hundredth, as dollars to the cent
    committed = sum(u.capacity_gpus for u in planned.pools if u.committed) * 730
    rented = sum(p.gpus * p.hours_per_month for p in planned.placements
                 if not next(u for u in planned.pools if u.pool == p.pool).committed)
    assert totals[CostDimension.tier] == pytest.approx(committed + rented, abs=0.05)
