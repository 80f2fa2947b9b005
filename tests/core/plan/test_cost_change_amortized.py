"""The cost change by pool under `cost_model: amortized` (core/plan/diff.py cost_causes): each pool's part is its
amortized compute, never its cash, so the parts add up to the change of the amortized total with nothing left over.

own: 8 owned H100 at $2.00; p5: rented, $4.00. svc (4 GPUs, always on) runs on own, 4 x 730 x $2 = $5,840.00;
train (8 GPUs, 100 h) on p5, 8 x 100 x $4 = $3,200.00: $9,040.00 a month.
"""

from __future__ import annotations

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.diff import diff_plans
from hybridctl.core.plan.model import Plan
from support.cases import cash_inventory, cloud, onprem, owned, rented, solve, work


def _fleet(own_gpus: int = 8, own_price: float = 2.0) -> Inventory:
    return cash_inventory([onprem("dc", "EU", owned("own", "H100", own_gpus, own_price)),
                           cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", 64, 4.0))],
                          [work("svc", types=["H100"], count=4, kind="realtime_inference", hours=730),
                           work("train", types=["H100"], count=8, hours=100)], cost_model="amortized")


def _causes(before: Plan, after: Plan) -> list[tuple[str, int, tuple[str, ...]]]:
    return [(c.what, c.cents, c.reasons) for c in diff_plans(before, after).causes]


def test_the_plan() -> None:
    result = solve(_fleet())
    assert result.cost_model == "amortized" and result.total_usd_per_month == 9040.0
    assert sorted((pl.workload, pl.pool) for pl in result.placements) == [("svc", "own"), ("train", "p5")]


def test_a_price_change_is_the_pools_compute() -> None:
    # own at $3.00: svc stays (4 x 730 x $3 = $8,760.00 against $11,680.00 rented): +$2,920.00, on own alone (its cash
    # moved by 8 x 730 x $1 = $5,840.00, which is not this plan's total)
    before, after = solve(_fleet()), solve(_fleet(own_price=3.0))
    assert after.total_usd_per_month == 11960.0
    assert _causes(before, after) == [("pool own", 292_000, ("price $2.00 → $3.00/GPU-h",))]


def test_a_move_off_the_owned_pool_adds_up() -> None:
    # own shrinks to 2 GPUs: svc rents, 4 x 730 x $4 = $11,680.00; own's amortized compute falls by $5,840.00 (its
    # cash by 6 x 730 x $2 = $8,760.00; p5's cash grows by a whole always-on machine, $23,360.00)
    before, after = solve(_fleet()), solve(_fleet(own_gpus=2))
    assert after.total_usd_per_month == 14880.0
    causes = _causes(before, after)
    assert [(what, cents) for what, cents, _ in causes] == [("pool own", -584_000), ("pool p5", 1_168_000)]
    assert sum(cents for _, cents, _ in causes) == 584_000
    assert "capacity 8 → 2 GPUs" in causes[0][2] and "svc replicas 1 → 0" in causes[0][2]
    assert "svc replicas 0 → 1" in causes[1][2]
