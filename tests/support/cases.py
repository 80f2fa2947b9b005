"""Small inventories built in code, for the hand-computed cases of the planner, the checker and pricing:
sites, pools and workloads as the format writes them, and the plan's placements by pool."""

from __future__ import annotations

from typing import Any

from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Placement, Plan


def onprem(name: str, jurisdiction: str = "EU", *pools: dict[str, Any], domain: str | None = None,
           egress: float = 0.0, latency: int = 10, kind: str = "onprem") -> dict[str, Any]:
    site = {"name": name, "kind": kind, "jurisdiction": jurisdiction, "egress_usd_per_gb": egress,
            "latency_ms": {"users": latency}, "pools": list(pools)}
    if domain:
        site["failure_domain"] = domain
    return site


def cloud(name: str, jurisdiction: str, *pools: dict[str, Any], egress: float = 0.0, latency: int = 10) -> dict[str, Any]:
    return {"name": name, "kind": "cloud", "provider": "aws", "region": "us-east-1", "cluster": "k8s",
            "jurisdiction": jurisdiction, "egress_usd_per_gb": egress, "latency_ms": {"users": latency},
            "pools": list(pools)}


def owned(name: str, gpu: str, gpus: int, price: float) -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "gpus": gpus, "capacity_type": "reserved", "usd_per_gpu_hour": price}


def rented(name: str, gpu: str, instance: str, max_gpus: int, price: float, capacity: str = "on_demand") -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "instance_type": instance, "max_gpus": max_gpus, "capacity_type": capacity,
            "usd_per_gpu_hour": price}


def work(name: str, *, types: list[str], count: int = 1, replicas: int = 1, hours: float = 100,
         kind: str = "training", **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "gpu": {"types": types, "count": count}, "replicas": replicas,
            "hours_per_month": hours, **extra}


def inventory(sites: list[dict[str, Any]], workloads: list[dict[str, Any]], datasets: list[dict[str, Any]] | None = None,
              **policies: Any) -> Inventory:
    """The cases of the revision-1 rules are priced amortized (`cost_model: amortized` keeps that
    behaviour); the cash model has its own cases (cash_inventory, tests/core/pricing/test_cost_model_cases.py)."""
    policies.setdefault("cost_model", "amortized")
    return Inventory.model_validate({"version": 1, "name": "case", "regions": ["users"], "policies": policies,
                                     "sites": sites, "datasets": datasets or [], "workloads": workloads})


def placed(result: Plan) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for p in result.placements:
        out.setdefault(p.demand or p.workload, {})[p.pool] = p.replicas
    return out


def solve(inv: Inventory) -> Plan:
    result = plan(inv)
    assert check_plan(inv, result) == []
    return result


def cash_inventory(sites: list[dict[str, Any]], workloads: list[dict[str, Any]],
                   datasets: list[dict[str, Any]] | None = None, **policies: Any) -> Inventory:
    """An inventory priced by the spec's default cost model (cash)."""
    return Inventory.model_validate({"version": 1, "name": "case", "regions": ["users"], "policies": policies,
                                     "sites": sites, "datasets": datasets or [], "workloads": workloads})


def placements_of(result: Plan, workload: str) -> list[Placement]:
    """The plan's placements of one workload, in the plan's order."""
    return [p for p in result.placements if p.workload == workload]
