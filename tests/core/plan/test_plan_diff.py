"""The plan diff reports pools resized by GPUs and, for pay-per-use pools, by machines."""

from __future__ import annotations

from hybridctl.core.plan.diff import diff_plans
from hybridctl.core.plan.model import Placement, Plan, PoolUsage, SolverReport


def _plan(pools: tuple[PoolUsage, ...], replicas: int = 2) -> Plan:
    placement = Placement("chat", "fixed", "aws-east", "p5", replicas, replicas, 100.0 * replicas,
                          demand="chat", gpus_per_replica=1, hours_per_month=730)
    return Plan("demo", "sha256:x", (placement,), (), (), pools, SolverReport("optimal", 0.0, 0.0, 0.0, 0.0),
                compute_usd_per_month=100.0 * replicas, data_usd_per_month=0.0, tiers={"chat": "fixed"})


def _pool(name: str, used: int, machines: int, committed: bool) -> PoolUsage:
    return PoolUsage("aws-east", name, "H100", "on_demand", 64, used, 6.88, committed, 8, machines)


def test_a_pay_per_use_pool_whose_machines_change_at_equal_gpus_is_resized() -> None:
    before = _plan((_pool("p5", 8, 1, False),))
    after = _plan((_pool("p5", 8, 2, False),))
    (change,) = diff_plans(before, after).pools
    assert (change.before_machines, change.after_machines) == (1, 2)
    assert change.describe() == "8 → 8 GPUs, 1 → 2 machines"


def test_a_committed_pool_is_compared_by_gpus_only() -> None:
    same_gpus = diff_plans(_plan((_pool("dc", 8, 4, True),)), _plan((_pool("dc", 8, 5, True),)))
    assert same_gpus.pools == ()
    (change,) = diff_plans(_plan((_pool("dc", 8, 4, True),)), _plan((_pool("dc", 16, 4, True),))).pools
    assert change.describe() == "8 → 16 GPUs"


def test_a_pool_new_in_the_after_plan_counts_its_machines_from_zero() -> None:
    (change,) = diff_plans(_plan(()), _plan((_pool("p5", 16, 2, False),))).pools
    assert (change.before_gpus, change.after_gpus, change.before_machines, change.after_machines) == (0, 16, 0, 2)
    assert diff_plans(_plan(()), _plan((_pool("p5", 16, 2, False),))).has_changes
