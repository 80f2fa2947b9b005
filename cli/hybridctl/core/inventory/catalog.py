"""The GPU and instance catalog shipped with the tool (data/catalog.json)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources


@dataclass(frozen=True)
class GpuType:
    name: str
    memory_gb: int
    product: str  # what nvidia-smi reports, for discovery


@dataclass(frozen=True)
class InstanceType:
    name: str
    provider: str
    gpu: str
    gpus_per_node: int
    usd_per_hour: float
    price_read_on: date  # per GPU-hour: pricing.rates.catalog_usd_per_gpu_hour
    local_nvme_gb: int = 0  # instance-store NVMe, all drives together (p5.48xlarge: 8 x 3,840 GB)
    price_region: str = ""  # the region whose list price usd_per_hour is (on-demand prices differ by region)


@dataclass(frozen=True)
class Catalog:
    gpus: dict[str, GpuType]
    instances: dict[str, InstanceType]


@cache
def catalog() -> Catalog:
    raw = json.loads(resources.files("hybridctl").joinpath("data/catalog.json").read_text(encoding="utf-8"))
    gpus = {name: GpuType(name, int(v["memory_gb"]), str(v["product"])) for name, v in raw["gpus"].items()}
    instances = {
        name: InstanceType(name, str(v["provider"]), str(v["gpu"]), int(v["gpus_per_node"]),
                           float(v["usd_per_hour"]), date.fromisoformat(str(v["price_read_on"])),
                           int(v.get("local_nvme_gb", 0)), price_region=str(v["price_region"]))
        for name, v in raw["instances"].items()
    }
    return Catalog(gpus, instances)
