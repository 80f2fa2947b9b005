"""What the stack configurations read of a plan: the GPUs and workloads on each cloud pool, each
workload's tier and sites, and the burst work that MultiKueue dispatches across clusters.

Split out of stackconfig.py so that the whole derivation (stackconfig.stack_configs) and the
incremental one (stackreuse.py) read a plan through the same functions: one works them out over
every placement, the other over the placements that changed.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hybridctl.core.inventory.catalog import Catalog
from hybridctl.core.inventory.models import Inventory, Pool, Site, SiteKind, Workload
from hybridctl.core.placement.tiers import Tier
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.pricing.rates import pool_usd_per_gpu_hour
from hybridctl.errors import HybridctlError

PoolKey = tuple[str, str]  # (site, pool)
Tally = tuple[dict[str, int], set[str]]  # a pool's GPUs per tier, and its workloads


@dataclass(frozen=True)
class PlannedPool:
    site: Site
    pool: Pool
    gpus_by_tier: dict[str, int]
    usd_per_gpu_hour: float
    workloads: frozenset[str]
    gpus_per_node: int = 0  # GPUs in one machine: the catalog's for a cloud pool, the pool's on premises


def planned_machines(plan: Plan) -> dict[PoolKey, int]:
    """(site, pool) -> the plan's whole machines (PoolUsage.machines), the figure the bill counts.

    A reserved cloud pool's machines are all the machines it has: they are paid for either way.
    """
    return {(usage.site, usage.pool): usage.machines for usage in plan.pools}


def tally(placements: Iterable[Placement]) -> dict[PoolKey, Tally]:
    """(site, pool) -> its GPUs per tier and its workloads."""
    found: dict[PoolKey, Tally] = {}
    for placement in placements:
        key = (placement.site, placement.pool)
        known = found.get(key)
        if known is None:
            known = found[key] = (defaultdict(int), set())
        known[0][placement.tier] += placement.gpus
        known[1].add(placement.workload)
    return found


def planned_pool(site: Site, pool: Pool, counted: Tally | None, cat: Catalog) -> PlannedPool | None:
    """A cloud pool as the plan uses it; None when the plan puts no GPU on it."""
    if counted is None or not sum(counted[0].values()):
        return None
    instance = cat.instances.get(pool.instance_type or "")
    if instance is None or pool.max_gpus is None or site.region is None or site.cluster is None:
        raise HybridctlError(
            f"cloud pool {site.name}/{pool.name} lacks a catalog instance type, max_gpus, region or cluster",
            hint="run `hybridctl validate` on the inventory",
        )
    return PlannedPool(site, pool, dict(counted[0]), pool_usd_per_gpu_hour(pool, cat.instances, site.region),
                       frozenset(counted[1]), instance.gpus_per_node)


def onprem_planned_pools(inventory: Inventory, plan: Plan, cat: Catalog) -> list[PlannedPool]:
    """Pools of on-prem sites that name a cluster (revision 3), where the plan puts GPUs: their cluster
    gets queues (no node groups), so burst and opportunistic work spills over on premises first."""
    counted = tally(plan.placements)
    found = []
    for site in inventory.sites:
        if site.kind is not SiteKind.ONPREM or site.cluster is None:
            continue
        for pool in site.pools:
            on_pool: Tally | None = counted.get((site.name, pool.name))
            if on_pool is not None and any(on_pool[0].values()):
                found.append(PlannedPool(site, pool, dict(on_pool[0]), pool_usd_per_gpu_hour(pool, cat.instances, site.region),
                                         frozenset(on_pool[1]), pool.gpus_per_node or min(8, pool.gpus or 8)))
    return found


def has_onprem_clusters(inventory: Inventory) -> bool:
    return any(s.kind is SiteKind.ONPREM and s.cluster for s in inventory.sites)


def cloud_pools(inventory: Inventory) -> list[tuple[Site, Pool]]:
    """Every pool of an AWS cloud site, in inventory order (the order of the EKS stacks' node groups); the
    Google Cloud and Azure sites' pools are deploy/gke_aks.py's."""
    return [(site, pool) for site in inventory.sites if site.kind is SiteKind.CLOUD and site.provider in (None, "aws")
            for pool in site.pools]


def planned_pools(inventory: Inventory, plan: Plan, cat: Catalog) -> list[PlannedPool]:
    """AWS cloud pools the plan uses, in inventory order, with their GPUs per tier."""
    counted = tally(plan.placements)
    planned = (planned_pool(site, pool, counted.get((site.name, pool.name)), cat) for site, pool in cloud_pools(inventory))
    return [p for p in planned if p is not None]


def cluster_of(inventory: Inventory) -> dict[str, str]:
    """Site -> its Kubernetes cluster: every cloud site, and the on-prem sites that name one (revision 3)."""
    return {s.name: s.cluster for s in inventory.sites if s.kind in (SiteKind.CLOUD, SiteKind.ONPREM) and s.cluster}


SpillRank = tuple[int, float, str]  # (0 on premises | 1 cloud, position, name): smaller is filled first


def spill_order(inventory: Inventory, cat: Catalog) -> dict[str, SpillRank]:
    """Cluster -> its place in the order burst and opportunistic work spills over at run time: on-prem
    clusters first (inventory order), then the cloud clusters in the plan's order, the order the planner
    fills them in: cheapest GPU-hour of their pools first."""
    rank: dict[str, SpillRank] = {}
    for i, site in enumerate(inventory.sites):
        if site.cluster is None or site.cluster in rank:
            continue
        if site.kind is SiteKind.ONPREM:
            rank[site.cluster] = (0, float(i), site.cluster)
        elif site.kind is SiteKind.CLOUD:
            prices = [pool_usd_per_gpu_hour(p, cat.instances, site.region) for p in site.pools]
            rank[site.cluster] = (1, min(prices, default=0.0), site.cluster)
    return rank


SPILLED_TIERS = (Tier.BURST, Tier.OPPORTUNISTIC)


def burst_spread(placements: Iterable[Placement], clusters: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Workload -> cluster -> the GPUs of its burst or opportunistic placements there (a cluster it reaches
    with none counts too: MultiKueue dispatches by where work is placed)."""
    spread: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in placements:
        if p.tier in SPILLED_TIERS and p.site in clusters:
            spread[p.workload][clusters[p.site]] += p.gpus
    return spread


# Manager -> its workers in spill order; cluster -> the workloads mirrored into it; dispatched workload ->
# its GPUs on the workers (the manager's dispatching quota for it).
MultiKueue = tuple[dict[str, tuple[str, ...]], dict[str, set[str]], dict[str, int]]


def multikueue_groups(spanning: set[str], dispatched_gpus: Mapping[str, int],
                      spread: Mapping[str, Mapping[str, int]] | None = None,
                      rank: Mapping[str, SpillRank] | None = None) -> MultiKueue:
    """The MultiKueue group of the burst and opportunistic work placed in more than one cluster (`spanning`).

    Kueue's rules (v0.19, docs "MultiKueue"; tests/stacks/multikueue_model.py): a workload is admitted
    on the manager's quota first, then dispatched, so the manager's dispatching quota must be the
    workers' total; the manager is never one of its own workers, so its planned share of the work does
    not run through the dispatching queue (it keeps a dedicated local queue, `<workload>-local`); the
    incremental dispatcher nominates workers in the MultiKueueConfig's order. So: the workers are listed
    in spill order (on premises first, then the cloud in the plan's order, `rank`), the manager is the
    cluster with the fewest planned GPUs of the dispatched work (ties: the last in spill order, so the
    first place to spill to stays a worker), and each workload's dispatching quota is its GPUs on the
    workers. `dispatched_gpus`: cluster -> the spanning workloads' GPUs there; `spread`: workload ->
    cluster -> its GPUs (burst_spread).
    """
    if not spanning:
        return {}, {}, {}
    rank = rank or {}
    order = sorted(dispatched_gpus, key=lambda c: rank.get(c, (2, 0.0, c)))
    manager = min(order, key=lambda c: (dispatched_gpus[c], -order.index(c)))
    workers = tuple(c for c in order if c != manager)
    quota = {w: sum(g for c, g in (spread or {}).get(w, {}).items() if c in workers) for w in sorted(spanning)}
    # MultiKueue mirrors a workload into the worker's namespace and LocalQueue of the same name.
    return {manager: workers}, {c: spanning for c in order}, quota


def spanning_of(spread: Mapping[str, Mapping[str, int]]) -> tuple[set[str], dict[str, int]]:
    """The workloads whose burst work spans clusters, and the GPUs they have in each cluster."""
    spanning = {w for w, cs in spread.items() if len(cs) > 1}
    dispatched_gpus: dict[str, int] = defaultdict(int)
    for w in spanning:
        for cluster, gpus in spread[w].items():
            dispatched_gpus[cluster] += gpus
    return spanning, dispatched_gpus


@dataclass(frozen=True)
class PlanIndex:
    """The plan's placements by pool and by site, and each workload's spec and tier, worked out once
    for all clusters (a fleet has tens of clusters and tens of thousands of placements)."""

    known: Mapping[str, Workload]
    tier_of: Mapping[str, str]
    on_pool: Mapping[PoolKey, list[Placement]]
    at_site: Mapping[str, set[str]]

    @staticmethod
    def of(inventory: Inventory, plan: Plan, known: Mapping[str, Workload] | None = None) -> PlanIndex:
        on_pool: dict[PoolKey, list[Placement]] = defaultdict(list)
        at_site: dict[str, set[str]] = defaultdict(set)
        for pl in plan.placements:
            on_pool[(pl.site, pl.pool)].append(pl)
            at_site[pl.site].add(pl.workload)
        return PlanIndex({w.name: w for w in inventory.workloads} if known is None else known,
                         {**plan.tiers, **{p.workload: p.tier for p in plan.placements}}, on_pool, at_site)
