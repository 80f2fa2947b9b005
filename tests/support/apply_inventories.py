"""Inventories the apply tests share, as documents and models (tests/core, tests/e2e)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hybridctl.core.inventory.models import Inventory


def lab_document(**changes: Any) -> dict[str, Any]:
    raw: dict[str, Any] = {
        "version": 1, "name": "lab", "regions": ["eu-users"],
        "sites": [
            {"name": "dc-fra", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 10}, "failure_domain": "fra",
             "hosts": [{"name": "fra-01", "address": "10.0.0.1", "pool": "fra-h100"},
                       {"name": "fra-02", "address": "10.0.0.2", "pool": "fra-h100", "user": "ops", "port": 2222},
                       {"name": "fra-03", "address": "10.0.0.3", "pool": "fra-h100"},
                       {"name": "fra-l4-01", "address": "10.0.1.1", "pool": "fra-l4"}],
             "pools": [{"name": "fra-h100", "gpu": "H100", "gpus": 8, "capacity_type": "reserved", "usd_per_gpu_hour": 1.0},
                       {"name": "fra-l4", "gpu": "L4", "gpus": 2, "capacity_type": "on_demand", "usd_per_gpu_hour": 0.3}]},
            {"name": "edge-17", "kind": "edge", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 3},
             "hosts": [{"name": "edge-17-a", "address": "192.168.17.10", "pool": "edge-l4"}],
             "pools": [{"name": "edge-l4", "gpu": "L4", "gpus": 1, "capacity_type": "reserved", "usd_per_gpu_hour": 0.2}]},
            {"name": "aws-euc1", "kind": "cloud", "provider": "aws", "region": "eu-central-1", "cluster": "ml-euc1",
             "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
             "pools": [{"name": "euc1-p5", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                        "capacity_type": "on_demand"}]},
        ],
        "workloads": [
            {"name": "chat", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1}, "replicas": 2,
             "model_gb": 14.5},
            {"name": "shop-vision", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
             "sites": ["edge-17"], "model_gb": 2},
            {"name": "train", "type": "training", "gpu": {"types": ["H100"], "count": 8}, "replicas": 2,
             "hours_per_month": 200},
        ],
    }
    raw.update(changes)
    return raw


def lab_inventory(**changes: Any) -> Inventory:
    return Inventory.model_validate(lab_document(**changes))


def hybrid_document(onprem_hosts: Sequence[Mapping[str, Any]] = (), edge_hosts: Sequence[Mapping[str, Any]] = (),
                    *, name: str = "loop", gpus_per_onprem_host: int = 4) -> dict[str, Any]:
    """An on-prem site, an edge site and a cloud region; hosts are {name, address} (e.g. test hosts).

    Placement (deterministic): `chat` fills the on-prem pool, `shop-vision` the edge pool, and
    `train` bursts into the cloud, so every kind of step has something to do.
    """
    onprem_gpus = max(len(onprem_hosts), 1) * gpus_per_onprem_host
    return {
        "version": 1, "name": name, "regions": ["eu-users"],
        "sites": [
            {"name": "dc-lab", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 10},
             "hosts": [{"name": h["name"], "address": h["address"], "pool": "lab-h100"} for h in onprem_hosts],
             "pools": [{"name": "lab-h100", "gpu": "H100", "gpus": onprem_gpus, "capacity_type": "reserved",
                        "usd_per_gpu_hour": 1.2}]},
            {"name": "edge-shop", "kind": "edge", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 4},
             "hosts": [{"name": h["name"], "address": h["address"], "pool": "edge-h100"} for h in edge_hosts],
             "pools": [{"name": "edge-h100", "gpu": "H100", "gpus": 1, "capacity_type": "reserved",
                        "usd_per_gpu_hour": 2.0}]},
            {"name": "aws-euc1", "kind": "cloud", "provider": "aws", "region": "eu-central-1", "cluster": "ml-euc1",
             "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 25},
             "pools": [{"name": "euc1-p5", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                        "capacity_type": "on_demand"}]},
        ],
        "workloads": [
            {"name": "chat", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1},
             "replicas": onprem_gpus, "sites": ["dc-lab"], "model_gb": 0.001},
            {"name": "shop-vision", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 1},
             "sites": ["edge-shop"], "model_gb": 0.001},
            {"name": "train", "type": "training", "gpu": {"types": ["H100"], "count": 8}, "replicas": 2,
             "hours_per_month": 200, "sites": ["aws-euc1"]},
        ],
    }
