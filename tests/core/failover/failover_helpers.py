"""Small inventories for failover tests, written as the user would write them and loaded for real."""

from __future__ import annotations

from typing import Any

import yaml
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory


def load(document: dict[str, Any]) -> Inventory:
    """Validate through the real loader, so every test inventory is one `hybridctl validate` accepts."""
    return load_sources([Source("test-inventory.yaml", yaml.safe_dump(document, sort_keys=False))]).inventory


def onprem(name: str, pools: list[dict[str, Any]], *, kind: str = "onprem", provision: float | None = None,
           uplink: float | None = None, hosts: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    site: dict[str, Any] = {"name": name, "kind": kind, "jurisdiction": "EU", "egress_usd_per_gb": 0.01,
                            "latency_ms": {"eu-users": 10}, "pools": pools, **extra}
    if provision is not None:
        site["provision_minutes"] = provision
    if uplink is not None:
        site["uplink_mbps"] = uplink
    if hosts is not None:
        site["hosts"] = hosts
    return site


def cloud(name: str, pools: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {"name": name, "kind": "cloud", "provider": "aws", "region": "eu-central-1", "cluster": f"k8s-{name}",
            "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20}, "pools": pools, **extra}


def pool(name: str, gpu: str, gpus: int, usd: float, capacity_type: str = "reserved") -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "gpus": gpus, "capacity_type": capacity_type, "usd_per_gpu_hour": usd}


def cloud_pool(name: str, gpu: str, instance: str, max_gpus: int, usd: float, capacity_type: str) -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "instance_type": instance, "max_gpus": max_gpus, "capacity_type": capacity_type,
            "usd_per_gpu_hour": usd}


def workload(name: str, kind: str, gpu: list[str], *, count: int = 1, replicas: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "gpu": {"types": gpu, "count": count}, "replicas": replicas, **extra}


def inventory(sites: list[dict[str, Any]], workloads: list[dict[str, Any]], datasets: list[dict[str, Any]] | None = None,
              **policies: Any) -> Inventory:
    # these cases price failover moves amortized, as they were written (revision 1); the cash
    # model has its own cases in tests/core/pricing/test_cost_model_cases.py
    policies.setdefault("cost_model", "amortized")
    return load({"version": 1, "name": "drill-test", "regions": ["eu-users"], "policies": policies, "sites": sites,
                 "datasets": datasets or [], "workloads": workloads})


def by_pool(placements: Any, workload: str) -> dict[str, int]:
    """workload -> {pool: replicas} from a plan's placements."""
    placed: dict[str, int] = {}
    for p in placements:
        if p.workload == workload:
            placed[p.pool] = placed.get(p.pool, 0) + p.replicas
    return placed


def two_sites_inventory() -> Inventory:
    """Two on-prem sites: checkout (2 replicas, a T4 fallback), search and a batch job, all wanting dc-a's L4s."""
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=5),
         onprem("dc-b", [pool("b-l4", "L4", 1, 2.0), pool("b-t4", "T4", 2, 0.4)], provision=12)],
        [workload("checkout", "realtime_inference", ["L4"], replicas=2, rto_minutes=15,
                  fallback={"gpu": {"types": ["T4"], "count": 1}, "replicas": 1}),
         workload("search", "realtime_inference", ["L4"], rto_minutes=10),
         workload("reports", "batch_inference", ["L4"], hours_per_month=40)])
