"""The stacks of a plan's Google Cloud and Azure pools (revision 4): one stacks/gcp-gpu-pools stack per GCP
site (GKE node pools) and one stacks/azure-gpu-pools stack per Azure site (AKS agent pools).

Their sizes come from the same code path as the EKS node groups' (stackconfig.node_pool: the plan's
machines, the fixed tier's floor, a reserved pool's every machine, the quota as the bound); only the
provider's words differ. AWS sites stay with stackconfig's aws-gpu-pools stacks.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from types import MappingProxyType

from hybridctl.core.deploy.stackconfig import node_pool
from hybridctl.core.deploy.stackdiff import CloudChange
from hybridctl.core.deploy.stackplanned import PlannedPool, planned_machines, planned_pool, tally
from hybridctl.core.deploy.stackvalues import JsonValue
from hybridctl.core.inventory.catalog import Catalog
from hybridctl.core.inventory.models import Inventory, SiteKind
from hybridctl.core.inventory.zones import zone_region
from hybridctl.core.plan.model import Plan

PROJECT_GCP_POOLS = "gcp-gpu-pools"
PROJECT_AZURE_POOLS = "azure-gpu-pools"
OTHER_CLOUDS = ("gcp", "azure")

# The GKE accelerator type of each catalog machine type (what `gcloud compute accelerator-types list` names).
GKE_ACCELERATORS = MappingProxyType({
    "a3-highgpu-8g": "nvidia-h100-80gb", "a3-highgpu-1g": "nvidia-h100-80gb", "a3-megagpu-8g": "nvidia-h100-mega-80gb",
    "a2-ultragpu-8g": "nvidia-a100-80gb", "a2-highgpu-1g": "nvidia-tesla-a100", "a2-highgpu-8g": "nvidia-tesla-a100",
    "g2-standard-4": "nvidia-l4", "g2-standard-48": "nvidia-l4"})
STACK_PROJECTS = MappingProxyType({"gcp": PROJECT_GCP_POOLS, "azure": PROJECT_AZURE_POOLS})


@dataclass(frozen=True)
class CloudPoolsStackConfig:
    """One GCP or Azure site's GPU pools stack: `values()` is its Pulumi configuration (stacks/README.md)."""

    project: str
    inventory_name: str
    site: str
    settings: dict[str, JsonValue]

    @property
    def stack_name(self) -> str:
        return f"{self.inventory_name}-{self.site}"

    def values(self) -> dict[str, JsonValue]:
        return dict(self.settings)


def agent_pool_name(pool: str) -> str:
    """An AKS agent pool name (1 to 12 lower-case letters and digits, a letter first) for an inventory pool:
    its letters and digits, cut to 8, and 4 hex digits of its name's hash, so two long names that share a
    beginning still differ."""
    kept = re.sub(r"[^a-z0-9]", "", pool.lower()).lstrip("0123456789")[:8] or "gpu"
    return f"{kept}{hashlib.sha256(pool.encode()).hexdigest()[:4]}"


def _zone(provider: str, region: str, domain: str | None) -> str | None:
    if zone_region(provider, domain) != region or domain is None:
        return None
    return domain if provider == "gcp" else domain.rsplit("-", 1)[1]  # azure: the zone's number


def _gke_pool(p: PlannedPool, sized: dict[str, JsonValue]) -> dict[str, JsonValue]:
    pool, site = p.pool, p.site
    out: dict[str, JsonValue] = {"name": pool.name, "machineType": pool.instance_type or "",
                                 "accelerator": GKE_ACCELERATORS[pool.instance_type or ""], **sized}
    zone = _zone("gcp", site.region or "", pool.failure_domain)
    if zone:
        out["zone"] = zone
    if pool.reservation_id is not None and pool.capacity_type.value == "reserved":
        out["reservation"] = pool.reservation_id
    return out


def _aks_pool(p: PlannedPool, sized: dict[str, JsonValue]) -> dict[str, JsonValue]:
    pool, site = p.pool, p.site
    out: dict[str, JsonValue] = {"name": pool.name, "agentPoolName": agent_pool_name(pool.name),
                                 "vmSize": pool.instance_type or "", **sized}
    zone = _zone("azure", site.region or "", pool.failure_domain)
    if zone:
        out["zone"] = zone
    if pool.reservation_id is not None and pool.capacity_type.value == "reserved":
        out["capacityReservationGroup"] = pool.reservation_id
    return out


def other_cloud_stacks(inventory: Inventory, plan: Plan, digest: str, cat: Catalog) -> tuple[CloudPoolsStackConfig, ...]:
    """The GCP and Azure GPU pools stacks of `plan`, one per site the plan places GPUs at, in inventory order."""
    counted = tally(plan.placements)
    found = (planned_pool(site, pool, counted.get((site.name, pool.name)), cat) for site in inventory.sites
             if site.kind is SiteKind.CLOUD and site.provider in OTHER_CLOUDS for pool in site.pools)
    planned = [p for p in found if p is not None]
    machines = planned_machines(plan)
    known = {w.name: w for w in inventory.workloads}
    dataset_gb = {d.name: d.size_gb for d in inventory.datasets}
    by_site: dict[str, list[PlannedPool]] = {}
    for p in planned:
        by_site.setdefault(p.site.name, []).append(p)
    stacks = []
    for site_name, pools in by_site.items():
        site = pools[0].site
        rows: list[JsonValue] = []
        for p in pools:
            shape = node_pool(p, known, dataset_gb, cat, machines.get((site.name, p.pool.name)))
            sized: dict[str, JsonValue] = {
                "capacityType": shape.capacity_type, "gpuType": shape.gpu_type, "gpusPerNode": shape.gpus_per_node,
                "minSize": shape.min_size, "desiredSize": shape.desired_size, "maxSize": shape.max_size}
            rows.append(_gke_pool(p, sized) if site.provider == "gcp" else _aks_pool(p, sized))
        common: dict[str, JsonValue] = {"site": site_name, "clusterName": site.cluster or "",
                                        "inventoryName": inventory.name, "planDigest": digest}
        if site.provider == "gcp":
            settings: dict[str, JsonValue] = {**common, "gcp:region": site.region or "", "nodePools": rows}
        else:
            # the AKS cluster's resource group: the one named like the cluster (stacks/README.md)
            settings = {**common, "azure-native:location": site.region or "", "resourceGroup": site.cluster or "",
                        "agentPools": rows}
        stacks.append(CloudPoolsStackConfig(STACK_PROJECTS[site.provider or ""], inventory.name,
                                            site_name, settings))
    return tuple(stacks)


# What replaces a GKE node pool or an AKS agent pool when it changes (the provider recreates the pool, so
# its machines go); sizes change in place.
_REPLACED_BY = ("machineType", "vmSize", "accelerator", "capacityType", "zone", "reservation",
                "capacityReservationGroup", "gpusPerNode")
_SIZES = ("minSize", "desiredSize", "maxSize")


def _pools(stack: CloudPoolsStackConfig | None) -> dict[str, dict[str, JsonValue]]:
    if stack is None:
        return {}
    rows = stack.settings.get("nodePools", stack.settings.get("agentPools", []))
    return {str(r["name"]): r for r in rows if isinstance(r, dict)} if isinstance(rows, list) else {}


def _sizes(row: dict[str, JsonValue]) -> str:
    return "/".join(str(row.get(k)) for k in _SIZES)


def diff_other_cloud_stacks(before: tuple[CloudPoolsStackConfig, ...] | None,
                            after: tuple[CloudPoolsStackConfig, ...]) -> tuple[CloudChange, ...]:
    """The config diff of the GCP and Azure stacks, as stackdiff.diff_stack_configs words the EKS ones:
    a stack or pool created or deleted, a pool resized (min/desired/max), or replaced."""
    old = {s.stack_name: s for s in before or ()}
    new = {s.stack_name: s for s in after}
    changes: list[CloudChange] = []
    for stack in sorted(old.keys() | new.keys()):
        a, b = old.get(stack), new.get(stack)
        project = (b or a).project  # type: ignore[union-attr]
        pa, pb = _pools(a), _pools(b)
        if a is None or b is None:
            changes.append(CloudChange(project, stack, "stack", stack, "create" if a is None else "delete",
                                       removes_machines=b is None and any(r.get("desiredSize") for r in pa.values())))
        for name in sorted(pa.keys() | pb.keys()):
            ra, rb = pa.get(name), pb.get(name)
            if ra is None and rb is not None:
                changes.append(CloudChange(project, stack, "node-group", name, "create",
                                           f"{rb.get('machineType', rb.get('vmSize'))} min {rb.get('minSize')}, "
                                           f"desired {rb.get('desiredSize')}, max {rb.get('maxSize')}"))
            elif rb is None and ra is not None:
                changes.append(CloudChange(project, stack, "node-group", name, "delete",
                                           removes_machines=bool(ra.get("desiredSize"))))
            elif ra is not None and rb is not None:
                replaced = [k for k in _REPLACED_BY if ra.get(k) != rb.get(k)]
                if replaced:
                    changes.append(CloudChange(project, stack, "node-group", name, "replace",
                                               f"{', '.join(replaced)} changed: the provider recreates the pool",
                                               removes_machines=bool(ra.get("desiredSize"))))
                elif _sizes(ra) != _sizes(rb):
                    changes.append(CloudChange(project, stack, "node-group", name, "resize",
                                               f"min/desired/max {_sizes(ra)} → {_sizes(rb)}"))
    return tuple(changes)
