"""Demands of many disrupted copies of one inventory, each workload's worked out once (drills).

A drill replans hundreds of scenarios of one fleet. A disrupted inventory (disrupt.py) keeps
the very Workload and Dataset objects of the inventory except those the events change, so a
workload's demands can be reused whenever the workload, the datasets it reads and the policies
are the same objects as when they were worked out: eligibility.demands() reads nothing else.
The cache holds those objects, so an identity cannot be reused by another object.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Collection, Sequence
from itertools import accumulate, compress
from operator import attrgetter
from typing import TYPE_CHECKING

from hybridctl.core.inventory.models import Dataset, Inventory, Policies, Pool, Workload
from hybridctl.core.placement.eligibility import Demand, PoolInfo, demands
from hybridctl.core.placement.movements import data_movements
from hybridctl.core.placement.planner import WorkloadFacts
from hybridctl.core.placement.tiers import classify_workload
from hybridctl.core.plan.delta import by_pool_and_workload
from hybridctl.core.plan.model import DataMovement, Placement, Plan, PoolUsage
from hybridctl.core.pricing.pools import pool_usage
from hybridctl.core.replaced import replaced

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo

_Known = tuple[Workload, tuple[Dataset, ...], Policies, tuple[Demand, ...]]


class DemandCache:
    def __init__(self) -> None:
        self._known: dict[int, _Known] = {}
        self.movements = MovementMemo()  # shared by the scenarios' replans, as the demands are
        self.usage = UsageMemo()
        # the first inventory's workloads, datasets, policies and demands: a disrupted copy keeps most of those
        # objects (all of them but after a site loss), and gets its demands without a look at each workload
        self._first: tuple[list[Workload], list[Dataset], Policies, list[Demand]] | None = None
        self._first_offsets: list[int] = []  # where each of the first inventory's workloads' demands start
        self._first_tiers: tuple[list[Workload], Policies, dict[str, str]] | None = None
        self._first_facts: tuple[list[Workload], WorkloadFacts] | None = None

    def demands(self, inventory: Inventory) -> list[Demand]:
        """What eligibility.demands(inventory) returns, in the same order."""
        first = self._first
        if first is None:
            found = self._worked_out(inventory)
            self._first = (list(inventory.workloads), list(inventory.datasets), inventory.policies, list(found))
            self._first_offsets = list(accumulate((len(self._known[id(w)][3]) for w in inventory.workloads),
                                                  initial=0))
            return found
        positions = self._changed_positions(inventory)
        if positions is None:
            return self._worked_out(inventory)
        if not positions:
            return list(first[3])
        # the first inventory's demands, with the changed workloads' spliced in: a site loss changes a few
        workloads, before, offsets = inventory.workloads, first[3], self._first_offsets
        self._fill(inventory, [workloads[i] for i in positions])
        spliced: list[Demand] = []
        start = 0
        for i in positions:
            spliced += before[offsets[start]:offsets[i]]
            spliced += self._known[id(workloads[i])][3]
            start = i + 1
        spliced += before[offsets[start]:]
        return spliced

    def _changed_positions(self, inventory: Inventory) -> list[int] | None:
        """Where the workloads' demands may differ from the first inventory's: a workload that is not the very
        same object, or that reads a dataset that is not; None when the two are not alike enough to tell."""
        assert self._first is not None
        workloads, datasets, policies, _ = self._first
        if policies is not inventory.policies or len(workloads) != len(inventory.workloads) \
                or len(datasets) != len(inventory.datasets):
            return None
        differ = list(map(operator.is_not, workloads, inventory.workloads))
        changed = replaced(datasets, inventory.datasets)
        if changed is None:
            return None
        if changed:
            names = {dataset.name for dataset in changed}
            reads = map(operator.not_, map(names.isdisjoint, map(_DATASETS, inventory.workloads)))
            differ = list(map(operator.or_, differ, reads))
        return list(compress(range(len(differ)), differ))

    def tiers(self, inventory: Inventory, demands_: Sequence[Demand]) -> dict[str, str]:
        """What workload_tiers(inventory, demands_) returns, for `demands_` = self.demands(inventory): a tier
        reads the workload and the policies alone, so only workloads that are not the very objects of the
        first inventory are looked at."""
        first = self._first_tiers
        if first is None:
            tiers = workload_tiers(inventory, demands_)
            self._first_tiers = (list(inventory.workloads), inventory.policies, tiers)
            return dict(tiers)
        changed = replaced(first[0], inventory.workloads)
        if changed is None or first[1] is not inventory.policies:
            return workload_tiers(inventory, demands_)
        tiers = dict(first[2])
        if changed:
            names = {w.name for w in changed}
            theirs = list(compress(demands_, map(names.__contains__, map(_WORKLOAD_NAME, demands_))))
            # tiers holds every workload, each changed one is looked up again
            tiers |= workload_tiers(inventory.model_copy(update={"workloads": changed}), theirs)
        return tiers

    def facts(self, inventory: Inventory) -> WorkloadFacts:
        """What WorkloadFacts.of(inventory) gives, looking only at the workloads that are not the very
        objects of the first inventory's."""
        first = self._first_facts
        if first is None:
            facts = WorkloadFacts.of(inventory)
            self._first_facts = (list(inventory.workloads), facts)
            return facts
        changed = replaced(first[0], inventory.workloads)
        if changed is None:
            return WorkloadFacts.of(inventory)
        if not changed:
            return first[1]
        fresh = WorkloadFacts.of(inventory, changed)
        teams = {name: team for name, team in first[1].teams.items() if name not in fresh.types}
        return WorkloadFacts(first[1].types | fresh.types, teams | fresh.teams)

    def _worked_out(self, inventory: Inventory) -> list[Demand]:
        self._fill(inventory, inventory.workloads)
        return [d for w in inventory.workloads for d in self._known[id(w)][3]]

    def _fill(self, inventory: Inventory, workloads: Sequence[Workload]) -> None:
        """Work out the demands of those of `workloads` that the cache does not hold."""
        datasets = {d.name: d for d in inventory.datasets}
        reads = {id(w): tuple(datasets[n] for n in w.datasets if n in datasets) for w in workloads}
        missing = [w for w in workloads if not self._fits(w, reads[id(w)], inventory.policies)]
        if missing:
            fresh: dict[str, list[Demand]] = defaultdict(list)
            for demand in demands(inventory.model_copy(update={"workloads": missing})):
                fresh[demand.workload.name].append(demand)
            for w in missing:
                self._known[id(w)] = (w, reads[id(w)], inventory.policies, tuple(fresh[w.name]))

    def _fits(self, workload: Workload, read: tuple[Dataset, ...], policies: Policies) -> bool:
        known = self._known.get(id(workload))
        return (known is not None and known[0] is workload and known[2] is policies and len(known[1]) == len(read)
                and all(a is b for a, b in zip(known[1], read, strict=True)))


class MovementMemo:
    """Each workload's data movements, for the same demands (the very objects) at the same sites.

    A replan re-places a few workloads and pins the rest: the movements of the pinned ones are
    those the last replan worked out. A demand's movements depend on its datasets (held by the
    Demand, which the memo keeps, so that its identity stays its own), the sites it runs at and
    the sites' egress prices, which no event changes (they are part of the key all the same).
    """

    def __init__(self) -> None:
        self._known: dict[tuple[object, ...], tuple[tuple[Demand, ...], list[DataMovement]]] = {}
        self._egress: dict[tuple[tuple[str, float], ...], int] = {}  # the sites' egress prices, numbered
        # the first call's demands, placements and result: a later call differs from it in a few workloads
        self._first: tuple[int, list[Demand], Sequence[Placement], set[int], list[DataMovement]] | None = None

    def movements(self, inventory: Inventory, demands_: Sequence[Demand], placements: Sequence[Placement],
                  like: Sequence[DataMovement] = (),
                  since: tuple[Sequence[Placement], Collection[str]] | None = None) -> list[DataMovement]:
        """What plan.movements.data_movements(inventory, demands_, placements) gives.

        `like`: movements made before (a drill's base plan's). A workload's that equal what is worked out
        here are kept as those very objects, so that plans sharing them can be told apart by identity
        (checker/delta.py). `since`: (earlier placements, workloads): `placements` are the earlier ones
        (the very objects) but for those of these workloads; saves finding the others out one by one.
        """
        egress = self._egress.setdefault(tuple((s.name, s.egress_usd_per_gb) for s in inventory.sites),
                                         len(self._egress))
        first = self._first
        if first is None or first[0] != egress or len(first[1]) != len(demands_):
            found = self._worked_out(inventory, egress, demands_, placements, like)
            if first is None:
                self._first = (egress, list(demands_), tuple(placements), set(map(id, placements)), found)
            return found
        # the first call's movements, but those of the workloads whose demands (the very objects) or
        # placements differ from its own, which are worked out (each from the memo where it can)
        _, before, placed, placed_ids, found = first
        if since is not None and since[0] is placed:
            changed = set(since[1])
        else:
            now_ids = set(map(id, placements))
            changed = set(map(_WORKLOAD, compress(placements, map(operator.not_, map(placed_ids.__contains__,
                                                                                      map(id, placements))))))
            changed |= set(map(_WORKLOAD, compress(placed, map(operator.not_, map(now_ids.__contains__,
                                                                                   map(id, placed))))))
        differ = list(map(operator.is_not, before, demands_))
        changed |= set(map(_WORKLOAD_NAME, compress(before, differ))) | set(map(_WORKLOAD_NAME,
                                                                                compress(demands_, differ)))
        if not changed:  # a replan that placed nothing anew
            return list(found)
        kept = compress(found, map(operator.not_, map(changed.__contains__, map(_WORKLOAD, found))))
        theirs = list(compress(demands_, map(changed.__contains__, map(_WORKLOAD_NAME, demands_))))
        fresh = self._worked_out(inventory, egress, theirs, list(compress(
            placements, map(changed.__contains__, map(_WORKLOAD, placements)))), like)
        return sorted([*kept, *fresh], key=_MOVEMENT_ORDER)

    def _worked_out(self, inventory: Inventory, egress: int, demands_: Sequence[Demand],
                    placements: Sequence[Placement], like: Sequence[DataMovement]) -> list[DataMovement]:
        # a demand that reads nothing from elsewhere moves no data wherever it runs (most of a fleet):
        # only the readers and their placements are looked at, picked out without a Python step each
        readers = list(compress(demands_, map(_REMOTE, demands_)))
        reading = {d.workload.name for d in readers}
        theirs = list(compress(placements, map(reading.__contains__, map(_WORKLOAD, placements))))
        sites_of: dict[str, set[str]] = defaultdict(set)
        for placement in theirs:
            if placement.replicas > 0:
                sites_of[placement.demand or placement.workload].add(placement.site)
        by_workload: dict[str, list[Demand]] = defaultdict(list)
        for demand in readers:
            by_workload[demand.workload.name].append(demand)
        found: list[DataMovement] = []
        missing: dict[tuple[object, ...], tuple[Demand, ...]] = {}
        for workload_demands in by_workload.values():
            key: tuple[object, ...] = (egress, *((id(d), frozenset(sites_of.get(d.key, ()))) for d in workload_demands))
            known = self._known.get(key)
            if known is None:
                missing[key] = tuple(workload_demands)
            else:
                found += known[1]
        if missing:
            keys = {d.key for ds in missing.values() for d in ds}
            fresh: dict[str, list[DataMovement]] = defaultdict(list)
            for movement in data_movements(inventory, [d for ds in missing.values() for d in ds],
                                           [p for p in theirs if (p.demand or p.workload) in keys]):
                fresh[movement.workload].append(movement)
            made: dict[str, list[DataMovement]] = defaultdict(list)
            for movement in like:
                made[movement.workload].append(movement)
            for name, movements in made.items():
                if fresh.get(name) == movements:
                    fresh[name] = movements
            for new_key, ds in missing.items():
                self._known[new_key] = (ds, fresh[ds[0].workload.name])
                found += fresh[ds[0].workload.name]
        return sorted(found, key=_MOVEMENT_ORDER)


class UsageMemo:
    """Each pool's usage (pool_usage) by the applied plan's placements on it, for a replan that pins them all.

    A replan pins the placements of most work (scope.py) and counts what they use of each pool.
    A pool's usage reads its PoolInfo and the placements on it alone: in a pool that holds no free
    work, those are the applied plan's, for every scenario of a drill. Kept for the first applied
    plan the memo sees (the base plan), whose placements are grouped by pool once (by_pool_and_workload).
    """

    def __init__(self) -> None:
        self._applied: Plan | None = None
        self._known: dict[tuple[object, ...], tuple[Pool, PoolUsage]] = {}

    def pinned(self, pools: Sequence[PoolInfo], applied: Plan, free_workloads: Collection[str],
               pinned: Sequence[Placement], unpinned: Sequence[Placement],
               run_memo: RunMemo | None = None, segments: Sequence[float] = ()) -> tuple[PoolUsage, ...]:
        """What pool_usage(pools, pinned, segments) gives, for `pinned`: the applied placements of the workloads
        that are not free; `unpinned`: those of the free ones; `segments`: the hours of the segments of the
        applied plan's week. `run_memo` keeps the applied placements by pool."""
        if self._applied is None:
            self._applied = applied
        if self._applied is not applied:
            return pool_usage(pools, pinned, segments)
        on_pools = by_pool_and_workload(applied.placements, run_memo)[0]
        freed = set(map(_POOL, unpinned))
        # the pinned placements on those pools, each pool's in the applied order (its sums add up alike)
        staying = [pl for name in freed for pl in on_pools.get(name, ()) if pl.workload not in free_workloads]
        fresh = {u.pool: u for u in pool_usage([p for p in pools if p.name in freed], staying, segments)}
        usage: list[PoolUsage] = []
        for p in pools:
            counted = fresh.get(p.name)
            if counted is None:
                key = (id(p.pool), p.site.name, p.usd_per_gpu_hour, p.capacity_gpus, p.gpus_per_node, p.committed)
                known = self._known.get(key)
                if known is None:
                    known = self._known[key] = (p.pool, pool_usage([p], on_pools.get(p.name, ()), segments)[0])
                counted = known[1]
            usage.append(counted)
        return tuple(usage)


def workload_tiers(inventory: Inventory, demands: Sequence[Demand]) -> dict[str, str]:
    """Each workload's tier, as its demands were classified (a workload with none left is classified here)."""
    of_demands = {d.workload.name: d.tier.value for d in demands}
    policies = inventory.policies
    return {w.name: of_demands.get(w.name) or classify_workload(w, policies).tier.value for w in inventory.workloads}


_WORKLOAD_NAME = attrgetter("workload_name")
_DATASETS = attrgetter("datasets")
_REMOTE = attrgetter("remote_datasets")
_WORKLOAD = attrgetter("workload")
_POOL = attrgetter("pool")
_MOVEMENT_ORDER = attrgetter("workload", "dataset", "to_site")  # data_movements' order
