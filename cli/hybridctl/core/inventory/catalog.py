"""The GPU and instance catalog shipped with the tool: GPU types and the AWS instance types, Google Cloud
machine types and Azure VM sizes known to hybridctl.

List prices are on-demand Linux prices per region, each with the date it was read (ListPrice); an inventory
may override any price with usd_per_gpu_hour. A pool in a region the catalog lists no price for is priced
from the nearest listed region of its provider (InstanceType.price_in), and `validate` says so. The catalog
is Python data, so that the core reads no file (tests/core/test_core_does_no_io.py).

Where the prices come from: the AWS us-east-1 prices were read from AWS's price list on the dates beside
them; every price read on 2026-12-02 is from the SkyPilot catalog (Apache-2.0, github.com/skypilot-org/
skypilot-catalog; NOTICE): catalogs/v7/aws/vms.csv at 001367d22a00, catalogs/v7/gcp/vms.csv at 017e2502fb63
(a Google Cloud machine's price is its machine row plus its accelerators' row, as that file prices them),
catalogs/v6/azure/vms.csv at 098741e70562.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from datetime import date
from functools import cache

# The date the SkyPilot catalog's prices were read (module docstring).
SKYPILOT_READ_ON = date(2026, 12, 2)


@dataclass(frozen=True)
class GpuType:
    name: str
    memory_gb: int
    product: str  # what nvidia-smi reports, for discovery


@dataclass(frozen=True)
class ListPrice:
    """An on-demand list price of a whole machine in one region, and the date it was read."""

    region: str
    usd_per_hour: float
    read_on: date


@dataclass(frozen=True)
class InstanceType:
    """An AWS instance type, a Google Cloud machine type or an Azure VM size. `prices[0]` is its home
    price: the one used where no region nearer to the pool's has one."""

    name: str
    provider: str  # aws | gcp | azure
    gpu: str
    gpus_per_node: int
    prices: tuple[ListPrice, ...]
    local_nvme_gb: int = 0  # local NVMe / SSD, all drives together (p5.48xlarge: 8 x 3,840 GB)

    @property
    def usd_per_hour(self) -> float:
        """The home region's list price (per GPU-hour: pricing.rates.catalog_usd_per_gpu_hour)."""
        return self.prices[0].usd_per_hour

    @property
    def price_read_on(self) -> date:
        return self.prices[0].read_on

    @property
    def price_region(self) -> str:
        return self.prices[0].region

    @property
    def regions(self) -> tuple[str, ...]:
        return tuple(p.region for p in self.prices)

    def price_in(self, region: str | None) -> ListPrice:
        """The list price in `region`, else the nearest listed region's (same geography first, then the
        most alike name), else the home price."""
        by_region = {p.region: p for p in self.prices}
        if region is None:
            return self.prices[0]
        if region in by_region:
            return by_region[region]
        near = [p.region for p in self.prices if geography(p.region) == geography(region)]
        if not near:
            return self.prices[0]
        best = max(near, key=lambda r: (difflib.SequenceMatcher(None, region, r).ratio(), -near.index(r)))
        return by_region[best]


# A region's part of the world, from its name, for "the nearest listed region": aws us-west-2 / gcp
# us-central1 / azure eastus are "us"; eu-west-1 / europe-west4 / westeurope are "eu".
_GEOGRAPHY_WORDS = (
    ("eu", ("europe", "eu-", "uk", "germany", "france", "sweden", "norway", "switzerland", "poland", "italy",
            "spain")),
    ("ap", ("asia", "ap-", "japan", "korea", "india", "australia")),
    ("sa", ("southamerica", "sa-", "brazil")),
    ("me", ("me-", "uae", "qatar", "israel")),
    ("af", ("af-", "africa", "southafrica")),
    ("ca", ("ca-", "canada", "northamerica")),
)
_US = re.compile(r"^us|us\d*$")  # us-east-1, us-central1, eastus, westus2


def geography(region: str) -> str:
    for name, words in _GEOGRAPHY_WORDS:
        if any(region.startswith(w) or (len(w) > 3 and w in region) for w in words):
            return name
    return "us" if _US.search(region) else region


def _one(region: str, usd_per_hour: float, read_on: date) -> tuple[ListPrice, ...]:
    return (ListPrice(region, usd_per_hour, read_on),)


def _read(*prices: tuple[str, float]) -> tuple[ListPrice, ...]:
    """Prices read from the SkyPilot catalog on SKYPILOT_READ_ON, the first the home price."""
    return tuple(ListPrice(region, usd, SKYPILOT_READ_ON) for region, usd in prices)


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
AWS_INSTANCE_TYPES: tuple[InstanceType, ...] = (
    InstanceType("p5.48xlarge", "aws", "H100", 8, _one("us-east-1", 55.04, date(2025, 6, 5)),
                 local_nvme_gb=30720),
    InstanceType("p5e.48xlarge", "aws", "H200", 8, _one("us-east-1", 63.6, date(2025, 6, 5)),
                 local_nvme_gb=30720),
    InstanceType("p4d.24xlarge", "aws", "A100-40GB", 8, _one("us-east-1", 21.96, date(2025, 6, 5)),
                 local_nvme_gb=8000),
    InstanceType("p4de.24xlarge", "aws", "A100-80GB", 8, _one("us-east-1", 27.45, date(2025, 6, 5)),
                 local_nvme_gb=8000),
    InstanceType("g6.xlarge", "aws", "L4", 1, _one("us-east-1", 0.805, date(2025, 3, 1)),
                 local_nvme_gb=250),
    InstanceType("g6.12xlarge", "aws", "L4", 4, _one("us-east-1", 4.602, date(2025, 3, 1)),
                 local_nvme_gb=3760),
    InstanceType("g6e.xlarge", "aws", "L40S", 1, _one("us-east-1", 1.861, date(2025, 3, 1)),
                 local_nvme_gb=250),
    InstanceType("g6e.12xlarge", "aws", "L40S", 4, _one("us-east-1", 10.493, date(2025, 3, 1)),
                 local_nvme_gb=3800),
    InstanceType("g5.xlarge", "aws", "A10G", 1, _one("us-east-1", 1.006, date(2025, 3, 1)),
                 local_nvme_gb=250),
    InstanceType("g5.12xlarge", "aws", "A10G", 4, (ListPrice("us-east-1", 5.672, date(2025, 3, 1)),
                 ListPrice("eu-west-1", 6.33167, SKYPILOT_READ_ON),
                 ListPrice("eu-central-1", 7.09282, SKYPILOT_READ_ON)),
                 local_nvme_gb=3800),
    InstanceType("g4dn.xlarge", "aws", "T4", 1, (ListPrice("us-east-1", 0.526, date(2025, 3, 1)),
                 ListPrice("us-west-2", 0.526, SKYPILOT_READ_ON),
                 ListPrice("eu-west-1", 0.587, SKYPILOT_READ_ON),
                 ListPrice("eu-central-1", 0.658, SKYPILOT_READ_ON)),
                 local_nvme_gb=125),
    InstanceType("g4dn.12xlarge", "aws", "T4", 4, _one("us-east-1", 3.912, date(2025, 3, 1)),
                 local_nvme_gb=900),
    InstanceType("g6.2xlarge", "aws", "L4", 1, _one("us-east-1", 0.978, date(2025, 3, 1)),
                 local_nvme_gb=450),
    InstanceType("g6.4xlarge", "aws", "L4", 1, _one("us-east-1", 1.323, date(2025, 3, 1)),
                 local_nvme_gb=600),
    InstanceType("g6.24xlarge", "aws", "L4", 4, _one("us-east-1", 6.675, date(2025, 3, 1)),
                 local_nvme_gb=3760),
    InstanceType("g6e.2xlarge", "aws", "L40S", 1, _one("us-east-1", 2.242, date(2025, 3, 1)),
                 local_nvme_gb=450),
    InstanceType("g6e.24xlarge", "aws", "L40S", 4, _one("us-east-1", 15.066, date(2025, 3, 1)),
                 local_nvme_gb=3800),
    InstanceType("g5.2xlarge", "aws", "A10G", 1, _one("us-east-1", 1.212, date(2025, 3, 1)),
                 local_nvme_gb=450),
    InstanceType("g5.24xlarge", "aws", "A10G", 4, _one("us-east-1", 8.144, date(2025, 3, 1)),
                 local_nvme_gb=3800),
    InstanceType("g4dn.2xlarge", "aws", "T4", 1, _one("us-east-1", 0.752, date(2025, 3, 1)),
                 local_nvme_gb=225),
)


# Google Cloud machine types: the machine's row plus its accelerators' row of the SkyPilot GCP file, per region
# (g2-standard-48's four L4 at four times the file's one-L4 row, as its two-L4 row is twice that).
GCP_MACHINE_TYPES: tuple[InstanceType, ...] = (
    InstanceType("a3-highgpu-8g", "gcp", "H100", 8, _read(("us-central1", 43.06615), ("europe-west4", 111.81719),
                                                          ("us-east4", 87.83247)), local_nvme_gb=6000),
    InstanceType("a3-highgpu-1g", "gcp", "H100", 1, _read(("us-central1", 5.38327), ("europe-west4", 13.97715),
                                                          ("europe-west1", 12.08904), ("us-east4", 10.97906)),
                 local_nvme_gb=750),
    InstanceType("a3-megagpu-8g", "gcp", "H100", 8, _read(("us-central1", 92.21427), ("europe-west4", 117.51354),
                                                          ("europe-west1", 45.80796), ("us-east4", 92.2143)),
                 local_nvme_gb=6000),
    InstanceType("a2-ultragpu-8g", "gcp", "A100-80GB", 8, _read(("us-central1", 23.56656),
                                                                ("europe-west4", 25.94681), ("us-east4", 26.54162)),
                 local_nvme_gb=3000),
    InstanceType("a2-highgpu-1g", "gcp", "A100-40GB", 1, _read(("us-central1", 3.67339), ("europe-west4", 2.42771),
                                                               ("us-east1", 3.67339))),
    InstanceType("a2-highgpu-8g", "gcp", "A100-40GB", 8, _read(("us-central1", 29.38708), ("europe-west4", 19.4217))),
    InstanceType("g2-standard-4", "gcp", "L4", 1, _read(("us-central1", 0.70683), ("europe-west4", 0.74233),
                                                        ("europe-west1", 0.77829), ("us-east4", 0.70452))),
    InstanceType("g2-standard-48", "gcp", "L4", 4, _read(("us-central1", 4.00166), ("europe-west4", 4.20359))),
)
# Azure VM sizes, from the SkyPilot Azure file (US regions only: a pool in Europe is priced from the nearest
# of them, and validate says so). Standard_ND96isr_H100_v5 carries 8 H100 (that file says 12).
AZURE_VM_SIZES: tuple[InstanceType, ...] = (
    InstanceType("Standard_ND96isr_H100_v5", "azure", "H100", 8, _read(("eastus", 98.32), ("eastus2", 98.32),
                                                                       ("westus", 127.816)), local_nvme_gb=28000),
    InstanceType("Standard_NC40ads_H100_v5", "azure", "H100", 1, _read(("eastus", 6.98), ("eastus2", 6.98),
                                                                       ("southcentralus", 8.38), ("westus3", 6.98)),
                 local_nvme_gb=3576),
    InstanceType("Standard_ND96amsr_A100_v4", "azure", "A100-80GB", 8, _read(("eastus", 32.77), ("eastus2", 32.77),
                                                                             ("southcentralus", 39.324)),
                 local_nvme_gb=6400),
    InstanceType("Standard_NC24ads_A100_v4", "azure", "A100-80GB", 1, _read(
        ("eastus", 3.673), ("eastus2", 3.673), ("centralus", 4.15), ("southcentralus", 4.408), ("westus", 4.775),
        ("westus2", 3.673), ("westus3", 3.673)), local_nvme_gb=960),
    InstanceType("Standard_NC4as_T4_v3", "azure", "T4", 1, _read(
        ("eastus", 0.526), ("eastus2", 0.526), ("centralus", 0.594), ("northcentralus", 0.526),
        ("southcentralus", 0.631), ("westus", 0.631), ("westus2", 0.526), ("westus3", 0.526)), local_nvme_gb=180),
)
INSTANCE_TYPES: tuple[InstanceType, ...] = (*AWS_INSTANCE_TYPES, *GCP_MACHINE_TYPES, *AZURE_VM_SIZES)


@cache
def catalog() -> Catalog:
    return Catalog({g.name: g for g in GPU_TYPES}, {i.name: i for i in INSTANCE_TYPES})
