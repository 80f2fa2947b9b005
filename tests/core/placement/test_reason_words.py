"""Words that are true: each reason is held against the plan it explains (the pools' GPUs, machines and
holders as the plan records them), so a reason that says "full" of a pool with room fails here."""

from __future__ import annotations

from typing import Any

import yaml
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan


def load(sites: list[dict[str, Any]], workloads: list[dict[str, Any]]) -> Inventory:
    document = {"version": 1, "name": "words", "regions": ["eu-users"], "policies": {"cost_model": "amortized"},
                "sites": sites, "datasets": [], "workloads": workloads}
    return load_sources([Source("words.yaml", yaml.safe_dump(document, sort_keys=False))]).inventory


def onprem(pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "dc-a", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.01,
            "latency_ms": {"eu-users": 10}, "pools": pools}


def cloud(pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": "aws", "kind": "cloud", "provider": "aws", "region": "us-east-1", "cluster": "k8s-aws",
            "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20}, "pools": pools}


def owned(name: str, gpu: str, gpus: int, per_node: int) -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "gpus": gpus, "gpus_per_node": per_node, "capacity_type": "reserved",
            "usd_per_gpu_hour": 1.0}


def rented(name: str, gpu: str, instance: str, max_gpus: int, usd: float) -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "instance_type": instance, "max_gpus": max_gpus, "capacity_type": "on_demand",
            "usd_per_gpu_hour": usd}


def realtime(name: str, count: int, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": "realtime_inference", "gpu": {"types": ["L40S"], "count": count},
            "replicas": replicas, **extra}


def reason_of(result: Plan, workload: str) -> str:
    [placement] = [p for p in result.placements if p.workload == workload]
    return placement.reason


def pool_of(result: Plan, name: str):  # type: ignore[no-untyped-def]
    return next(p for p in result.pools if p.pool == name)


def holders(result: Plan, pool: str) -> dict[str, int]:
    found: dict[str, int] = {}
    for p in result.placements:
        if p.pool == pool:
            found[p.workload] = found.get(p.workload, 0) + p.gpus
    return found


def fleet(small_replicas: int) -> Inventory:
    """a-l40s: 8 owned L40S ($1) in machines of 4, `small` (2 GPUs a replica) pinned there; `big` (4 GPUs)
    may use it or the dearer cloud pool."""
    return load([onprem([owned("a-l40s", "L40S", 8, 4)]), cloud([rented("aws-l40s", "L40S", "g6e.12xlarge", 16, 2.0)])],
                [realtime("small", 2, small_replicas, sites=["dc-a"]), realtime("big", 4)])


class TestWhyNotTheCheaperPool:
    def test_room_too_little_is_not_full(self) -> None:
        # 3 replicas of small hold 6 of the 8 GPUs: 2 are free, too few for a 4-GPU replica
        result = plan(fleet(3))
        pool = pool_of(result, "a-l40s")
        free = pool.capacity_gpus - pool.used_gpus
        assert (free, holders(result, "a-l40s")) == (2, {"small": 6})  # the plan the words are held against
        assert reason_of(result, "big") == (
            f"$2.00/GPU-h; a-l40s has {free} of its {pool.capacity_gpus} GPUs free, one replica needs 4; "
            f"the {pool.used_gpus} others are held by small (6)")
        assert "full" not in reason_of(result, "big")

    def test_a_full_pool_is_named_with_who_holds_it(self) -> None:
        result = plan(fleet(4))
        pool = pool_of(result, "a-l40s")
        assert pool.used_gpus == pool.capacity_gpus == 8 and holders(result, "a-l40s") == {"small": 8}
        assert reason_of(result, "big") == "$2.00/GPU-h; a-l40s is full: its 8 GPUs are held by small (8)"

    def test_a_pool_too_small_for_one_replica_even_empty(self) -> None:
        inventory = load([onprem([owned("a-l40s", "L40S", 4, 4)]),
                          cloud([rented("aws-l40s", "L40S", "g6e.12xlarge", 16, 2.0)])],
                         [{"name": "big", "type": "training", "hours_per_month": 100,
                           "gpu": {"types": ["L40S"], "count": 8, "multi_node": True}}])
        result = plan(inventory)
        assert pool_of(result, "a-l40s").used_gpus == 0
        assert reason_of(result, "big") == "$2.00/GPU-h; a-l40s is too small: 4 GPUs in all, one replica needs 8"

    def test_a_pay_per_use_quota_too_small_counts_machines(self) -> None:
        inventory = load([cloud([rented("cheap", "L40S", "g6e.12xlarge", 4, 1.0),
                                 rented("dear", "L40S", "g6e.12xlarge", 16, 3.0)])],
                         [{"name": "big", "type": "training", "hours_per_month": 100,
                           "gpu": {"types": ["L40S"], "count": 8, "multi_node": True}}])
        result = plan(inventory)
        assert pool_of(result, "cheap").machines == 0
        assert reason_of(result, "big") == ("$3.00/GPU-h; cheap is too small: a quota of 1 machine of 4 GPUs, "
                                            "one replica needs 2")
