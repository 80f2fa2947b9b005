"""Exact fits as boundary pairs (issue 45 item 8: a planted bug at "an exact fit" survived): work that
needs exactly a pool's GPUs is placed whole and one GPU less leaves a replica unplaced; a budget exactly
the plan's total passes and one cent less fails, as does a workload's cost ceiling."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import budget_violation, plan
from hybridctl.core.plan.model import Plan

FLEET = """\
version: 1
name: fit
policies: {{monthly_budget_usd: {budget}}}
sites:
  - name: dc-a
    kind: onprem
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {{}}
    pools:
      - {{name: a-h100, gpu: H100, gpus: {gpus}, gpus_per_node: 8, capacity_type: reserved, usd_per_gpu_hour: 2.0}}
workloads:
  - name: train
    type: training
    tier: burst
    replicas: 2
    gpu: {{types: [H100], count: 8, multi_node: false}}
    hours_per_month: 100
"""


def planned(gpus: int, budget: float = 1e9) -> Plan:
    text = FLEET.format(gpus=gpus, budget=budget)
    return plan(load_sources([Source("fit.yaml", text)], feasibility=False).inventory)


def test_work_needing_exactly_the_pools_gpus_is_placed_whole() -> None:
    exact = planned(16)
    assert sum(p.replicas for p in exact.placements) == 2 and exact.unplaced == ()


def test_one_gpu_less_leaves_a_replica_unplaced() -> None:
    short = planned(15)
    assert sum(p.replicas for p in short.placements) == 1
    assert [(u.workload, u.replicas) for u in short.unplaced] == [("train", 1)]


@pytest.mark.parametrize(("under", "fails"), [(0.0, False), (0.01, True)])
def test_a_budget_of_exactly_the_total_passes_and_a_cent_less_fails(under: float, fails: bool) -> None:
    total = planned(16).total_usd_per_month  # the pool's committed cost: 16 GPUs x $2 x 730 h
    assert total == pytest.approx(23_360.0)
    result = planned(16, budget=round(total - under, 2))
    assert (budget_violation(result) is not None) is fails
