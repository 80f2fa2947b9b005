"""`policies.budget_action: shed` (inventory revision 4, "Budget"), worked by hand: the budget is a row of every
tier's stage, so the planner places as many GPU-hours of each tier as fit, highest first, then the least cash;
a shed replica is unplaced with the reason "budget" and the cash it would have cost; fixed work is never shed.
Before, the budget was only checked after planning (the plan failed whole), and `budget_action` was refused as
an unknown field."""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import budget_violation, plan
from hybridctl.core.plan.model import Plan
from support.cases import cash_inventory, cloud, inventory, onprem, owned, placed, rented, work
from support.timed import HAND, WEEK


def clinic(budget: float, action: str = "shed", api_replicas: int = 6) -> Inventory:
    """Owned L4s ($2,920 a month whatever runs); on-demand L4 at $0.80 and spot at $0.30 (one GPU a machine).
    api (fixed): 6 always-on replicas, on the owned pool. train (burst): 4 × 200 h, 2 beside the api, 2
    on-demand at $160 each. sweep (opportunistic): 4 × 100 h on spot at $30 each. $3,360 a month in all."""
    return cash_inventory(
        [onprem("dc", "EU", owned("own", "L4", 8, 0.5)),
         cloud("aws", "EU", rented("od", "L4", "g6.xlarge", 16, 0.8), rented("spot", "L4", "g6.xlarge", 16, 0.3, "spot"))],
        [work("api", types=["L4"], replicas=api_replicas, hours=730, kind="realtime_inference"),
         work("train", types=["L4"], replicas=4, hours=200),
         work("sweep", types=["L4"], replicas=4, hours=100, kind="experiment", preemptible=True, checkpoint_minutes=30)],
        monthly_budget_usd=budget, budget_action=action)


def checked(inv: Inventory, **options: Any) -> Plan:
    result = plan(inv, **options)
    assert check_plan(inv, result) == []
    return result


def reasons(result: Plan) -> dict[str, tuple[int, str]]:
    return {u.workload: (u.replicas, u.reason) for u in result.unplaced}


def test_the_lowest_tier_is_shed_first() -> None:
    """$3,250 leaves $330 beside the owned pool: the burst run's 2 on-demand replicas ($320) fit, no sweep
    replica ($30) does in the $10 left."""
    result = checked(clinic(3_250.0))
    assert placed(result) == {"api": {"own": 6}, "train": {"own": 2, "od": 2}}
    assert result.total_usd_per_month == 3_240.0 and not result.over_budget
    replicas, reason = reasons(result)["sweep"]
    assert replicas == 4 and reason.startswith("budget: 4 × 1 L4 left out to keep within the monthly budget of "
                                               "$3,250.00 (policies.budget_action: shed)")
    assert "they would have cost $120.00/month of cash ($30.00 a replica at spot" in reason


def test_each_tier_places_as_many_gpu_hours_as_the_budget_leaves() -> None:
    """$3,000 leaves $80: no on-demand training replica ($160) fits, so the burst run keeps only its 2 owned
    replicas; then the sweep takes what is left, 2 spot replicas ($60)."""
    result = checked(clinic(3_000.0))
    assert placed(result) == {"api": {"own": 6}, "train": {"own": 2}, "sweep": {"spot": 2}}
    assert result.total_usd_per_month == 2_980.0
    shed = reasons(result)
    assert shed["train"][0] == 2 and "they would have cost $320.00/month of cash ($160.00 a replica at od" in shed["train"][1]
    assert shed["sweep"][0] == 2 and "they would have cost $60.00/month of cash" in shed["sweep"][1]


def test_a_plan_within_the_budget_sheds_nothing() -> None:
    shed, fail = plan(clinic(4_000.0)), plan(clinic(4_000.0, "fail"))
    assert shed.placements == fail.placements and shed.unplaced == () and shed.total_usd_per_month == 3_360.0


def test_fail_keeps_the_whole_plan_and_marks_it_over_budget() -> None:
    result = plan(clinic(3_000.0, "fail"))
    assert placed(result) == {"api": {"own": 6}, "train": {"own": 2, "od": 2}, "sweep": {"spot": 4}}
    assert result.over_budget and budget_violation(result) == (
        "the optimal plan costs $3,360.00/month (cash), over the monthly budget of $3,000.00 "
        "(policies.monthly_budget_usd)")


def test_fixed_work_is_never_shed() -> None:
    """Nine api replicas need one on-demand machine ($584) beyond the owned pool: over what $3,000 leaves, so
    the plan is the one without the budget, over it (it fails as with `fail`)."""
    result = plan(clinic(3_000.0, api_replicas=9))
    assert result.over_budget and result.unplaced == ()
    assert placed(result)["api"] == {"own": 8, "od": 1}


@pytest.mark.parametrize("cost_model", ["cash", "amortized"])
def test_the_budget_binds_independent_components_together(cost_model: str) -> None:
    """An L4 burst run and a T4 sweep share no pool (two components, solved apart without a budget): the
    budget is one, and the burst tier takes it first. $100 a training replica, $50 a sweep replica."""
    inv = inventory([cloud("aws", "EU", rented("l4", "L4", "g6.xlarge", 8, 1.0),
                           rented("t4", "T4", "g4dn.xlarge", 8, 0.5, "spot"))],
                    [work("train", types=["L4"], replicas=2), work("sweep", types=["T4"], replicas=2,
                                                                   kind="experiment", preemptible=True)],
                    cost_model=cost_model, monthly_budget_usd=250.0, budget_action="shed")
    result = checked(inv)
    assert placed(result) == {"train": {"l4": 2}, "sweep": {"t4": 1}}
    assert result.total_usd_per_month == 250.0
    assert reasons(result)["sweep"][0] == 1


def test_a_timed_plan_keeps_its_budget() -> None:
    """The hand-worked week (tests/support/timed.py): a 150-hour-a-week 8-GPU batch does not fit the owned
    pool's off-hours and would rent $52,142.86 a month of machines; $10,000 beside the owned pool's $23,360
    sheds it."""
    text = HAND.replace("name: hand\n", "name: hand\npolicies: {monthly_budget_usd: 33360, budget_action: shed, "
                                        "allow_on_demand_for_opportunistic: true}\n")
    inv = load_sources([Source("inv.yaml", text.replace("HOURS", f"{150 * 730 / 168:.6f}"))]).inventory
    result = checked(inv, options=WEEK)
    assert placed(result) == {"day-service": {"own": 3}} and result.total_usd_per_month == 23_360.0
    replicas, reason = reasons(result)["batch"]
    assert replicas == 1 and "they would have cost $52,142.86/month of cash ($52,142.86 a replica at rent" in reason
