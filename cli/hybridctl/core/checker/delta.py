"""Checking a plan that differs from a checked one in a few places: the parts whose inputs changed.

A drill checks hundreds of failover plans of one fleet. Each is the base plan with a few
workloads moved, on the base inventory with a few pools, datasets or workloads changed — and the
replan keeps everything else as the very same objects. The checker's verdict is kept by workload
and by pool, each part reading what its docstring in check.py lists; here, every part one of
whose inputs is not the very same object as before (or, for the few inputs a replan rebuilds,
not equal to it) is named, and checked again. The others keep their verdict. Anything this does
not follow (other policies, sites changed beyond their pools, renamed entries) is checked whole.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from itertools import chain, compress
from operator import attrgetter
from typing import TYPE_CHECKING

from hybridctl.core.checker.check import PlacementMemo, PlanCheck, check, recheck
from hybridctl.core.inventory.models import Inventory, Site
from hybridctl.core.plan.delta import by_pool_and_workload, placement_delta
from hybridctl.core.plan.model import Plan
from hybridctl.core.replaced import N, not_in, replaced

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo

_NAME = attrgetter("name")
_DATASETS = attrgetter("datasets")
_WORKLOAD = attrgetter("workload")
_POOL = attrgetter("pool")


def check_changes(reference: PlanCheck, inventory: Inventory, plan: Plan,
                  memo: PlacementMemo | None = None, run_memo: RunMemo | None = None) -> PlanCheck:
    """What check(inventory, plan, memo) gives, checking again only the parts that differ from `reference`."""
    parts = changed_parts(reference, inventory, plan, run_memo)
    if parts is None:
        return check(inventory, plan, memo, run_memo)
    workloads, pools = parts
    return recheck(reference, inventory, plan, workloads, pools, memo, run_memo)


def changed_parts(reference: PlanCheck, inventory: Inventory, plan: Plan,
                  run_memo: RunMemo | None = None) -> tuple[set[str], set[str]] | None:
    """The workloads and pools whose verdict may differ from `reference`'s; None when the inventories differ
    in a way not followed here. `run_memo` keeps the plans' delta and the reference plan's index."""
    before, old = reference.inventory, reference.plan
    if inventory.policies is not before.policies and inventory.policies != before.policies:
        return None
    changed_workloads = _changed(before.workloads, inventory.workloads)
    changed_datasets = _changed(before.datasets, inventory.datasets)
    if changed_workloads is None or changed_datasets is None:
        return None
    if list(map(_NAME, before.sites)) != list(map(_NAME, inventory.sites)):
        return None
    changed_pools: set[str] = set()
    for was, now in zip(before.sites, inventory.sites, strict=True):
        if was is now:
            continue
        if not _same_but_pools(was, now):
            return None  # a site's rules (its kind, egress, latency, domains...) read by every part placed there
        found = _changed(was.pools, now.pools)
        if found is None:
            return None
        changed_pools |= set(found)
    workloads = set(changed_workloads)
    if changed_datasets:
        # a placement's rules and a workload's data costs read its datasets
        readers = map(operator.not_, map(changed_datasets.isdisjoint, map(_DATASETS, inventory.workloads)))
        workloads |= set(map(_NAME, compress(inventory.workloads, readers)))
    pools = set(changed_pools)
    delta = placement_delta(old, plan, run_memo)
    for placement in chain(delta.removed, delta.added):
        workloads.add(placement.workload)
        pools.add(placement.pool)
    # the plan's placements are the reference's, less delta.removed, plus delta.added (named above): those
    # on the changed pools, or of the changed workloads, are the reference's, found from its index
    on_pool, of_workload = by_pool_and_workload(old.placements, run_memo)
    if changed_pools:
        # a placement's rules read its pool; a spread's slow path read every pool
        workloads |= {pl.workload for pool in changed_pools for pl in on_pool.get(pool, ())}
        workloads |= reference.searched
    if changed_workloads:
        # a pool's machines read its workloads' hours
        pools |= {pl.pool for name in changed_workloads for pl in of_workload.get(name, ())}
    # a replan rebuilds its unplaced entries and pool reports: compared by value
    was_unplaced = {u.demand or u.workload: u.replicas for u in old.unplaced}
    now_unplaced = {u.demand or u.workload: u.replicas for u in plan.unplaced}
    workloads |= {key.split("@", 1)[0] for key in was_unplaced.keys() ^ now_unplaced.keys()}
    workloads |= {key.split("@", 1)[0] for key in was_unplaced.keys() & now_unplaced.keys()
                  if was_unplaced[key] != now_unplaced[key]}
    was_reported = {u.pool: u for u in old.pools}
    pools |= {u.pool for u in plan.pools if was_reported.get(u.pool) != u}
    pools |= was_reported.keys() - {u.pool for u in plan.pools}
    # data movements: mostly the very objects, else worked out again alike (compared by value then)
    movements = set(not_in(old.data_movements, plan.data_movements)) ^ set(not_in(plan.data_movements,
                                                                                 old.data_movements))
    workloads |= set(map(_WORKLOAD, movements))
    return workloads, pools


def _changed(was: Sequence[N], now: Sequence[N]) -> set[str] | None:
    """The names of the entries that are not the very same objects; None when the names or order differ."""
    changed = replaced(was, now)
    return None if changed is None else {entry.name for entry in changed}


def _same_but_pools(was: Site, now: Site) -> bool:
    return all(getattr(was, field) == getattr(now, field) for field in Site.model_fields if field != "pools")
