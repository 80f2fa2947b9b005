"""The plan as Pulumi stack configuration.

One `aws-gpu-pools` stack per cloud site with planned pools, one `k8s-queues` stack per
Kubernetes cluster those pools join. The values are exactly what the programs in stacks/
read (schema: stacks/README.md), so `plan` can show the cloud changes without the pulumi CLI
(stackdiff.py), `synth` can render them offline and `apply` hands the same values to the
driver: StackSpec(c.project, c.stack_name, c.values()).

Node group sizing (node_group_sizes): min = the machines the fixed tier needs (always on),
desired = every machine the plan uses (fixed, burst and opportunistic: the planned steady
state; the cluster autoscaler owns it after creation), max = the pool's quota in whole
machines, never below desired.

Queues: each workload's LocalQueue points at a ClusterQueue that reaches only the flavors of
its GPU types, and spot flavors only when the workload is preemptible (queue_key).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar, cast

from hybridctl.core.catalog import Catalog, catalog
from hybridctl.core.inventory.models import CapacityType, Inventory, Pool, Site, SiteKind, Workload
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.plan.serialize import plan_to_json
from hybridctl.core.stackvalues import (
    DISK_FLOOR_GIB,
    ClusterQueueConfig,
    FlavorConfig,
    FlavorQuota,
    GpuPoolsStackConfig,
    NodePoolConfig,
    QueuesStackConfig,
    StackConfigs,
    WorkloadQueue,
)
from hybridctl.core.tiers import TIER_ORDER, Tier, allowed_capacity_types
from hybridctl.errors import HybridctlError

T = TypeVar("T")

# Shared with stacks/aws-gpu-pools (node labels) and stacks/k8s-queues (flavor selectors).
LABEL_SITE = "hybridctl.io/site"
LABEL_POOL = "hybridctl.io/pool"
LABEL_GPU = "hybridctl.io/gpu"

# Root volume: the models and datasets the pool's workloads read, plus room for the OS and
# container images (CUDA images run to tens of GB each); never below the floor (stackvalues). gp3's ceiling.
DISK_HEADROOM_GIB = 100
DISK_MAX_GIB = 16_384
# Instance families with EFA, and the network cards each size has (one EFA interface per card).
EFA_NETWORK_CARDS = {"p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32, "p5en.48xlarge": 16}
_ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")

def nodes_for(gpus: int, gpus_per_node: int) -> int:
    return -(-gpus // gpus_per_node)


def node_group_sizes(fixed_gpus: int, planned_gpus: int, gpus_per_node: int, quota_gpus: int,
                     planned_machines: int | None = None) -> tuple[int, int, int]:
    """(min, desired, max) of a node group: the one place node groups are sized.

    `planned_machines` is the plan's whole-machine count for the pool (pay-per-use pools, when
    the plan carries it): the planner already rounded each replica to whole machines, so it is
    used as is; without it, the GPUs are packed into ceil(GPUs / GPUs per node) machines.
    """
    minimum = nodes_for(fixed_gpus, gpus_per_node)
    desired = max(planned_machines if planned_machines is not None else nodes_for(planned_gpus, gpus_per_node), minimum)
    # Quota in whole machines; EKS needs max >= desired and max >= 1.
    return minimum, desired, max(quota_gpus // gpus_per_node, desired, 1)


def planned_machines(plan: Plan) -> dict[tuple[str, str], int]:
    """(site, pool) -> the plan's whole machines (PoolUsage.machines), the figure the bill counts.

    A reserved cloud pool's machines are all the machines it has: they are paid for either way.
    """
    return {(usage.site, usage.pool): usage.machines for usage in plan.pools}


@dataclass(frozen=True)
class _PlannedPool:
    site: Site
    pool: Pool
    gpus_by_tier: dict[str, int]
    usd_per_gpu_hour: float
    workloads: frozenset[str]


def _planned_pools(inventory: Inventory, plan: Plan, cat: Catalog) -> list[_PlannedPool]:
    """Cloud pools the plan uses, in inventory order, with their GPUs per tier."""
    gpus: dict[tuple[str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    users: dict[tuple[str, str], set[str]] = defaultdict(set)
    for placement in plan.placements:
        gpus[(placement.site, placement.pool)][placement.tier] += placement.gpus
        users[(placement.site, placement.pool)].add(placement.workload)
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
            planned.append(_PlannedPool(site, pool, dict(by_tier), price, frozenset(users[(site.name, pool.name)])))
    return planned


def _gib(gb: float) -> int:
    return math.ceil(gb * 1e9 / 2**30)


def disk_gib(workloads: list[Workload], datasets: Mapping[str, float]) -> int:
    """Root volume for a pool: its workloads' models and datasets (each once), images, a floor."""
    needed = sum(w.model_gb or 0.0 for w in workloads)
    needed += sum(datasets.get(d, 0.0) for d in sorted({d for w in workloads for d in w.datasets}))
    return min(max(DISK_FLOOR_GIB, _gib(needed) + DISK_HEADROOM_GIB), DISK_MAX_GIB)


def _spot_types(pool: Pool, cat: Catalog) -> tuple[str, ...]:
    """Spot diversifies across every catalog type with the pool's GPU and GPUs per node."""
    own = cat.instances[pool.instance_type or ""]
    others = sorted(i.name for i in cat.instances.values()
                    if i.provider == own.provider and i.gpu == own.gpu and i.gpus_per_node == own.gpus_per_node
                    and i.name != own.name)
    return (own.name, *others)


def _zone(site: Site, pool: Pool) -> str | None:
    """A pool's failure domain when it names one of its region's availability zones."""
    domain = pool.failure_domain
    if domain and site.region and _ZONE.match(domain) and domain.startswith(site.region):
        return domain
    return None


def _node_pool(planned: _PlannedPool, known: Mapping[str, Workload], dataset_gb: Mapping[str, float], cat: Catalog,
               machines: int | None) -> NodePoolConfig:
    pool = planned.pool
    gpn = cat.instances[pool.instance_type or ""].gpus_per_node
    minimum, desired, maximum = node_group_sizes(planned.gpus_by_tier.get(Tier.FIXED, 0),
                                                 sum(planned.gpus_by_tier.values()), gpn, pool.max_gpus or 0, machines)
    workloads = [known[w] for w in sorted(planned.workloads) if w in known]
    multi_node = any(w.multi_node and w.gpu.count > gpn for w in workloads)
    return NodePoolConfig(
        name=pool.name, instance_type=pool.instance_type or "", capacity_type=pool.capacity_type.value,
        gpu_type=pool.gpu, gpus_per_node=gpn, min_size=minimum, desired_size=desired, max_size=maximum,
        instance_types=_spot_types(pool, cat) if pool.capacity_type is CapacityType.SPOT else (),
        disk_gib=disk_gib(workloads, dataset_gb),
        efa_interfaces=EFA_NETWORK_CARDS.get(pool.instance_type or "", 0) if multi_node else 0,
        reservation_id=pool.reservation_id if pool.capacity_type is CapacityType.RESERVED else None,
        availability_zone=_zone(planned.site, pool),
    )


def _node_pool_of(planned: _PlannedPool, known: Mapping[str, Workload], dataset_gb: Mapping[str, float], cat: Catalog,
                  machines: int | None, inventory: Inventory, plan: Plan, memo: StackConfigMemo | None) -> NodePoolConfig:
    if memo is None:
        return _node_pool(planned, known, dataset_gb, cat, machines)
    return memo.node_pool(plan, inventory, cat, planned, machines,
                          lambda: _node_pool(planned, known, dataset_gb, cat, machines))


def _multikueue_groups(plan: Plan, cluster_of: dict[str, str]) -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    """Manager cluster -> workers, and cluster -> burst workloads dispatched through MultiKueue.

    Only burst workloads placed in more than one cluster are dispatched; every other workload
    stays in its own cluster's queues. The manager's dispatching queues run nothing locally, so
    the manager is the cluster with the fewest planned GPUs for dispatched work: the least
    capacity of its own waits on the workers.
    """
    clusters_of: dict[str, set[str]] = defaultdict(set)
    for p in plan.placements:
        if p.tier == Tier.BURST and p.site in cluster_of:
            clusters_of[p.workload].add(cluster_of[p.site])
    spanning = {w for w, cs in clusters_of.items() if len(cs) > 1}
    if not spanning:
        return {}, {}
    dispatched_gpus: dict[str, int] = defaultdict(int)
    for p in plan.placements:
        if p.workload in spanning and p.tier == Tier.BURST and p.site in cluster_of:
            dispatched_gpus[cluster_of[p.site]] += p.gpus
    group = sorted(dispatched_gpus, key=lambda c: (dispatched_gpus[c], c))
    manager, workers = group[0], tuple(sorted(group[1:]))
    # MultiKueue mirrors a workload into the worker's namespace and LocalQueue of the same name.
    return {manager: workers}, {c: spanning for c in group}


def plan_digest(plan: Plan) -> str:
    """The digest of the plan file's bytes (byte-stable: the solver's wall time is left out)."""
    return "sha256:" + hashlib.sha256(plan_to_json(plan, plan_file=True).encode()).hexdigest()


@dataclass(frozen=True)
class _PlanIndex:
    """The plan's placements by pool and by site, and each workload's spec and tier, worked out once
    for all clusters (a fleet has tens of clusters and tens of thousands of placements)."""

    known: dict[str, Workload]
    tier_of: dict[str, str]
    on_pool: dict[tuple[str, str], list[Placement]]
    at_site: dict[str, set[str]]

    @staticmethod
    def of(inventory: Inventory, plan: Plan) -> _PlanIndex:
        on_pool: dict[tuple[str, str], list[Placement]] = defaultdict(list)
        at_site: dict[str, set[str]] = defaultdict(set)
        for pl in plan.placements:
            on_pool[(pl.site, pl.pool)].append(pl)
            at_site[pl.site].add(pl.workload)
        return _PlanIndex({w.name: w for w in inventory.workloads},
                          {**plan.tiers, **{p.workload: p.tier for p in plan.placements}}, on_pool, at_site)


def queue_name(cohort: str, tier: str, gpu_types: tuple[str, ...], spot: bool, dispatched: bool) -> str:
    """`<cohort>-<tier>-<gpu types>[-spot][-mk]`: one ClusterQueue per distinct reach."""
    slug = "-".join(re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-") for t in gpu_types)
    return f"{cohort}-{tier}-{slug}" + ("-spot" if spot else "") + ("-mk" if dispatched else "")


def _queues(inventory: Inventory, index: _PlanIndex, pools: list[_PlannedPool], workloads: set[str],
            dispatched: set[str], manager: bool) -> tuple[tuple[ClusterQueueConfig, ...], tuple[WorkloadQueue, ...]]:
    """The cluster's ClusterQueues and each workload's queue: reach = its GPU types and capacity types."""
    known, tier_of = index.known, index.tier_of
    placed: dict[str, list[tuple[_PlannedPool, int]]] = defaultdict(list)
    for p in pools:
        for pl in index.on_pool.get((p.site.name, p.pool.name), ()):
            placed[pl.workload].append((p, pl.gpus))
    members: dict[tuple[str, tuple[str, ...], bool, bool], list[str]] = defaultdict(list)
    # (tier, GPU types as written, preemptible) -> (tier, sorted types, spot allowed): 100,000 workloads, a few answers
    reach_of: dict[tuple[str, tuple[str, ...], bool], tuple[str, tuple[str, ...], bool]] = {}
    ordered = sorted(workloads)
    for name in ordered:
        tier = tier_of[name]
        spec = known.get(name)
        if spec is not None:
            asked = (tier, tuple(spec.gpu.types), spec.preemptible)
        else:
            # A workload the inventory no longer lists keeps the reach of where it is placed
            # (the planner puts only preemptible work on spot).
            asked = (tier, tuple({p.pool.gpu for p, _ in placed[name]}),
                     any(p.pool.capacity_type is CapacityType.SPOT for p, _ in placed[name]))
        reach = reach_of.get(asked)
        if reach is None:
            reach = reach_of[asked] = (Tier(tier).value, tuple(sorted(asked[1])), CapacityType.SPOT in
                                       allowed_capacity_types(Tier(tier), asked[2], inventory.policies))
        members[(*reach, manager and name in dispatched)].append(name)
    queues = []
    queue_of: dict[str, WorkloadQueue] = {}
    for (tier_name, types, spot, mk), names in sorted(members.items(),
                                                      key=lambda kv: (TIER_ORDER.index(Tier(kv[0][0])), kv[0])):
        allowed = allowed_capacity_types(Tier(tier_name), spot, inventory.policies)
        pooled = sorted((p for p in pools if p.pool.gpu in types and p.pool.capacity_type in allowed),
                        key=lambda p: (p.usd_per_gpu_hour, p.pool.name))
        gpus: dict[str, int] = defaultdict(int)
        for n in names:
            for p, g in placed[n]:
                gpus[p.pool.name] += g
        name = queue_name(inventory.name, tier_name, types, spot, mk)
        queues.append(ClusterQueueConfig(name, tier_name, tuple(FlavorQuota(p.pool.name, gpus[p.pool.name])
                                                                for p in pooled), mk))
        for n in names:
            spec = known.get(n)
            queue_of[n] = WorkloadQueue(n, tier_name, name, spec.team if spec is not None else None)
    return tuple(queues), tuple(queue_of[n] for n in ordered)


class StackConfigMemo:
    """Each cluster's queues and each pool's node group, kept for the next plan that places the same.

    A failover plan keeps most of the applied plan's placements as the very same objects
    (failover/scope.py), so most clusters and pools of a fleet get the configuration they had:
    a cluster's queues depend on the inventory, the plan digest, its planned pools, the
    placements at its sites, its MultiKueue role and the tiers of the workloads mirrored into
    it; a pool's node group on the inventory, its GPUs per tier, its workloads and its machines.
    Keyed by the inventory's and the placements' identities; the memo holds them, so no identity
    can pass to another object meanwhile.

    It keeps the configurations of the first plan it sees (a failover's applied plan, a drill's
    base plan), which every later plan is a variant of: another scenario's plan holds other
    placement objects, so keeping its configurations would only grow the memo.
    """

    def __init__(self) -> None:
        self._queues: dict[tuple[object, ...], tuple[Inventory, tuple[Placement, ...], QueuesStackConfig]] = {}
        self._node_pools: dict[tuple[object, ...], tuple[Inventory, Catalog, NodePoolConfig]] = {}
        self._gpu_pools: dict[tuple[object, ...], tuple[Inventory, GpuPoolsStackConfig]] = {}
        self._derived: dict[tuple[object, ...], tuple[object, object]] = {}
        self._first: Plan | None = None

    def _keeps(self, plan: Plan) -> bool:
        if self._first is None:
            self._first = plan
        return plan is self._first

    def queues(self, key: tuple[object, ...]) -> QueuesStackConfig | None:
        known = self._queues.get(key)
        return None if known is None else known[2]

    def put_queues(self, plan: Plan, key: tuple[object, ...], inventory: Inventory, placements: tuple[Placement, ...],
                   config: QueuesStackConfig) -> None:
        if self._keeps(plan):
            self._queues[key] = (inventory, placements, config)

    def node_pool(self, plan: Plan, inventory: Inventory, cat: Catalog, planned: _PlannedPool, machines: int | None,
                  derive: Callable[[], NodePoolConfig]) -> NodePoolConfig:
        key = (id(inventory), id(cat), planned.site.name, planned.pool.name, tuple(sorted(planned.gpus_by_tier.items())),
               planned.workloads, machines)
        known = self._node_pools.get(key)
        if known is not None:
            return known[2]
        config = derive()
        if self._keeps(plan):
            self._node_pools[key] = (inventory, cat, config)
        return config


    def gpu_pools(self, plan: Plan, inventory: Inventory, config: GpuPoolsStackConfig) -> GpuPoolsStackConfig:
        """The first plan's configuration of a site's pools when `config` has the very same node groups: the
        steps derived from it are kept with it (derived)."""
        key = (id(inventory), config.site, config.region, config.cluster_name, config.plan_digest,
               tuple(map(id, config.node_pools)))
        known = self._gpu_pools.get(key)
        if known is not None:
            return known[1]
        if self._keeps(plan):
            self._gpu_pools[key] = (inventory, config)
        return config

    def derived(self, plan: Plan, config: object, key: tuple[object, ...], derive: Callable[[], T]) -> T:
        """What `derive` works out from `config` (and what `key` names), kept while `config` is one of the
        first plan's configurations: a later plan that reuses the configuration reuses it too."""
        full = (id(config), *key)
        known = self._derived.get(full)
        if known is not None:
            return cast(T, known[1])
        value = derive()
        if self._keeps(plan):
            self._derived[full] = (config, value)
        return value


def stack_configs(inventory: Inventory, plan: Plan, digest: str | None = None, cat: Catalog | None = None,
                  memo: StackConfigMemo | None = None) -> StackConfigs:
    """The stack configurations that make `plan` real in the cloud; `digest` defaults to plan_digest(plan).

    `memo` (optional) reuses the queues and node groups that an earlier plan placed the same.
    """
    cat = cat or catalog()
    digest = digest or plan_digest(plan)
    planned = _planned_pools(inventory, plan, cat)
    machines = planned_machines(plan)
    known = {w.name: w for w in inventory.workloads}
    dataset_gb = {d.name: d.size_gb for d in inventory.datasets}
    by_site: dict[str, list[_PlannedPool]] = defaultdict(list)
    for p in planned:
        by_site[p.site.name].append(p)
    gpu_pools: list[GpuPoolsStackConfig] = []
    for _, site_pools in sorted(by_site.items()):
        site = site_pools[0].site
        config = GpuPoolsStackConfig(
            site=site.name, region=site.region or "", cluster_name=site.cluster or "", inventory_name=inventory.name,
            plan_digest=digest,
            node_pools=tuple(_node_pool_of(p, known, dataset_gb, cat, machines.get((p.site.name, p.pool.name)),
                                           inventory, plan, memo)
                             for p in site_pools))
        gpu_pools.append(config if memo is None else memo.gpu_pools(plan, inventory, config))

    cluster_of = {s.name: s.cluster for s in inventory.sites if s.kind is SiteKind.CLOUD and s.cluster}
    managers, mirrored = _multikueue_groups(plan, cluster_of)
    by_cluster: dict[str, list[_PlannedPool]] = defaultdict(list)
    for p in planned:
        by_cluster[cluster_of[p.site.name]].append(p)
    queues = []
    index = _PlanIndex.of(inventory, plan)
    placed_at: dict[str, list[Placement]] = defaultdict(list)
    if memo is not None:
        for pl in plan.placements:
            placed_at[pl.site].append(pl)
    for cluster, pools in sorted(by_cluster.items()):
        sites = {p.site.name for p in pools}
        key: tuple[object, ...] = ()
        held: tuple[Placement, ...] = ()
        if memo is not None:
            held = tuple(pl for site in sorted(sites) for pl in placed_at[site])
            dispatched = mirrored.get(cluster, set())
            key = (id(inventory), digest, cluster, tuple(p.pool.name for p in pools), tuple(map(id, held)),
                   tuple(sorted((w, index.tier_of[w]) for w in dispatched)), managers.get(cluster), cluster in managers)
            reused = memo.queues(key)
            if reused is not None:
                queues.append(reused)
                continue
        workloads = {w for site in sites for w in index.at_site.get(site, ())} | mirrored.get(cluster, set())
        cluster_queues, assigned = _queues(inventory, index, pools, workloads, mirrored.get(cluster, set()),
                                           cluster in managers)
        queues.append(QueuesStackConfig(
            cluster_name=cluster, inventory_name=inventory.name, plan_digest=digest, cohort=inventory.name,
            flavors=tuple(
                FlavorConfig(p.pool.name, p.pool.gpu,
                             ((LABEL_GPU, p.pool.gpu), (LABEL_POOL, p.pool.name), (LABEL_SITE, p.site.name)),
                             spot=p.pool.capacity_type is CapacityType.SPOT)
                for p in pools
            ),
            cluster_queues=cluster_queues, workloads=assigned, multikueue_clusters=managers.get(cluster, ()),
            region=pools[0].site.region or "",
        ))
        if memo is not None:
            memo.put_queues(plan, key, inventory, held, queues[-1])
    return StackConfigs(tuple(gpu_pools), tuple(queues))
