"""The plan as Pulumi stack configuration, and the cloud changes between two plans.

One `aws-gpu-pools` stack per cloud site with planned pools, one `k8s-queues` stack per
Kubernetes cluster those pools join. The values are exactly what the programs in stacks/
read (schema: stacks/README.md), so `plan` can show the cloud changes without the pulumi CLI
and `apply` hands the same values to the driver: StackSpec(c.project, c.stack_name, c.values()).

Node group sizing: min = the nodes the fixed tier needs (always on), desired = the nodes
fixed + burst need (the planned steady state; an autoscaler may shrink it back to min when
bursts end), max = the pool's quota in whole nodes, never below desired.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import ClassVar

from hybridctl.core.catalog import Catalog, catalog
from hybridctl.core.inventory.models import Inventory, Pool, Site, SiteKind
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.serialize import plan_to_json
from hybridctl.core.tiers import TIER_ORDER, Tier, allowed_capacity_types
from hybridctl.errors import HybridctlError

PROJECT_GPU_POOLS = "aws-gpu-pools"
PROJECT_QUEUES = "k8s-queues"
# Shared with stacks/aws-gpu-pools (node labels) and stacks/k8s-queues (flavor selectors).
LABEL_SITE = "hybridctl.io/site"
LABEL_POOL = "hybridctl.io/pool"
KUBECONFIG_SECRET_SUFFIX = "-kubeconfig"  # MultiKueue worker credentials: a Secret the operator creates

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]


def nodes_for(gpus: int, gpus_per_node: int) -> int:
    return -(-gpus // gpus_per_node)


@dataclass(frozen=True)
class NodePoolConfig:
    name: str
    instance_type: str
    capacity_type: str
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int

    def values(self) -> dict[str, JsonValue]:
        return {
            "name": self.name, "instanceType": self.instance_type, "capacityType": self.capacity_type,
            "gpuType": self.gpu_type, "gpusPerNode": self.gpus_per_node,
            "minSize": self.min_size, "desiredSize": self.desired_size, "maxSize": self.max_size,
        }


@dataclass(frozen=True)
class GpuPoolsStackConfig:
    project: ClassVar[str] = PROJECT_GPU_POOLS
    site: str
    region: str
    cluster_name: str
    inventory_name: str
    plan_digest: str
    node_pools: tuple[NodePoolConfig, ...]

    @property
    def stack_name(self) -> str:
        return f"{self.inventory_name}-{self.site}"

    def values(self) -> dict[str, JsonValue]:
        return {
            "aws:region": self.region, "site": self.site, "clusterName": self.cluster_name,
            "inventoryName": self.inventory_name, "planDigest": self.plan_digest,
            "nodePools": [p.values() for p in self.node_pools],
        }


@dataclass(frozen=True)
class FlavorConfig:
    name: str
    gpu_type: str
    node_labels: tuple[tuple[str, str], ...]


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    gpus: int


@dataclass(frozen=True)
class WorkloadQueue:
    name: str
    tier: str


@dataclass(frozen=True)
class QueuesStackConfig:
    project: ClassVar[str] = PROJECT_QUEUES
    cluster_name: str
    inventory_name: str
    plan_digest: str
    cohort: str
    flavors: tuple[FlavorConfig, ...]
    queues: tuple[tuple[str, tuple[FlavorQuota, ...]], ...]  # tier -> flavors it may use, tried in order
    workloads: tuple[WorkloadQueue, ...]
    multikueue_clusters: tuple[str, ...] = ()  # worker clusters, when this cluster dispatches burst work

    @property
    def stack_name(self) -> str:
        return f"{self.inventory_name}-{self.cluster_name}"

    def quotas(self, tier: str) -> tuple[FlavorQuota, ...]:
        return dict(self.queues).get(tier, ())

    def values(self) -> dict[str, JsonValue]:
        values: dict[str, JsonValue] = {
            "clusterName": self.cluster_name, "inventoryName": self.inventory_name,
            "planDigest": self.plan_digest, "cohort": self.cohort,
            "flavors": [{"name": f.name, "gpuType": f.gpu_type, "nodeLabels": dict(f.node_labels)} for f in self.flavors],
            "queues": {tier: [{"flavor": q.flavor, "gpus": q.gpus} for q in quotas] for tier, quotas in self.queues},
            "workloads": [{"name": w.name, "tier": w.tier} for w in self.workloads],
        }
        if self.multikueue_clusters:
            values["multiKueueClusters"] = [
                {"name": c, "kubeconfigSecret": f"{c}{KUBECONFIG_SECRET_SUFFIX}"} for c in self.multikueue_clusters
            ]
        return values


@dataclass(frozen=True)
class StackConfigs:
    gpu_pools: tuple[GpuPoolsStackConfig, ...]
    queues: tuple[QueuesStackConfig, ...]


@dataclass(frozen=True)
class _PlannedPool:
    site: Site
    pool: Pool
    gpus_by_tier: dict[str, int]
    usd_per_gpu_hour: float


def _planned_pools(inventory: Inventory, plan: Plan, cat: Catalog) -> list[_PlannedPool]:
    """Cloud pools the plan uses, in inventory order, with their GPUs per tier."""
    gpus: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for placement in plan.placements:
        gpus[(placement.site, placement.pool)][placement.tier] += placement.gpus
    planned = []
    for site in inventory.sites:
        if site.kind is not SiteKind.CLOUD:
            continue
        for pool in site.pools:
            by_tier = gpus.get((site.name, pool.name))
            if not by_tier or not sum(by_tier.values()):
                continue
            instance = cat.instances.get(pool.instance_type or "")
            if instance is None or pool.max_gpus is None or site.region is None or site.cluster is None:
                raise HybridctlError(
                    f"cloud pool {site.name}/{pool.name} lacks a catalog instance type, max_gpus, region or cluster",
                    hint="run `hybridctl validate` on the inventory",
                )
            price = pool.usd_per_gpu_hour if pool.usd_per_gpu_hour is not None else instance.usd_per_gpu_hour
            planned.append(_PlannedPool(site, pool, dict(by_tier), price))
    return planned


def _node_pool(planned: _PlannedPool, cat: Catalog) -> NodePoolConfig:
    pool = planned.pool
    gpn = cat.instances[pool.instance_type or ""].gpus_per_node
    fixed = planned.gpus_by_tier.get(Tier.FIXED, 0)
    burst = planned.gpus_by_tier.get(Tier.BURST, 0)
    desired = nodes_for(fixed + burst, gpn)
    return NodePoolConfig(
        name=pool.name, instance_type=pool.instance_type or "", capacity_type=pool.capacity_type.value,
        gpu_type=pool.gpu, gpus_per_node=gpn, min_size=nodes_for(fixed, gpn), desired_size=desired,
        # Quota in whole nodes; EKS needs max >= desired and max >= 1.
        max_size=max((pool.max_gpus or 0) // gpn, desired, 1),
    )


def _multikueue_groups(plan: Plan, cluster_of: dict[str, str]) -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    """Manager cluster -> workers, and cluster -> burst workloads it must queue, when burst spans clusters."""
    clusters_of: dict[str, set[str]] = defaultdict(set)
    burst_gpus: dict[str, int] = defaultdict(int)
    for p in plan.placements:
        if p.tier == Tier.BURST and p.site in cluster_of:
            clusters_of[p.workload].add(cluster_of[p.site])
            burst_gpus[cluster_of[p.site]] += p.gpus
    if not any(len(c) > 1 for c in clusters_of.values()):
        return {}, {}
    group = sorted(burst_gpus, key=lambda c: (-burst_gpus[c], c))
    manager, workers = group[0], tuple(sorted(group[1:]))
    # MultiKueue mirrors a workload into the worker's namespace and LocalQueue of the same name.
    burst_workloads = {w for w, cs in clusters_of.items() if cs}
    return {manager: workers}, {c: burst_workloads for c in group}


def plan_digest(plan: Plan) -> str:
    """The digest of the plan file's bytes (byte-stable: the solver's wall time is left out)."""
    return "sha256:" + hashlib.sha256(plan_to_json(plan, plan_file=True).encode()).hexdigest()


def stack_configs(inventory: Inventory, plan: Plan, digest: str | None = None, cat: Catalog | None = None) -> StackConfigs:
    """The stack configurations that make `plan` real in the cloud; `digest` defaults to plan_digest(plan)."""
    cat = cat or catalog()
    digest = digest or plan_digest(plan)
    planned = _planned_pools(inventory, plan, cat)
    by_site: dict[str, list[_PlannedPool]] = defaultdict(list)
    for p in planned:
        by_site[p.site.name].append(p)
    gpu_pools = tuple(
        GpuPoolsStackConfig(
            site=site_pools[0].site.name, region=site_pools[0].site.region or "",
            cluster_name=site_pools[0].site.cluster or "", inventory_name=inventory.name, plan_digest=digest,
            node_pools=tuple(_node_pool(p, cat) for p in site_pools),
        )
        for _, site_pools in sorted(by_site.items())
    )

    cluster_of = {s.name: s.cluster for s in inventory.sites if s.kind is SiteKind.CLOUD and s.cluster}
    managers, mirrored = _multikueue_groups(plan, cluster_of)
    by_cluster: dict[str, list[_PlannedPool]] = defaultdict(list)
    for p in planned:
        by_cluster[cluster_of[p.site.name]].append(p)
    tier_of = {**plan.tiers, **{p.workload: p.tier for p in plan.placements}}
    queues = []
    for cluster, pools in sorted(by_cluster.items()):
        sites = {p.site.name for p in pools}
        tier_queues = []
        for tier in TIER_ORDER:
            # Opportunistic work that checkpoints may use spot; the queue admits it there.
            allowed = allowed_capacity_types(tier, True, inventory.policies)
            usable = sorted((p for p in pools if p.pool.capacity_type in allowed), key=lambda p: (p.usd_per_gpu_hour, p.pool.name))
            tier_queues.append((tier.value, tuple(FlavorQuota(p.pool.name, p.gpus_by_tier.get(tier, 0)) for p in usable)))
        workloads = {p.workload for p in plan.placements if p.site in sites} | mirrored.get(cluster, set())
        queues.append(QueuesStackConfig(
            cluster_name=cluster, inventory_name=inventory.name, plan_digest=digest, cohort=inventory.name,
            flavors=tuple(
                FlavorConfig(p.pool.name, p.pool.gpu, ((LABEL_POOL, p.pool.name), (LABEL_SITE, p.site.name))) for p in pools
            ),
            queues=tuple(tier_queues),
            workloads=tuple(WorkloadQueue(w, str(tier_of[w])) for w in sorted(workloads)),
            multikueue_clusters=managers.get(cluster, ()),
        ))
    return StackConfigs(gpu_pools, tuple(queues))


# --- the diff ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CloudChange:
    project: str
    stack: str
    kind: str  # stack | node-group | resource-flavor | cluster-queue | local-queue | multikueue
    name: str
    action: str  # create | resize | replace | update | delete
    detail: str = ""


_KIND_ORDER = ("stack", "node-group", "resource-flavor", "cluster-queue", "local-queue", "multikueue")


def _arrow(label: str, old: object, new: object) -> str:
    return f"{label} {old}" if old == new else f"{label} {old}→{new}"


def _node_group_changes(project: str, stack: str, old: dict[str, NodePoolConfig], new: dict[str, NodePoolConfig]) -> list[CloudChange]:
    changes = []
    for name in sorted(old.keys() | new.keys()):
        a, b = old.get(name), new.get(name)
        sizes = f"min {b.min_size}, desired {b.desired_size}, max {b.max_size}" if b else ""
        if a is None:
            changes.append(CloudChange(project, stack, "node-group", name, "create", f"{b.instance_type if b else ''} {sizes}".strip()))
        elif b is None:
            changes.append(CloudChange(project, stack, "node-group", name, "delete", f"{a.instance_type} ×{a.desired_size}"))
        elif (a.instance_type, a.capacity_type) != (b.instance_type, b.capacity_type):
            # EKS cannot change a node group's instance or capacity type in place.
            changes.append(CloudChange(project, stack, "node-group", name, "replace",
                                       f"{a.instance_type}/{a.capacity_type}→{b.instance_type}/{b.capacity_type}"))
        elif (a.min_size, a.desired_size, a.max_size) != (b.min_size, b.desired_size, b.max_size):
            detail = ", ".join(_arrow(label, x, y) for label, x, y in (
                ("min", a.min_size, b.min_size), ("desired", a.desired_size, b.desired_size), ("max", a.max_size, b.max_size)))
            changes.append(CloudChange(project, stack, "node-group", name, "resize", detail))
    return changes


def _queue_changes(stack: str, old: QueuesStackConfig | None, new: QueuesStackConfig | None) -> list[CloudChange]:
    p = PROJECT_QUEUES
    cfg = new or old
    assert cfg is not None
    changes = []
    old_flavors = {f.name for f in old.flavors} if old else set()
    new_flavors = {f.name for f in new.flavors} if new else set()
    changes += [CloudChange(p, stack, "resource-flavor", f, "create") for f in sorted(new_flavors - old_flavors)]
    changes += [CloudChange(p, stack, "resource-flavor", f, "delete") for f in sorted(old_flavors - new_flavors)]
    for tier in (t.value for t in TIER_ORDER):
        before = {q.flavor: q.gpus for q in old.quotas(tier)} if old else None
        after = {q.flavor: q.gpus for q in new.quotas(tier)} if new else None
        name = f"{cfg.cohort}-{tier}"
        if before is None or after is None:
            if before != after:
                changes.append(CloudChange(p, stack, "cluster-queue", name, "create" if before is None else "delete"))
            continue
        if before.keys() != after.keys():
            detail = ("flavors " + ", ".join(after)) if after else "no flavors"
            changes.append(CloudChange(p, stack, "cluster-queue", name, "update", detail))
        resized = [f"{f} {before.get(f, 0)}→{after.get(f, 0)} GPUs" for f in sorted(before.keys() | after.keys())
                   if before.get(f, 0) != after.get(f, 0)]
        if resized:
            changes.append(CloudChange(p, stack, "cluster-queue", name, "resize", "; ".join(resized)))
    old_wl = {w.name: w.tier for w in old.workloads} if old else {}
    new_wl = {w.name: w.tier for w in new.workloads} if new else {}
    for w in sorted(old_wl.keys() | new_wl.keys()):
        if w not in old_wl:
            changes.append(CloudChange(p, stack, "local-queue", w, "create", f"tier {new_wl[w]}"))
        elif w not in new_wl:
            changes.append(CloudChange(p, stack, "local-queue", w, "delete"))
        elif old_wl[w] != new_wl[w]:
            changes.append(CloudChange(p, stack, "local-queue", w, "update", f"tier {old_wl[w]}→{new_wl[w]}"))
    old_mk, new_mk = (old.multikueue_clusters if old else ()), (new.multikueue_clusters if new else ())
    if old_mk != new_mk:
        action = "create" if not old_mk else "delete" if not new_mk else "update"
        changes.append(CloudChange(p, stack, "multikueue", "burst", action, "workers " + ", ".join(new_mk or old_mk)))
    return changes


def diff_stack_configs(before: StackConfigs | None, after: StackConfigs) -> tuple[CloudChange, ...]:
    """What applying `after` changes in the cloud, per stack, compared with `before` (None: nothing yet).

    The plan digest (a tag and annotation on everything) is left out: it changes with every plan.
    """
    changes: list[CloudChange] = []
    old_pools = {s.stack_name: s for s in before.gpu_pools} if before else {}
    new_pools = {s.stack_name: s for s in after.gpu_pools}
    for stack in sorted(old_pools.keys() | new_pools.keys()):
        a, b = old_pools.get(stack), new_pools.get(stack)
        if a is None or b is None:
            changes.append(CloudChange(PROJECT_GPU_POOLS, stack, "stack", stack, "create" if a is None else "delete"))
        changes += _node_group_changes(PROJECT_GPU_POOLS, stack, {p.name: p for p in a.node_pools} if a else {},
                                       {p.name: p for p in b.node_pools} if b else {})
    old_queues = {s.stack_name: s for s in before.queues} if before else {}
    new_queues = {s.stack_name: s for s in after.queues}
    for stack in sorted(old_queues.keys() | new_queues.keys()):
        qa, qb = old_queues.get(stack), new_queues.get(stack)
        if qa is None or qb is None:
            changes.append(CloudChange(PROJECT_QUEUES, stack, "stack", stack, "create" if qa is None else "delete"))
        changes += _queue_changes(stack, qa, qb)
    # Stable: within a kind, the order built above (names sorted, queues in tier order).
    return tuple(sorted(changes, key=lambda c: (c.project, c.stack, _KIND_ORDER.index(c.kind))))
