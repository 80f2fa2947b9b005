"""The GPU and instance catalog shipped with the tool: GPU types and AWS instance types known to hybridctl.

List prices are on-demand Linux prices in the region (price_region) and as read on the date (price_read_on)
beside each; an inventory may override any price with usd_per_gpu_hour. The catalog is Python data, so that
the core reads no file (tests/core/test_core_does_no_io.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from functools import cache


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


GPU_TYPES: tuple[GpuType, ...] = (
    GpuType("H100", 80, "NVIDIA H100 80GB HBM3"),
    GpuType("H200", 141, "NVIDIA H200"),
    GpuType("A100-40GB", 40, "NVIDIA A100-SXM4-40GB"),
    GpuType("A100-80GB", 80, "NVIDIA A100-SXM4-80GB"),
    GpuType("L40S", 48, "NVIDIA L40S"),
    GpuType("L4", 24, "NVIDIA L4"),
    GpuType("A10G", 24, "NVIDIA A10G"),
    GpuType("T4", 16, "Tesla T4"),
)
INSTANCE_TYPES: tuple[InstanceType, ...] = (
    InstanceType("p5.48xlarge", "aws", "H100", 8, 55.04, date(2025, 6, 5), local_nvme_gb=30720,
                 price_region="us-east-1"),
    InstanceType("p5e.48xlarge", "aws", "H200", 8, 63.6, date(2025, 6, 5), local_nvme_gb=30720,
                 price_region="us-east-1"),
    InstanceType("p4d.24xlarge", "aws", "A100-40GB", 8, 21.96, date(2025, 6, 5), local_nvme_gb=8000,
                 price_region="us-east-1"),
    InstanceType("p4de.24xlarge", "aws", "A100-80GB", 8, 27.45, date(2025, 6, 5), local_nvme_gb=8000,
                 price_region="us-east-1"),
    InstanceType("g6.xlarge", "aws", "L4", 1, 0.805, date(2025, 3, 1), local_nvme_gb=250,
                 price_region="us-east-1"),
    InstanceType("g6.12xlarge", "aws", "L4", 4, 4.602, date(2025, 3, 1), local_nvme_gb=3760,
                 price_region="us-east-1"),
    InstanceType("g6e.xlarge", "aws", "L40S", 1, 1.861, date(2025, 3, 1), local_nvme_gb=250,
                 price_region="us-east-1"),
    InstanceType("g6e.12xlarge", "aws", "L40S", 4, 10.493, date(2025, 3, 1), local_nvme_gb=3800,
                 price_region="us-east-1"),
    InstanceType("g5.xlarge", "aws", "A10G", 1, 1.006, date(2025, 3, 1), local_nvme_gb=250,
                 price_region="us-east-1"),
    InstanceType("g5.12xlarge", "aws", "A10G", 4, 5.672, date(2025, 3, 1), local_nvme_gb=3800,
                 price_region="us-east-1"),
    InstanceType("g4dn.xlarge", "aws", "T4", 1, 0.526, date(2025, 3, 1), local_nvme_gb=125,
                 price_region="us-east-1"),
    InstanceType("g4dn.12xlarge", "aws", "T4", 4, 3.912, date(2025, 3, 1), local_nvme_gb=900,
                 price_region="us-east-1"),
    InstanceType("g6.2xlarge", "aws", "L4", 1, 0.978, date(2025, 3, 1), local_nvme_gb=450,
                 price_region="us-east-1"),
    InstanceType("g6.4xlarge", "aws", "L4", 1, 1.323, date(2025, 3, 1), local_nvme_gb=600,
                 price_region="us-east-1"),
    InstanceType("g6.24xlarge", "aws", "L4", 4, 6.675, date(2025, 3, 1), local_nvme_gb=3760,
                 price_region="us-east-1"),
    InstanceType("g6e.2xlarge", "aws", "L40S", 1, 2.242, date(2025, 3, 1), local_nvme_gb=450,
                 price_region="us-east-1"),
    InstanceType("g6e.24xlarge", "aws", "L40S", 4, 15.066, date(2025, 3, 1), local_nvme_gb=3800,
                 price_region="us-east-1"),
    InstanceType("g5.2xlarge", "aws", "A10G", 1, 1.212, date(2025, 3, 1), local_nvme_gb=450,
                 price_region="us-east-1"),
    InstanceType("g5.24xlarge", "aws", "A10G", 4, 8.144, date(2025, 3, 1), local_nvme_gb=3800,
                 price_region="us-east-1"),
    InstanceType("g4dn.2xlarge", "aws", "T4", 1, 0.752, date(2025, 3, 1), local_nvme_gb=225,
                 price_region="us-east-1"),
)


@cache
def catalog() -> Catalog:
    return Catalog({g.name: g for g in GPU_TYPES}, {i.name: i for i in INSTANCE_TYPES})
