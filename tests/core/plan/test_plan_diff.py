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
    assert change.describe() == "1 → 2 machines (8 → 8 GPUs in use)"
    assert change.resized


def test_a_committed_pool_is_compared_by_gpus_only() -> None:
    same_gpus = diff_plans(_plan((_pool("dc", 8, 4, True),)), _plan((_pool("dc", 8, 5, True),)))
    assert same_gpus.pools == ()
    (change,) = diff_plans(_plan((_pool("dc", 8, 4, True),)), _plan((_pool("dc", 16, 4, True),))).pools
    # its capacity did not change: "resized 8 → 16" read as if the site had grown
    assert change.describe() == "peak use 8 → 16 GPUs"
    assert not change.resized


def test_a_pool_new_in_the_after_plan_counts_its_machines_from_zero() -> None:
    (change,) = diff_plans(_plan(()), _plan((_pool("p5", 16, 2, False),))).pools
    assert (change.before_gpus, change.after_gpus, change.before_machines, change.after_machines) == (0, 16, 0, 2)
    assert diff_plans(_plan(()), _plan((_pool("p5", 16, 2, False),))).has_changes


def _priced(price: float, replicas: int = 2, committed: bool = True) -> Plan:
    """One committed pool of 32 GPUs (its cost: capacity × price × 730 h), `replicas` 1-GPU replicas on it."""
    pool = PoolUsage("dc", "ash-h100", "H100", "reserved", 32, replicas, price, committed, 8, 4,
                     usd_per_month=round(32 * price * 730, 2))
    placement = Placement("chat", "fixed", "dc", "ash-h100", replicas, replicas, price * 730 * replicas,
                          demand="chat", gpus_per_replica=1, hours_per_month=730)
    return Plan("demo", "sha256:x", (placement,), (), (), (pool,), SolverReport("optimal", 0.0, 0.0, 0.0, 0.0),
                compute_usd_per_month=price * 730 * replicas, data_usd_per_month=0.0, tiers={"chat": "fixed"})


def test_a_price_change_alone_is_a_change_that_names_the_price() -> None:
    # by hand: 32 GPUs × ($3.35 − $1.85) × 730 h = $35,040.00 more, every replica where it was
    diff = diff_plans(_priced(1.85), _priced(3.35))
    assert diff.workloads == () and diff.pools == ()
    assert diff.has_changes and diff.cost_changed
    assert diff.cost_line() == ("+$35,040.00/month ($43,216.00 → $78,256.00): "
                                "pool ash-h100 +$35,040.00 (price $1.85 → $3.35/GPU-h)")


def test_the_same_plan_is_no_change() -> None:
    diff = diff_plans(_priced(1.85), _priced(1.85))
    assert not diff.has_changes and diff.causes == ()


def test_a_replica_count_is_named_as_what_moved_the_cost() -> None:
    # a pay-per-use pool of 8-GPU machines: 1 machine → 2 machines ($6.88 × 8 × 730 = $40,179.20 each)
    def plan(replicas: int, machines: int) -> Plan:
        pool = PoolUsage("aws", "p5", "H100", "on_demand", 64, replicas * 8, 6.88, False, 8, machines,
                         usd_per_month=round(machines * 8 * 6.88 * 730, 2))
        placement = Placement("train", "burst", "aws", "p5", replicas, replicas * 8, 0.0,
                              demand="train", gpus_per_replica=8, hours_per_month=730)
        return Plan("demo", "sha256:x", (placement,), (), (), (pool,), SolverReport("optimal", 0.0, 0.0, 0.0, 0.0),
                    compute_usd_per_month=pool.usd_per_month, data_usd_per_month=0.0, tiers={"train": "burst"})
    (cause,) = diff_plans(plan(1, 1), plan(2, 2)).causes
    assert cause.describe() == "pool p5 +$40,179.20 (1 → 2 machines of 8 GPUs; train replicas 1 → 2)"


def test_a_stack_configuration_change_alone_is_listed_in_the_pr_comment() -> None:
    from hybridctl.core.deploy.stackdiff import CloudChange, CloudChanges
    from hybridctl.render.plan import render_markdown

    same = diff_plans(_priced(1.85), _priced(1.85))
    cloud = CloudChanges("config-diff", (CloudChange("k8s-queues", "demo", "local-queue", "chat", "update", "x"),))
    changes = render_markdown(_priced(1.85), same, cloud).split("#### Changes\n", 1)[1].split("####", 1)[0]
    assert "No changes" not in changes
    assert "Stack configuration: 1 change(s), listed under Cloud changes." in changes
    assert "No changes against the previous plan." in render_markdown(
        _priced(1.85), same, CloudChanges("config-diff", ()))


def test_a_workload_that_lost_its_place_reads_unplaced_and_a_new_one_new() -> None:
    from hybridctl.core.plan.diff import WorkloadChange

    assert WorkloadChange("triage", "removed", {"ams-h100": 1}, {}).describe() == "unplaced (was ams-h100×1)"
    assert WorkloadChange("triage", "added", {}, {"ams-h100": 2}).describe() == "new: ams-h100×2"
    assert WorkloadChange("triage", "moved", {"a": 1}, {"b": 1}).describe() == "a×1 → b×1"
