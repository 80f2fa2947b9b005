"""The stack configurations of a plan that varies another, derived from the other's and what changed.

A failover plan keeps most of the applied plan's placements as the very same objects
(failover/scope.py), and a drill builds the steps of hundreds of such plans, each differing from
its base plan at a few sites. StackConfigMemo derives the first plan it sees (a failover's
applied plan, a drill's base plan) in full and keeps what the derivation read; a later plan of
the same inventory, catalog and digest is then derived from the first's through
placement_delta(): only the GPU pools stacks of the sites, and the queues stacks of the
clusters, whose inputs differ are derived again, each by the same function as in full
(stackconfig.py), over the first plan's indexes patched where placements changed.

A site's GPU pools read its planned pools (GPUs per tier, workloads) and their machines; a
cluster's queues read its planned pools, the placements at its sites and their workloads'
tiers, its MultiKueue role and the set (and tiers) of the workloads mirrored into it. The
MultiKueue groups depend on every cluster's burst work: a change at one site can change the
manager, or the mirrored set, of clusters it never touched; so the groups are worked out
again from the first plan's per-workload burst spread, patched for the changed workloads.
Whatever the patch cannot show equal (another inventory, catalog or digest; a workload whose
placements carry two tiers, where the plan's order decides) is derived in full.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from operator import attrgetter
from typing import TypeVar, cast

from hybridctl.core.deploy.scaling_schedule import with_schedules
from hybridctl.core.deploy.stackconfig import (
    Derivation,
    ReachCache,
    by_cluster,
    by_site,
    derive,
    gpu_pools_config,
    node_pool,
    queues_config,
    queues_of_tally,
    reach_of,
)
from hybridctl.core.deploy.stackplanned import (
    MultiKueue,
    PlanIndex,
    PlannedPool,
    PoolKey,
    burst_spread,
    cloud_pools,
    cluster_of,
    has_onprem_clusters,
    multikueue_groups,
    planned_machines,
    planned_pool,
    spill_order,
    tally,
)
from hybridctl.core.deploy.stackvalues import QueuesStackConfig, StackConfigs
from hybridctl.core.inventory.catalog import Catalog
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.delta import PlacementDelta, placement_delta
from hybridctl.core.plan.model import Placement, Plan

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")


class Patched(Mapping[K, V]):
    """`base` with the entries of `patch` put over it, without copying `base` (a fleet's index)."""

    def __init__(self, base: Mapping[K, V], patch: Mapping[K, V]) -> None:
        self._base, self._patch = base, patch

    def __getitem__(self, key: K) -> V:
        if key in self._patch:
            return self._patch[key]
        if key in self._base:  # never base[key] first: a defaultdict would grow an entry
            return self._base[key]
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        return key in self._patch or key in self._base

    def __iter__(self) -> Iterator[K]:
        yield from self._patch
        yield from (k for k in self._base if k not in self._patch)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def _varied(placed: Mapping[str, list[Placement]], keys: Collection[str], delta: PlacementDelta,
            key_of: Callable[[Placement], str]) -> dict[str, list[Placement]]:
    """Key (a site, a workload) -> the later plan's placements under it: the first plan's (`placed`), less
    those the delta removed, plus those it added."""
    gone = set(map(id, delta.removed))
    found = {k: [pl for pl in placed.get(k, ()) if id(pl) not in gone] for k in keys}
    for pl in delta.added:
        if key_of(pl) in found:
            found[key_of(pl)].append(pl)
    return found


_SITE, _WORKLOAD = attrgetter("site"), attrgetter("workload")


class _Base:
    """The first plan's derivation, and the indexes a variant is patched from."""

    def __init__(self, inventory: Inventory, plan: Plan, digest: str, cat: Catalog, derived: Derivation) -> None:
        self.inventory, self.plan, self.digest, self.cat, self.derived = inventory, plan, digest, cat, derived
        self.placed_at: dict[str, list[Placement]] = {}
        self.placed_of: dict[str, list[Placement]] = {}
        for pl in plan.placements:
            self.placed_at.setdefault(pl.site, []).append(pl)
            self.placed_of.setdefault(pl.workload, []).append(pl)
        # a workload's tier is its last placement's: with two tiers, the later plan's order would decide
        self.mixed_tiers = any(len({pl.tier for pl in placed}) > 1 for placed in self.placed_of.values())
        self.cloud_pools = {(site.name, pool.name): (site, pool) for site, pool in cloud_pools(inventory)}
        self.clusters = cluster_of(inventory)
        self.rank = spill_order(inventory, cat)
        # On-prem clusters' queues (revision 3) are derived in full: their pools are no cloud pools.
        self.onprem_clusters = has_onprem_clusters(inventory)
        self.gpu_pools = {c.site: c for c in derived.configs.gpu_pools}
        self.queues = {c.cluster_name: c for c in derived.configs.queues}
        self.queue_of = {c.cluster_name: {q.name: q for q in c.workloads} for c in derived.configs.queues}
        self.pools_of = {cluster: tuple((p.site.name, p.pool.name) for p in pools)
                         for cluster, pools in by_cluster(derived.planned.values(), self.clusters).items()}
        self.spanning = next(iter(derived.groups[1].values()), set())  # every cluster of the group mirrors the same
        # cluster -> (the GPUs, the number) of spanning workloads' burst placements there
        self.dispatched: dict[str, tuple[int, int]] = {}
        for w in self.spanning:
            self._count(derived.spread[w], self.dispatched, 1)

    @staticmethod
    def _count(spread: dict[str, int], into: dict[str, tuple[int, int]], sign: int) -> None:
        for cluster, gpus in spread.items():
            had = into.get(cluster, (0, 0))
            into[cluster] = (had[0] + sign * gpus, had[1] + sign)

    def placements_at(self, delta: PlacementDelta, sites: Collection[str]) -> dict[str, list[Placement]]:
        """Site -> the later plan's placements there."""
        return _varied(self.placed_at, sites, delta, _SITE)

    def vary(self, plan: Plan, run_memo: RunMemo) -> StackConfigs | None:
        """`plan`'s configurations, from the first plan's and what changed; None when that cannot be shown equal."""
        if self.mixed_tiers or self.onprem_clusters or plan.segments != self.plan.segments:
            return None  # (another week: every scheduled node group's resizes may move)
        delta = placement_delta(self.plan, plan, run_memo)
        if 2 * len(delta.removed) > len(self.plan.placements):
            return None  # most of the fleet changed (a plan read from another file): patching costs more
        base = self.derived
        of_workload = _varied(self.placed_of, delta.workloads, delta, _WORKLOAD)
        tiers: dict[str, str] = {}
        for w, placed in of_workload.items():
            distinct = {pl.tier for pl in placed}
            if len(distinct) > 1:
                return None  # its tier is its last placement's: the plan's order would decide
            if distinct:
                tiers[w] = distinct.pop()
        at = self.placements_at(delta, delta.sites)
        touched = {(pl.site, pl.pool) for pl in (*delta.removed, *delta.added)}

        # planned pools and node groups: the first plan's, but where a pool's placements or machines changed
        machines = base.machines if plan.pools is self.plan.pools else planned_machines(plan)
        refit = {k for k in machines.keys() | base.machines.keys() if machines.get(k) != base.machines.get(k)}
        on_pool: dict[PoolKey, list[Placement]] = {key: [] for key in touched}
        for placed in at.values():
            for pl in placed:
                if (pl.site, pl.pool) in on_pool:
                    on_pool[(pl.site, pl.pool)].append(pl)
        counted = tally(pl for placed in on_pool.values() for pl in placed)
        planned: list[PlannedPool] = []
        for key, (site, pool) in self.cloud_pools.items():
            p = planned_pool(site, pool, counted.get(key), self.cat) if key in touched else base.planned.get(key)
            if p is not None:
                planned.append(p)
        new_sites = {p for p, _ in touched} | {p for p, _ in refit}
        # a node group derived again gets its weekly resizes again (a timed plan's; the others' are the
        # first plan's: the same placements in the same segments)
        fresh = with_schedules(self.inventory, plan, {
            k: node_pool(p, base.known, base.dataset_gb, self.cat, machines.get(k))
            for p in planned if (k := (p.site.name, p.pool.name)) in touched or k in refit})
        gpu_pools = tuple(
            gpu_pools_config(self.inventory, self.digest, pools,
                             (fresh.get(key) or base.node_pools[key] for key in ((p.site.name, p.pool.name) for p in pools)))
            if site in new_sites else self.gpu_pools[site]
            for site, pools in sorted(by_site(planned).items()))

        # MultiKueue: the spanning workloads and their GPUs per cluster, patched for the changed workloads
        spread = burst_spread((pl for placed in of_workload.values() for pl in placed), self.clusters)
        spanning, dispatched = self.spanning, dict(self.dispatched)
        flipped = False
        for w in delta.workloads:
            was, now = base.spread.get(w, {}), spread.get(w, {})
            if len(was) > 1:
                self._count(was, dispatched, -1)
            if len(now) > 1:
                self._count(now, dispatched, 1)
            flipped |= (len(was) > 1) != (len(now) > 1)
        if flipped:
            spanning = {w for w in spanning if w not in delta.workloads} | {w for w, cs in spread.items() if len(cs) > 1}
        groups = multikueue_groups(spanning, {c: gpus for c, (gpus, n) in dispatched.items() if n},
                                   Patched(base.spread, spread), self.rank)
        # Every cluster of the group mirrors the spanning workloads: a change to that set reaches them all.
        # Their tiers cannot change unless the set does: a spanning workload's placements are all burst
        # (one of another tier would give it two, which vary() leaves to the whole derivation).
        (managers, mirrored, quota), (was_managers, was_mirrored, was_quota) = groups, base.groups
        # the manager's dispatching quota is its workers' GPUs: a change at a worker reaches the manager
        regroup = {c for c in mirrored.keys() | was_mirrored.keys()
                   if flipped or quota != was_quota
                   or (managers.get(c), c in mirrored) != (was_managers.get(c), c in was_mirrored)}

        index = PlanIndex(base.known, Patched(base.index.tier_of, tiers),
                          Patched(base.index.on_pool, on_pool),
                          Patched(base.index.at_site, {s: {pl.workload for pl in placed} for s, placed in at.items()}))
        requeue = {self.clusters[s] for s in delta.sites if s in self.clusters} | regroup
        queues = tuple(self._requeue(cluster, pools, index, groups, cluster in regroup, of_workload)
                       if cluster in requeue else self.queues[cluster]
                       for cluster, pools in sorted(by_cluster(planned, self.clusters).items()))
        return StackConfigs(gpu_pools, queues)


    def _requeue(self, cluster: str, pools: list[PlannedPool], index: PlanIndex, groups: MultiKueue, regrouped: bool,
                 of_workload: Mapping[str, list[Placement]]) -> QueuesStackConfig:
        """A cluster's queues where placements at its sites changed: the first plan's tally, less the changed
        workloads' GPUs and reach there (on the first plan's pools), plus their new ones (`of_workload`: their
        placements now, on the pools planned now). A workload's reach reads its tier and its spec, not the
        pools: where pools came or went, only the changed workloads' placements were on them, and the
        flavors are assembled from the pools anew. In full when its MultiKueue role changed (then every
        workload's reach may have), or when the first plan had no queues there."""
        keys = {(p.site.name, p.pool.name): p for p in pools}
        first = self.pools_of.get(cluster)
        if regrouped or first is None:
            return queues_config(self.inventory, self.digest, cluster, pools, index, groups)
        was = {k: self.derived.planned[k] for k in first}
        tally = self.derived.tallies[cluster].copy()
        sites = {p.site.name for p in pools}
        dispatched = groups[1].get(cluster, set())
        cache: ReachCache = {}
        for w, placed in of_workload.items():
            if w in tally.reach:
                tally.remove(w, [(was[k], pl.gpus) for pl in self.placed_of.get(w, ()) if (k := (pl.site, pl.pool)) in was])
            if w in dispatched or any(pl.site in sites for pl in placed):
                mine = [(keys[k], pl.gpus) for pl in placed if (k := (pl.site, pl.pool)) in keys]
                tally.add(w, reach_of(self.inventory, index.tier_of[w], index.known.get(w), mine,
                                      cluster in groups[0] and w in dispatched, cache), mine)
        return queues_of_tally(self.inventory, self.digest, cluster, pools, index.known, groups, tally,
                               self.queue_of[cluster], of_workload)


class StackConfigMemo:
    """The first plan's stack configurations (a failover's applied plan, a drill's base plan), from which
    every later plan's are derived where they differ; and what is derived from those configurations.

    The memo holds the first plan, its inventory and its configurations, so no identity it compares
    can pass to another object meanwhile. `run_memo` (default: one of its own) keeps the delta of each
    plan from the first (placement_delta), which the run's other readers of the two plans share.
    """

    def __init__(self, run_memo: RunMemo | None = None) -> None:
        self.run_memo = RunMemo() if run_memo is None else run_memo
        self._base: _Base | None = None
        self._derived: dict[tuple[object, ...], object] = {}
        self._kept: set[int] = set()

    def stack_configs(self, inventory: Inventory, plan: Plan, digest: str, cat: Catalog) -> StackConfigs:
        base = self._base
        if base is None:
            derived = derive(inventory, plan, digest, cat)
            self._base = _Base(inventory, plan, digest, cat, derived)
            self._kept = {id(c) for c in (*derived.configs.gpu_pools, *derived.configs.queues)}
            return derived.configs
        if plan is base.plan and inventory is base.inventory and cat is base.cat and digest == base.digest:
            return base.derived.configs
        varied = (base.vary(plan, self.run_memo)
                  if inventory is base.inventory and cat is base.cat and digest == base.digest else None)
        return varied if varied is not None else derive(inventory, plan, digest, cat).configs

    @property
    def digest(self) -> str | None:
        """The plan digest the first plan's configurations are tagged with (None before a first plan)."""
        return None if self._base is None else self._base.digest

    def derived(self, config: object, key: tuple[object, ...], derive: Callable[[], T]) -> T:
        """What `derive` works out from `config` (and what `key` names), kept while `config` is one of the
        first plan's configurations: a later plan that reuses the configuration reuses it too."""
        if id(config) not in self._kept:
            return derive()
        full = (id(config), *key)
        if full not in self._derived:
            self._derived[full] = derive()
        return cast(T, self._derived[full])

    def placements_at(self, plan: Plan, sites: Collection[str]) -> Sequence[Placement] | None:
        """The placements of `plan` at `sites`, from the first plan's and the delta; None before a first plan."""
        base = self._base
        if base is None:
            return None
        delta = placement_delta(base.plan, plan, self.run_memo)
        return [pl for placed in base.placements_at(delta, sites).values() for pl in placed]
