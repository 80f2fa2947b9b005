"""The tier-priority checker at the exact fit (core/checker/priority.py): a higher-tier replica left unplaced
while a lower tier holds GPUs it could use is a violation when the room its own and higher tiers leave is exactly
what it needs, and is none when that room is one short (the lower tier's GPUs would not be enough, or not be
whole machines). Each case is a planned plan with one of its replicas taken out by hand and a burst job put in
its place.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Placement, Plan, Unplaced
from support.cases import cash_inventory, cloud, onprem, owned, rented, work


def _priority(inventory: Inventory, result: Plan) -> list[str]:
    return [p for p in check_plan(inventory, result) if p.startswith("tier priority:")]


def _one_replica_out(inventory: Inventory, result: Plan, pool: str, gpus: int) -> Plan:
    """svc with all its replicas but one placed (where the planner put them), that one unplaced, and the burst job
    `train` holding `gpus` GPUs in `pool`."""
    svc = next(w for w in inventory.workloads if w.name == "svc")
    keep = svc.replicas - 1
    placements = [pl for pl in result.placements if pl.workload not in ("svc", "train")]
    for pl in (pl for pl in result.placements if pl.workload == "svc"):
        if keep:
            placed = min(keep, pl.replicas)
            keep -= placed
            placements.append(replace(pl, replicas=placed, gpus=placed * pl.gpus_per_replica,
                                      usd_per_month=pl.usd_per_month * placed / pl.replicas))
    site = next(s.name for s in inventory.sites if any(p.name == pool for p in s.pools))
    train = Placement(workload="train", tier="burst", site=site, pool=pool, replicas=1, gpus=gpus, usd_per_month=0.0,
                      demand="train", gpu_type="H100", gpus_per_replica=gpus, hours_per_month=100.0)
    return replace(result, placements=(*placements, train),
                   unplaced=(Unplaced("svc", "capacity", replicas=1, tier="fixed", demand="svc"),))


@pytest.mark.parametrize(("api_gpus", "flagged"), [(2, True), (3, False)])
def test_a_committed_pool(api_gpus: int, flagged: bool) -> None:
    """8 owned GPUs: api (fixed) holds api_gpus, svc's one placed replica 3; its other replica needs 3. Room
    counting only the fixed tier: 8 - api_gpus - 3 = 3 (== need: train's GPUs are what it lacks) or 2 (need - 1)."""
    inventory = cash_inventory(
        [onprem("dc", "EU", owned("own", "H100", 8, 2.0))],
        [work("api", types=["H100"], count=api_gpus, kind="realtime_inference", hours=730),
         work("svc", types=["H100"], count=3, replicas=2, kind="realtime_inference", hours=730, spread=1),
         work("train", types=["H100"], count=8 - api_gpus - 3, kind="training", hours=100)])
    found = _priority(inventory, _one_replica_out(inventory, plan(inventory), "own", 8 - api_gpus - 3))
    if flagged:
        assert found == ["tier priority: svc (fixed) has a replica unplaced while train (burst) holds "
                         f"{8 - api_gpus - 3} GPUs in own, where it fits"]
    else:
        assert found == []


@pytest.mark.parametrize(("quota", "flagged"), [(16, True), (15, False)])
def test_a_pay_per_use_pool_in_whole_machines(quota: int, flagged: bool) -> None:
    """p5 machines of 8 GPUs under a quota: api (fixed, always on) holds one machine; svc's missing replica needs
    a machine of its own (8 GPUs, always on). quota // 8 - 1 machine = 1 (== the one it needs) at 16 GPUs, 0 at 15
    (one GPU short of a machine, and so of the machine it needs): train's machine could not be its own."""
    def fleet(max_gpus: int) -> Inventory:
        return cash_inventory(
            [cloud("aws", "EU", rented("p5", "H100", "p5.48xlarge", max_gpus, 4.0))],
            [work("api", types=["H100"], count=8, kind="realtime_inference", hours=730),
             work("svc", types=["H100"], count=8, kind="realtime_inference", hours=730),
             work("train", types=["H100"], count=8, kind="training", hours=100)])

    planned = plan(fleet(16))  # api and svc on a machine each
    assert sorted((pl.workload, pl.replicas) for pl in planned.placements) == [("api", 1), ("svc", 1)]
    inventory = fleet(quota)
    found = _priority(inventory, _one_replica_out(inventory, planned, "p5", 8))
    if flagged:
        assert found == ["tier priority: svc (fixed) has a replica unplaced while train (burst) holds 8 GPUs in p5, "
                         "where it fits"]
    else:
        assert found == []
