"""Showback rounding in a timed plan, worked by hand line by line (the spec's Cost, Showback, revision 4): the
idle GPU-hours of shared machines go to the replicas that leave them part-empty, in proportion to the GPUs
each holds beyond whole machines (gpu.count mod GPUs per node), segment by segment.

One p5.48xlarge pool (8 H100 a machine, $4 a GPU-hour), rented only:
- svc: 2 GPUs, always on (168 h a week);
- train: one 64-GPU gang (eight whole machines), Monday to Friday 00:00-12:00 (60 h);
- eval: one 3-GPU replica, Saturday (24 h).
All three run their windows whole, so in each segment they share ceil(their GPUs / 8) machines:
- svc alone, Mon-Fri 12:00-24:00 and Sunday, 84 h: 1 machine, 6 idle GPUs, svc's (2 beyond whole machines):
  6 x 84 = 504 idle GPU-hours;
- svc and train, Mon-Fri 00:00-12:00, 60 h: 66 GPUs on 9 machines, 6 idle; train holds 64 mod 8 = 0 beyond
  whole machines, svc 2: svc carries 6 x 60 = 360 (revision 3 gave train 64/66 of them: 349.09 GPU-hours,
  $6,067.53 a month of svc's rounding);
- svc and eval, Saturday, 24 h: 5 GPUs on 1 machine, 3 idle, shared 2 : 3: svc 28.8, eval 43.2.
648 machine-hours a week, 5,184 GPU-hours: $90,102.86 a month (a GPU-hour a week is 730 / 168 x $4 =
$17.380952… a month), of which 936 idle GPU-hours, $16,268.57. The lines:
- svc: compute 2 x 730 x $4 = $5,840.00, rounding 892.8 x 17.380952 = $15,517.71: $21,357.71;
- train: compute 3,840 x 17.380952 = $66,742.86 (16,685.71 GPU-hours a month), rounding $0.00: $66,742.86;
- eval: compute 72 x 17.380952 = $1,251.43, rounding 43.2 x 17.380952 = $750.86: $2,002.29.
"""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
from hybridctl.core.pricing.cents import to_cents
from hybridctl.core.pricing.shares import idle_machines
from hybridctl.core.pricing.showback import CostDimension, placement_costs, showback, showback_document
from support.cases import cash_inventory, cloud, rented, work
from support.plan_week import AT_PLAN_WEEK

WEEKDAY_MORNINGS = {"windows": [{"days": "mon-fri", "from": "00:00", "to": "12:00"}]}
SATURDAY = {"windows": [{"days": "sat", "from": "00:00", "to": "24:00"}]}
INVENTORY = cash_inventory(
    [cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 80, 4.0))],
    [work("svc", types=["H100"], count=2, kind="realtime_inference", hours=730),
     work("train", types=["H100"], count=64, kind="training", hours=60 * 730 / 168, schedule=WEEKDAY_MORNINGS),
     work("eval", types=["H100"], count=3, kind="training", hours=24 * 730 / 168, schedule=SATURDAY)])
BY_HAND = {  # workload: (compute with its rounding, the rounding, GPU-hours a month)
    "svc": (21357.71, 15517.71, 1460.0),
    "train": (66742.86, 0.0, 16685.71),
    "eval": (2002.29, 750.86, 312.86),
}


@pytest.fixture(scope="module")
def planned() -> Plan:
    result = plan(INVENTORY, options=AT_PLAN_WEEK)
    assert check_plan(INVENTORY, result) == []
    assert not result.unplaced and result.segments
    return result


def test_the_pool_pays_its_machine_hours(planned: Plan) -> None:
    assert planned.total_usd_per_month == 90102.86
    [pool] = planned.pools
    assert (pool.usd_per_month, pool.machines) == (90102.86, 9)


def test_each_line_by_hand(planned: Plan) -> None:
    lines = {line.key: line for line in showback(planned, CostDimension.workload)}
    assert {k: (v.compute_usd_per_month, v.idle_usd_per_month, v.gpu_hours_per_month) for k, v in lines.items()} \
        == BY_HAND
    assert {k: v.total_usd_per_month for k, v in lines.items()} == {k: v[0] for k, v in BY_HAND.items()}


def test_a_gang_that_fills_its_machines_carries_no_rounding_in_any_view(planned: Plan) -> None:
    costs = placement_costs(planned)
    by_workload = {p.workload: c for p, c in zip(planned.placements, costs.placements, strict=True)}
    assert by_workload == {k: v[0] for k, v in BY_HAND.items()}
    document = showback_document(planned)
    assert {line["workload"]: line["idle_pay_per_use_usd_per_month"] for line in document["lines"]} == {
        k: v[1] for k, v in BY_HAND.items()}
    # the plan file, read back, is priced again to the same lines
    again = plan_from_dict(plan_to_dict(planned, plan_file=True))
    assert {line.key: line.total_usd_per_month for line in showback(again, CostDimension.workload)} == {
        k: v[0] for k, v in BY_HAND.items()}
    [idle] = idle_machines(planned)
    assert (idle.workloads, idle.idle_usd_per_month) == (("eval", "svc"), 16268.57)


@pytest.mark.parametrize("by", list(CostDimension))
def test_every_view_adds_up_to_the_total(planned: Plan, by: CostDimension) -> None:
    assert sum(to_cents(line.total_usd_per_month) for line in showback(planned, by)) == 9_010_286


def test_untimed_the_same_rule() -> None:
    """Untimed, both always on: 66 GPUs on 9 machines all month, 8 x 9 x 730 x $4 = $210,240; the 6 idle GPUs
    (6 x 730 x $4 = $17,520) are svc's, the gang's 64 x 730 x $4 = $186,880 carries none (revision 3: $16,989.09)."""
    inventory = cash_inventory([cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 80, 4.0))],
                               [work("svc", types=["H100"], count=2, kind="realtime_inference", hours=730),
                                work("train", types=["H100"], count=64, kind="training", hours=730)])
    result = plan(inventory)
    assert check_plan(inventory, result) == [] and not result.segments
    lines = {line.key: (line.total_usd_per_month, line.idle_usd_per_month)
             for line in showback(result, CostDimension.workload)}
    assert lines == {"svc": (23360.0, 17520.0), "train": (186880.0, 0.0)}
    [idle] = idle_machines(result)
    assert (idle.machines, idle.gpus_used, idle.workloads, idle.idle_usd_per_month) == (9, 66, ("svc",), 17520.0)


def test_machines_no_replica_leaves_part_empty_split_by_gpus() -> None:
    """The edge the rule leaves open: two always-on 8-GPU replicas fill 2 machines, but a plan says the pool
    ran 3 (8 idle GPUs, 8 x 730 x $4 = $23,360). No replica holds GPUs beyond whole machines, so the idle
    GPUs split by GPUs among the replicas there (3 : 1), as revision 3 did; none goes elsewhere."""
    from dataclasses import replace

    from hybridctl.core.pricing.shares import placement_shares

    inventory = cash_inventory([cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 80, 4.0))],
                               [work("big", types=["H100"], count=8, replicas=3, kind="realtime_inference", hours=730),
                                work("one", types=["H100"], count=8, kind="realtime_inference", hours=730),
                                work("job", types=["H100"], count=8, kind="training", hours=100)])
    result = plan(inventory)
    [pool] = result.pools
    assert (pool.machines, pool.always_on_machines) == (5, 4)
    extra = 8 * 730 * 4.0
    widened = replace(result, pools=(replace(pool, always_on_machines=5, machines=6,
                                             usd_per_month=pool.usd_per_month + extra),))
    shares = {pl.workload: share - pl.usd_per_month for pl, share in zip(
        widened.placements, placement_shares(widened), strict=True)}
    assert shares == pytest.approx({"big": extra * 3 / 4, "one": extra / 4, "job": 0.0})
