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
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.plan.pricing.rates import pool_usd_per_gpu_hour
from hybridctl.core.plan.tiers import Tier
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
    return PlannedPool(site, pool, dict(counted[0]), pool_usd_per_gpu_hour(pool, cat.instances),
                       frozenset(counted[1]))


def cloud_pools(inventory: Inventory) -> list[tuple[Site, Pool]]:
    """Every pool of a cloud site, in inventory order (the order of the stacks' node groups)."""
    return [(site, pool) for site in inventory.sites if site.kind is SiteKind.CLOUD for pool in site.pools]


def planned_pools(inventory: Inventory, plan: Plan, cat: Catalog) -> list[PlannedPool]:
    """Cloud pools the plan uses, in inventory order, with their GPUs per tier."""
    counted = tally(plan.placements)
    planned = (planned_pool(site, pool, counted.get((site.name, pool.name)), cat) for site, pool in cloud_pools(inventory))
    return [p for p in planned if p is not None]


def cluster_of(inventory: Inventory) -> dict[str, str]:
    """Cloud site -> its Kubernetes cluster."""
    return {s.name: s.cluster for s in inventory.sites if s.kind is SiteKind.CLOUD and s.cluster}


def burst_spread(placements: Iterable[Placement], clusters: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Workload -> cluster -> the GPUs of its burst placements there (a cluster it reaches with none
    counts too: MultiKueue dispatches by where work is placed)."""
    spread: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p in placements:
        if p.tier == Tier.BURST and p.site in clusters:
            spread[p.workload][clusters[p.site]] += p.gpus
    return spread


MultiKueue = tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]


def multikueue_groups(spanning: set[str], dispatched_gpus: Mapping[str, int]) -> MultiKueue:
    """Manager cluster -> workers, and cluster -> burst workloads dispatched through MultiKueue.

    Only burst workloads placed in more than one cluster (`spanning`) are dispatched; every
    other workload stays in its own cluster's queues. `dispatched_gpus`: cluster -> the GPUs
    of the spanning workloads' burst placements there. The manager's dispatching queues run
    nothing locally, so the manager is the cluster with the fewest planned GPUs for dispatched
    work: the least capacity of its own waits on the workers.
    """
    if not spanning:
        return {}, {}
    group = sorted(dispatched_gpus, key=lambda c: (dispatched_gpus[c], c))
    manager, workers = group[0], tuple(sorted(group[1:]))
    # MultiKueue mirrors a workload into the worker's namespace and LocalQueue of the same name.
    return {manager: workers}, {c: spanning for c in group}


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
