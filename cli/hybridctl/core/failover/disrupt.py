"""Events applied to an inventory: the capacity, prices and reachable sites that are left.

The result is an ordinary Inventory, so the planner, the checker and every report work on
it unchanged. A pool with no capacity left stays in the inventory (its site's egress price
still prices data that lives there) but offers a GPU type that no workload asks for, so it is
eligible for nothing and no longer counts as a failure domain a fixed workload must span.
"""

from __future__ import annotations

import operator
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from hybridctl.core.failover.demand_cache import DemandCache
from hybridctl.core.failover.events import Event, EventKind, provider_sites
from hybridctl.core.inventory.models import Dataset, Inventory, Pool, Site, Workload, WorkloadType
from hybridctl.core.placement.eligibility import Demand, demands, pool_infos
from hybridctl.core.plan.model import Plan

_WORKLOAD, _SITE, _NAME, _DATASETS, _KEY = (attrgetter(a) for a in ("workload", "site", "name", "datasets", "key"))
NO_GPU = "no-capacity"  # the GPU type of a pool that has nothing left: no workload's request matches it


@dataclass(frozen=True)
class PoolChange:
    site: str
    pool: str
    gpu: str
    capacity_before: int
    capacity_after: int
    usd_per_gpu_hour_before: float
    usd_per_gpu_hour_after: float
    causes: tuple[str, ...]  # the events that changed it

    @property
    def lost(self) -> bool:
        return self.capacity_after == 0 < self.capacity_before


@dataclass(frozen=True)
class Disruption:
    """The inventory as the events leave it, and what they did."""

    events: tuple[Event, ...]
    inventory: Inventory
    lost_sites: frozenset[str]
    down_links: frozenset[str]
    pool_changes: tuple[PoolChange, ...]
    cut_off: Mapping[str, str]  # demand key -> why it cannot stay behind a link that is down
    # demand key -> why it cannot run at all: its data has no holder left, or it does not survive the loss of its
    # site (survives_site_loss: false); the disrupted inventory gives it no site to run at
    down: Mapping[str, str] = field(default_factory=dict)
    expected: frozenset[str] = frozenset()  # workloads whose loss is expected: survives_site_loss false, site lost
    # nothing new starts behind a down link: only these workloads, already running there, may run there
    staying_behind: frozenset[str] = frozenset()

    def barred(self, workload: Workload) -> Workload:
        """The workload as the planner must see it: without the sites behind a down link, unless it
        already runs there. Applied to the demands a replan places only (copying every workload of a
        fleet for each drill scenario would cost more than the replan)."""
        down = self.down_links
        if not down or workload.name in self.staying_behind or (
                workload.sites is not None and not down & set(workload.sites)):
            return workload
        return _without_sites(workload, down, [s.name for s in self.inventory.sites])

    def as_replanned(self, workloads: Collection[str]) -> Inventory:
        """The disrupted inventory with the named workloads as the replan saw them (barred, see above): what
        a failover plan that re-placed them is checked against.

        Behind a down link nothing new can start, so a spread over failure domains counts only the domains
        the workload could still reach; checked against the workloads unbarred, a replan that spread over
        those would be faulted for not reaching a site it may not start at. Only the re-placed workloads
        are barred: the others keep the applied plan's placements, already checked.
        """
        if not self.down_links:
            return self.inventory
        named = set(workloads)
        barred = [self.barred(w) if w.name in named else w for w in self.inventory.workloads]
        if all(map(operator.is_, barred, self.inventory.workloads)):
            return self.inventory
        return self.inventory.model_copy(update={"workloads": barred})

    def change_of(self, pool: str) -> PoolChange | None:
        for change in self.pool_changes:
            if change.pool == pool:
                return change
        return None

    @property
    def gpu_types(self) -> dict[str, str]:
        """pool -> its real GPU type (the disrupted inventory hides it for pools with nothing left)."""
        return {c.pool: c.gpu for c in self.pool_changes}


def link_need(demand: Demand, site: str) -> str | None:
    """Why a replica at `site` cannot run without the site's uplink, or None (edge autonomy)."""
    if demand.workload.type is WorkloadType.FEDERATED_TRAINING:
        return "federated training exchanges weights with the other trainers over the uplink"
    passes = demand.workload.data_passes_per_month
    for dataset in demand.remote_datasets:
        if dataset.site != site and dataset.size_gb * passes > 0:
            return f"it reads dataset {dataset.name} from {dataset.site}"
    return None


def _cut_off(inventory: Inventory, applied: Plan, down: Sequence[str],
             demand_cache: DemandCache | None) -> tuple[dict[str, str], dict[str, int]]:
    """Demands behind a down link that need it, and the GPUs per pool of those that stay."""
    # the placements behind the down links, picked out without a Python step per placement of a fleet
    behind = list(compress(applied.placements, map(set(down).__contains__, map(_SITE, applied.placements))))
    placed: dict[str, set[str]] = defaultdict(set)
    for placement in behind:
        placed[placement.demand or placement.workload].add(placement.site)
    cut: dict[str, str] = {}
    every = demand_cache.demands(inventory) if demand_cache is not None else demands(inventory)
    for demand in compress(every, map(placed.__contains__, map(_KEY, every))):
        for site in sorted(placed[demand.key]):
            need = link_need(demand, site)
            if need is not None:
                cut[demand.key] = f"the uplink of {site} is down and {need}"
                break
    staying: dict[str, int] = defaultdict(int)
    for placement in behind:
        if (placement.demand or placement.workload) not in cut:
            staying[placement.pool] += placement.gpus
    return cut, staying


def _without_sites(workload: Workload, excluded: frozenset[str], all_sites: Sequence[str]) -> Workload:
    allowed = workload.sites if workload.sites is not None else list(all_sites)
    return workload.model_copy(update={"sites": [s for s in allowed if s not in excluded]})


def disrupt(inventory: Inventory, events: Sequence[Event], applied: Plan,
            demand_cache: DemandCache | None = None) -> Disruption:
    """Apply the events, in order, to the inventory on which `applied` runs."""
    info = {p.name: p for p in pool_infos(inventory)}
    capacity = {name: p.capacity_gpus for name, p in info.items()}
    price = {name: p.usd_per_gpu_hour for name, p in info.items()}
    causes: dict[str, list[str]] = defaultdict(list)
    lost_sites: set[str] = set()
    down: list[str] = []
    for event in events:
        if event.kind in (EventKind.SITE_LOST, EventKind.PROVIDER_LOST):
            # provider-lost (revision 4): every site of the provider, each as a lost site
            lost = provider_sites(inventory, event.target) if event.kind is EventKind.PROVIDER_LOST else [event.target]
            lost_sites.update(lost)
            for site in inventory.sites:
                if site.name in lost:
                    for pool in site.pools:
                        capacity[pool.name] = 0
                        causes[pool.name].append(str(event))
        elif event.kind is EventKind.LINK_DOWN:
            if event.target not in down:
                down.append(event.target)
        elif event.kind in (EventKind.POOL_LOST, EventKind.SPOT_RECLAIM):
            capacity[event.target] = 0
            causes[event.target].append(str(event))
        elif event.kind is EventKind.CAPACITY:
            capacity[event.target] = event.capacity_after(capacity[event.target])
            causes[event.target].append(str(event))
        elif event.kind is EventKind.PRICE:
            price[event.target] = round(event.price_after(price[event.target]), 6)
            causes[event.target].append(str(event))

    down_links = [s for s in down if s not in lost_sites]
    cut, staying = _cut_off(inventory, applied, down_links, demand_cache) if down_links else ({}, {})
    for site in inventory.sites:
        if site.name in down_links:
            # nothing can be shipped to a site without its uplink: only what stays keeps its GPUs
            for pool in site.pools:
                kept = min(capacity[pool.name], staying.get(pool.name, 0))
                if kept != capacity[pool.name]:
                    capacity[pool.name] = kept
                    causes[pool.name].append(f"link-down {site.name}")

    def changed_pool(pool: Pool) -> Pool:
        update: dict[str, object] = {}
        if capacity[pool.name] != info[pool.name].capacity_gpus:
            update["gpus" if pool.gpus is not None else "max_gpus"] = capacity[pool.name]
        if capacity[pool.name] == 0:
            update["gpu"] = NO_GPU
        if price[pool.name] != info[pool.name].usd_per_gpu_hour:
            update["usd_per_gpu_hour"] = price[pool.name]
        return pool.model_copy(update=update) if update else pool

    def changed_site(site: Site) -> Site:
        pools = [changed_pool(p) for p in site.pools]
        return site if all(a is b for a, b in zip(pools, site.pools, strict=True)) else \
            site.model_copy(update={"pools": pools})

    sites = [changed_site(s) for s in inventory.sites]
    # a workload that is not already running behind a down link may not start there (Disruption.barred)
    staying_behind = frozenset(p.workload for p in compress(applied.placements, map(
        set(down_links).__contains__, map(_SITE, applied.placements))) if (p.demand or p.workload) not in cut)
    datasets, workloads, cannot_run, expected = _after_site_loss(inventory, inventory.workloads, applied,
                                                               frozenset(lost_sites))
    disrupted = inventory.model_copy(update={"sites": sites, "workloads": workloads, "datasets": datasets})
    changes = tuple(
        PoolChange(p.site.name, name, p.pool.gpu, p.capacity_gpus, capacity[name], p.usd_per_gpu_hour, price[name],
                   tuple(causes[name]))
        for name, p in info.items() if name in causes)
    return Disruption(tuple(events), disrupted, frozenset(lost_sites), frozenset(down_links), changes, cut,
                      cannot_run, expected, staying_behind)


def _after_site_loss(inventory: Inventory, workloads: list[Workload], applied: Plan, lost: frozenset[str]) -> tuple[
        list[Dataset], list[Workload], dict[str, str], frozenset[str]]:
    """The data that is left when sites are lost, and the workloads that cannot run for want of it.

    A lost site's datasets are unavailable until it returns: each dataset keeps the holders that
    are left (the first becomes its primary, so replanning reads from them and never from a lost
    site). A workload reading a dataset with no holder left is down ("data unavailable"), and so
    is a federated trainer whose data lived at a lost site (it never uses copies); the other
    trainers go on. A workload that does not survive the loss of its site (survives_site_loss:
    false) stays where it still runs and starts nowhere else.
    """
    # lists the events leave as they were are kept as the very objects: what reads a fleet's lists by
    # identity (nameindex.py, the checker's delta) then knows them at once
    if not lost:
        return inventory.datasets, workloads, {}, frozenset()
    datasets: list[Dataset] = []
    gone: dict[str, Dataset] = {}
    for dataset in inventory.datasets:
        left = [h for h in dataset.holders if h not in lost]
        if len(left) == len(dataset.holders):
            datasets.append(dataset)
            continue
        if not left:
            gone[dataset.name] = dataset
        # a dataset with no holder keeps its record (its readers are down): only its copies go
        datasets.append(dataset.model_copy(update={"site": left[0], "copies": left[1:]}) if left
                        else dataset.model_copy(update={"copies": []}))
    if all(map(operator.is_, datasets, inventory.datasets)):
        datasets = inventory.datasets
    by_name = {d.name: d for d in inventory.datasets}
    # only work that ran at a lost site or reads data held there is looked at, picked out without a
    # Python step per placement or workload of a fleet; the rest is kept as it is
    touched = {d.name for d in inventory.datasets if not lost.isdisjoint(d.holders)}
    affected = set(map(_WORKLOAD, compress(applied.placements, map(lost.__contains__, map(_SITE, applied.placements)))))
    affected |= set(map(_NAME, compress(workloads, map(operator.not_, map(touched.isdisjoint,
                                                                          map(_DATASETS, workloads))))))
    ran_at: dict[str, set[str]] = defaultdict(set)
    for placement in compress(applied.placements, map(affected.__contains__, map(_WORKLOAD, applied.placements))):
        ran_at[placement.workload].add(placement.site)
    down: dict[str, str] = {}
    expected: set[str] = set()
    result = list(workloads)
    for position in compress(range(len(result)), map(affected.__contains__, map(_NAME, result))):
        workload = result[position]
        read = [by_name[n] for n in workload.datasets if n in by_name]
        if workload.type is WorkloadType.FEDERATED_TRAINING:
            # one trainer per primary site, and copies are not used: a trainer whose data site is lost is down
            lost_here = [d for d in read if d.site in lost]
            for d in lost_here:
                down[f"{workload.name}@{d.site}"] = (f"data unavailable: the trainer's dataset {d.name} lives at "
                                                     f"{d.site}, which is lost (federated training uses no copies)")
            if lost_here:
                keep = [n for n in workload.datasets if n not in {d.name for d in lost_here}]
                result[position] = workload.model_copy(update={"datasets": keep})
            continue
        missing = [d for d in read if d.name in gone]
        # the sites it depends on: where it runs, and where its data lives
        lost_sites_of_it = sorted((ran_at.get(workload.name, set()) | {h for d in read for h in d.holders}) & lost)
        if missing:
            d = missing[0]
            down[workload.name] = (f"data unavailable: every holder of dataset {d.name} "
                                   f"({', '.join(d.holders)}) is lost")
            workload = workload.model_copy(update={"sites": []})
        elif not workload.survives_site_loss and lost_sites_of_it:
            stays = sorted(ran_at[workload.name] - lost)
            if workload.sites is not None:
                stays = [s for s in stays if s in workload.sites]
            if not stays:
                down[workload.name] = (f"expected: it does not survive the loss of {', '.join(lost_sites_of_it)} "
                                       "(survives_site_loss: false)")
            workload = workload.model_copy(update={"sites": stays})
        if lost_sites_of_it and not workload.survives_site_loss:
            expected.add(workload.name)
        result[position] = workload
    if all(map(operator.is_, result, workloads)):
        return datasets, workloads, down, frozenset(expected)
    return datasets, result, down, frozenset(expected)
