"""Issue 34, item 12(h): the summary counts a pool as in use when the plan puts at least one GPU's work
on it: not the pools it merely lists (an idle committed pool), and a pool with a single GPU used counts."""

from __future__ import annotations

from hybridctl.core.plan.model import Placement, Plan, PoolUsage, SolverReport
from hybridctl.core.plan.summary import summarize
from hybridctl.render.plan_summary import summary_rows


def _pool(site: str, pool: str, capacity: int, used: int) -> PoolUsage:
    return PoolUsage(site, pool, "H100", "reserved", capacity, used, 1.0, committed=True, gpus_per_node=1,
                     machines=capacity, usd_per_month=capacity * 730.0, amortized_usd_per_month=used * 730.0)


def test_pools_in_use_are_those_with_a_gpu_used() -> None:
    # used GPUs 2, 8, 0 and 1 of 8, 64, 16 and 4: three pools (2 > 0, 8 > 0, 1 > 0) of four are in use;
    # the idle one (0) is listed but not in use
    pools = (_pool("dc", "dc-h100", 8, 2), _pool("aws", "aws-p5", 64, 8), _pool("gcp", "gcp-a100", 16, 0),
             _pool("edge", "edge-l4", 4, 1))
    placements = (Placement("chat", "fixed", "dc", "dc-h100", 2, 1, 1460.0, "cheapest"),
                  Placement("train", "burst", "aws", "aws-p5", 1, 8, 5840.0, "cheapest"),
                  Placement("edge", "fixed", "edge", "edge-l4", 1, 1, 730.0, "cheapest"))
    plan = Plan(inventory_name="t", inventory_digest="", data_movements=(), placements=placements, unplaced=(),
                pools=pools, solver=SolverReport("optimal", 0.0, 0.0, 0.0, 0.1, "mip", 1, 3),
                compute_usd_per_month=8030.0, data_usd_per_month=0.0, budget_usd_per_month=None,
                tiers={"chat": "fixed", "train": "burst", "edge": "fixed"})
    summary = summarize(plan)
    assert (summary.pools_used, summary.pools, summary.gpus_capacity) == (3, 4, 8 + 64 + 16 + 4)
    assert dict(summary_rows(plan, summary))["pools:"].startswith("3 of 4 in use; ")
