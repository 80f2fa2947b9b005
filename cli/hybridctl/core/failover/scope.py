"""The part of the fleet a failover replans; everything else keeps its applied placement verbatim.

A failover must move only what must move. Work whose pools the events did not touch would
stay anyway under the strong stability term, so it is pinned: its GPUs are taken off the pools'
capacity and the planner sees only the free demands — those with a replica on a pool whose
capacity fell or whose price changed, those cut off behind a down link, and the fixed and burst
work the applied plan left short (the opportunistic work it left unplaced only when the events
make room, or change a pool of a GPU type it needs). Solving the affected part alone is what
makes a failover of a fleet of 10,000 workloads fast. The scope widens once, to the pinned work
on the pools where moving it could pay: pools that free work left short could use (moving pinned
work makes room), and pools where moved work would save more than the move threshold (a cheaper
survival).
"""

from __future__ import annotations

import dataclasses
import operator
from bisect import insort
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from hybridctl.core.failover.demand_cache import MovementMemo, UsageMemo, workload_tiers
from hybridctl.core.failover.disrupt import Disruption, PoolChange
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo, PriceCap
from hybridctl.core.placement.movements import data_movements
from hybridctl.core.placement.planner import PlanOptions, WorkloadFacts, plan
from hybridctl.core.placement.tiers import Tier
from hybridctl.core.placement.timed_plan import plan_segments, plan_week
from hybridctl.core.plan.delta import PlacementDelta, remember
from hybridctl.core.plan.model import Placement, Plan, PoolUsage
from hybridctl.core.pricing.pools import pool_usage
from hybridctl.core.pricing.rates import usd_per_gpu_hour_for
from hybridctl.core.pricing.totals import compute_usd_per_month, data_usd_per_month
from hybridctl.core.week.segments import IsoWeek, Week, WeekError, parse_iso_week

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo


def key_of(placement_demand: str, workload: str) -> str:
    return placement_demand or workload


@dataclass(frozen=True)
class Placed:
    """A pass's placement of the free work (`free`, the planner's plan of it), and what putting the pinned
    work back around it takes."""

    free: Plan
    pinned: list[Placement]
    unpinned: tuple[Placement, ...]  # the applied placements of the free work
    pinned_usage: Sequence[PoolUsage]
    demands: Sequence[Demand]  # every demand, in the shapes placed
    whole: bool  # nothing is pinned: `free` is the whole plan


@dataclass(frozen=True)
class Scope:
    inventory: Inventory  # the disrupted inventory
    demands: tuple[Demand, ...]  # all of them, in inventory order
    pools: tuple[PoolInfo, ...]  # the disrupted inventory's pools, full capacity
    applied: Plan
    free: frozenset[str]  # demand keys the planner places; the others are pinned
    disruption: Disruption
    movements: MovementMemo | None = None  # the pinned work's data movements, kept from pass to pass
    # each workload's tier, as its demands were classified (worked out once for all of a replan's passes)
    tiers: Mapping[str, str] = field(default_factory=dict)
    usage: UsageMemo | None = None  # the pinned work's use of the pools it holds alone, kept from scenario to scenario
    facts: WorkloadFacts | None = None  # the plan's record of every workload, worked out once for all passes
    # the run's memo: told the delta each assembled plan makes (delta.remember); keeps the applied placements by pool
    run_memo: RunMemo | None = field(default=None, compare=False, repr=False)

    @staticmethod
    def initial(disruption: Disruption, demands: Sequence[Demand], pools: Sequence[PoolInfo],
                applied: Plan, movements: MovementMemo | None = None, tiers: Mapping[str, str] | None = None,
                usage: UsageMemo | None = None, facts: WorkloadFacts | None = None,
                stale: Collection[str] = (), run_memo: RunMemo | None = None, *,
                week: IsoWeek | None = None) -> Scope:
        """`stale`: workloads whose applied placements the inventory no longer supports (failover/stale.py);
        `week`: the replan's (replan_week; needed when the inventory has a schedule)."""
        changes = disruption.pool_changes
        touched = {c.pool for c in changes
                   if c.capacity_after < c.capacity_before or c.usd_per_gpu_hour_after != c.usd_per_gpu_hour_before}
        free = {key_of(p.demand, p.workload) for p in _on_pools(applied.placements, touched)}
        free |= set(disruption.cut_off) | set(disruption.down)
        free |= _unplaced_in_play(applied, changes, demands)
        if stale:
            free |= {key_of(p.demand, p.workload) for p in applied.placements if p.workload in stale}
        free = _whole_workloads(free, demands)
        timed = week_of_replan(disruption.inventory, applied, week)
        if timed is not None:
            free = _timed_scope(free, timed, disruption.inventory, demands, pools, applied)
        return Scope(disruption.inventory, tuple(demands), tuple(pools), applied,
                     frozenset(free), disruption, movements,
                     workload_tiers(disruption.inventory, demands) if tiers is None else tiers, usage,
                     facts or WorkloadFacts.of(disruption.inventory), run_memo)

    def widened(self, result: Plan, short: Iterable[str], move_threshold_usd: float) -> Scope:
        """Free the pinned work on the pools where moving it could pay: room for short work, or a saving
        on moved work larger than the move threshold (anything less cannot pay for the move).

        `result`: this scope's plan, or only its free work's (Placed.free), which holds the same placements
        of the free work."""
        if not self.free:  # nothing was placed, so nothing is short and nothing moved
            return self
        index = EligibilityIndex(self.inventory, list(self.pools))
        short = set(short)
        by_key = {d.key: d for d in demands_of(self.demands, self.free | short)}
        wanted: set[int] = set()
        for key in short:
            if key in by_key:
                wanted.update(index.eligible(by_key[key]))
        price = {p.name: p.usd_per_gpu_hour for p in self.pools}
        floor = min(price.values(), default=0.0)
        dearest: dict[str, float] = {}  # free demand -> the dearest pool it was placed in
        for placement in compress(result.placements, map(self.free_workloads.__contains__,
                                                          map(_WORKLOAD, result.placements))):
            key = key_of(placement.demand, placement.workload)
            if key in self.free:
                dearest[key] = max(dearest.get(key, 0.0), price[placement.pool])
        for key, paid in dearest.items():
            demand = by_key[key]
            # below this price, one replica saves more than the move threshold
            cheaper_than = paid - usd_per_gpu_hour_for(demand, move_threshold_usd)
            if cheaper_than > floor:  # else no pool is cheaper: its eligibility need not be worked out
                wanted.update(p for p in index.eligible(demand) if self.pools[p].usd_per_gpu_hour < cheaper_than)
        if not wanted:
            return self
        names = {self.pools[p].name for p in wanted}
        extra = {key_of(p.demand, p.workload) for p in _on_pools(self.applied.placements, names)}
        return dataclasses.replace(self, free=frozenset(_whole_workloads(self.free | extra, self.demands)))

    @cached_property
    def free_workloads(self) -> set[str]:
        """The workloads of the free demands."""
        return workloads_of(self.free)

    @property
    def segment_hours(self) -> tuple[float, ...]:
        """The hours of each segment of the applied plan's week (the replan's: week_of_replan); () untimed."""
        return tuple(s.hours for s in self.applied.segments)

    @property
    def everything(self) -> bool:
        return len(self.free) >= len(self.demands)

    def plan(self, options: PlanOptions, shaped: Mapping[str, Demand] | None = None) -> Plan:
        """Place the free demands (in the shapes given) around the pinned ones; a whole plan comes back."""
        return self.assemble(self.place(options, shaped))

    def place(self, options: PlanOptions, shaped: Mapping[str, Demand] | None = None) -> Placed:
        """The free demands (in the shapes given) placed around the pinned ones, which are not yet put back:
        enough to tell what is short (a pass that widens the scope is never assembled)."""
        shaped = shaped or {}
        # by workload: a federated trainer that lost its data site has no demand any more, and must not stay pinned
        free_workloads = self.free_workloads
        # which applied placements are free work's, told apart without a Python step per placement of a fleet
        applied = self.applied.placements
        of_free = list(map(free_workloads.__contains__, map(_WORKLOAD, applied)))
        pinned = list(compress(applied, map(operator.not_, of_free)))
        unpinned = tuple(compress(applied, of_free))
        caps = self.price_caps(unpinned)
        free = [self._capped(self._barred(shaped.get(d.key, d)), caps) for d in demands_of(self.demands, self.free)]
        # a committed pool counts GPUs; a pay-per-use pool's quota counts the whole machines the pinned
        # replicas run (free always-on work is rounded up on machines of its own: never over quota)
        segments = self.segment_hours
        pinned_usage = (pool_usage(self.pools, pinned, segments) if self.usage is None
                        else self.usage.pinned(self.pools, self.applied, free_workloads, pinned, unpinned,
                                               self.run_memo, segments))
        taken = {u.pool: u.used_gpus if u.committed else u.machines * u.gpus_per_node for u in pinned_usage}
        residual = [dataclasses.replace(p, capacity_gpus=max(0, p.capacity_gpus - taken.get(p.name, 0)),
                                        held_gpus=min(p.capacity_gpus, taken.get(p.name, 0)))
                    for p in self.pools]
        # the stability term concerns the free demands alone: the pinned placements need not be read again
        previous = dataclasses.replace(self.applied, placements=unpinned)
        # the failover plan is the plan of the inventory (under these events) the applied plan was made from:
        # it carries that inventory's digest (hashing a fleet's disrupted copy for each pass would be wasted)
        # (and the tiers its demands already carry)
        partial = plan(self.inventory, previous=previous, options=options, pools=residual, planned_demands=free,
                       digest=self.applied.inventory_digest or None, tiers=dict(self.tiers), facts=self.facts)
        return Placed(partial, pinned, unpinned, pinned_usage,
                      [shaped.get(d.key, d) for d in self.demands] if shaped else self.demands,
                      whole=not pinned and len(free) == len(self.demands))

    def assemble(self, placed: Placed) -> Plan:
        """The whole plan: the free work as placed, and the pinned work put back around it."""
        partial, pinned, unpinned = placed.free, placed.pinned, placed.unpinned
        if placed.whole:
            return partial
        # with nothing placed, every applied placement is pinned: the very tuple, in order, so that
        # the identity passes downstream (delta, checker, steps) find nothing changed at once
        if not partial.placements and len(pinned) == len(self.applied.placements):
            placements = self.applied.placements
        else:
            placements = _merged(pinned, partial.placements)
            # what changed is known here: the applied placements of the free work went, the planner's came
            if self.run_memo is not None:
                remember(PlacementDelta(self.applied.placements, placements, unpinned, partial.placements),
                         self.run_memo)
        unplaced = sorted([*partial.unplaced, *(u for u in self.applied.unplaced
                                                if u.workload not in self.free_workloads)],
                          key=lambda u: (u.workload, u.demand))
        # a pool's usage depends on its own placements alone: only the pools the free work went to change
        touched = {p.pool for p in partial.placements}
        fresh = {u.pool: u for u in pool_usage([p for p in self.pools if p.name in touched],
                                                list(_on_pools(placements, touched)), self.segment_hours)}
        pools = tuple(fresh.get(u.pool, u) for u in placed.pinned_usage)
        demands = placed.demands
        movements = (self.movements.movements(self.inventory, demands, placements,
                                              since=(self.applied.placements, self.free_workloads))
                     if self.movements is not None else data_movements(self.inventory, demands, placements))
        return dataclasses.replace(
            partial, placements=placements, unplaced=tuple(unplaced), data_movements=tuple(movements),
            pools=pools, compute_usd_per_month=compute_usd_per_month(placements),
            data_usd_per_month=data_usd_per_month(movements))

    def price_caps(self, unpinned: Iterable[Placement]) -> dict[str, PriceCap]:
        """The spec's policies.failover_max_price_ratio: each free burst or opportunistic demand that ran in the
        applied plan (`unpinned`: its placements) may use only pools at most the ratio times the rate it paid
        there (its dearest pool's, at the applied plan's prices); dearer pools are not eligible to it, so the
        planner leaves it waiting and says why. Fixed work is never held back by it."""
        ratio = self.inventory.policies.failover_max_price_ratio
        price = {u.pool: u.usd_per_gpu_hour for u in self.applied.pools}
        paid: dict[str, float] = {}
        for p in unpinned:
            if p.tier in _HELD_BACK_BY_PRICE and p.pool in price:
                key = key_of(p.demand, p.workload)
                paid[key] = max(paid.get(key, 0.0), price[p.pool])
        return {key: PriceCap(ratio, rate) for key, rate in paid.items()}

    @staticmethod
    def _capped(demand: Demand, caps: Mapping[str, PriceCap]) -> Demand:
        cap = caps.get(demand.key)
        return demand if cap is None or demand.tier is Tier.FIXED else dataclasses.replace(demand, price_cap=cap)

    def _barred(self, demand: Demand) -> Demand:
        workload = self.disruption.barred(demand.workload)
        return demand if workload is demand.workload else dataclasses.replace(demand, workload=workload)


# the tiers a failover keeps from renting at a spiked price (policies.failover_max_price_ratio)
_HELD_BACK_BY_PRICE = frozenset({Tier.BURST.value, Tier.OPPORTUNISTIC.value})


def applied_week(applied: Plan) -> IsoWeek | None:
    """The applied plan's week (None for an untimed plan, or one whose week is unreadable: replan_week's fallback)."""
    try:
        return parse_iso_week(applied.week) if applied.week else None
    except WeekError:
        return None


def replan_week(applied: Plan, fallback: IsoWeek | None) -> IsoWeek | None:
    """The week a replan of `applied` plans for: the applied plan's own, else (an untimed plan, or one whose week
    is unreadable) `fallback`, the week the operation runs in (FailoverOptions.week)."""
    own = applied_week(applied)
    return own if own is not None else fallback


def week_of_replan(inventory: Inventory, applied: Plan, iso_week: IsoWeek | None) -> Week | bool | None:
    """The week a replan of `applied` plans in (`iso_week`, replan_week's: the applied plan's, read in the
    disrupted inventory), or None when neither has one. False when the pinned work's hours cannot be kept: the
    inventory's week is cut otherwise than the applied plan's (a window edited since the apply), or only one of
    them has a week."""
    week = plan_week(inventory, iso_week) if applied.segments or any(
        w.schedule is not None for w in inventory.workloads) else None
    if week is None and not applied.segments:
        return None
    if week is None or plan_segments(week) != applied.segments:
        return False
    return week


def _timed_scope(free: set[str], week: Week | bool, inventory: Inventory, demands: Sequence[Demand],
                 pools: Sequence[PoolInfo], applied: Plan) -> set[str]:
    """The free work of a timed replan: with it, every placement on a pool the free work may use.

    Pinned work is taken off a pool's capacity as one number of GPUs (Scope.place), which is right for a
    month and wrong for a week: a nightly batch and a daytime service hold the same GPUs at different
    hours, and their sum would leave no room by day where most of it is free. The pinned work of a timed
    replan is therefore only what sits on pools no free work can use, whose capacity nothing reads; the
    rest is planned with the free work under the stability term, which keeps it where it runs (its hours
    within its windows may be chosen again). Until no pinned work shares a pool with free work.
    """
    if week is False:  # the pinned work's hours are not the replan's week's: nothing can be pinned
        return {d.key for d in demands}
    index = EligibilityIndex(inventory, list(pools))
    names = [p.name for p in pools]
    reached: set[str] = set()
    while True:
        wanted = {names[p] for d in demands_of(demands, free) for shape in _shapes(d) for p in index.eligible(shape)}
        wanted |= {p.pool for p in applied.placements if key_of(p.demand, p.workload) in free}
        if wanted <= reached:
            return free
        reached |= wanted
        extra = {key_of(p.demand, p.workload) for p in _on_pools(applied.placements, reached)}
        free = _whole_workloads(free | extra, demands)


def _shapes(demand: Demand) -> tuple[Demand, ...]:
    """The demand, and in its fallback's GPU types when it has one (the replan may place it so)."""
    fallback = demand.workload.fallback
    if fallback is None or fallback.gpu is None:
        return (demand,)
    return demand, dataclasses.replace(demand, gpu_types=tuple(fallback.gpu.types), gpu_count=fallback.gpu.count)


def _merged(pinned: list[Placement], placed: Sequence[Placement]) -> tuple[Placement, ...]:
    """sorted([*pinned, *placed]) in the planner's order, both being in that order already (ties keep pinned
    first): a few placed ones are put in among a fleet's pinned ones instead of sorting them all again. Each
    costs a shift of the list: past a tenth of it (a lost data centre's 2,900 among 11,700), one sort of the
    two runs is cheaper (4 ms against 10 ms)."""
    if len(placed) * 10 > len(pinned):
        return tuple(sorted([*pinned, *placed], key=_PLACEMENT_ORDER))
    merged = list(pinned)
    for placement in placed:
        insort(merged, placement, key=_PLACEMENT_ORDER)
    return tuple(merged)


def _unplaced_in_play(applied: Plan, changes: Sequence[PoolChange], demands: Sequence[Demand]) -> set[str]:
    """The work the applied plan left unplaced that this replan tries to place again.

    Fixed and burst work left short is always tried: during an incident, any replica found for
    it is worth having. Opportunistic work waits for room, and events that only take capacity
    away make none (the pinned work holds what it held); trying it anyway would cost every
    scenario of a drill a solve. So it joins only when a pool grew or got cheaper, or when a pool
    of a GPU type it needs changed (its reason tells what its eligible pools hold).
    """
    unplaced = {key_of(u.demand, u.workload): u.tier for u in applied.unplaced}
    if any(c.capacity_after > c.capacity_before or c.usd_per_gpu_hour_after < c.usd_per_gpu_hour_before
           for c in changes):
        return set(unplaced)
    waiting = {key for key, tier in unplaced.items() if tier == Tier.OPPORTUNISTIC.value}
    changed_types = {c.gpu for c in changes}
    return {key for key in unplaced if key not in waiting} | {
        d.key for d in demands_of(demands, waiting) if changed_types.intersection(d.gpu_types)}


def _on_pools(placements: Sequence[Placement], pools: Collection[str]) -> Iterator[Placement]:
    """The placements in these pools, picked out without a Python step per placement of a fleet."""
    return compress(placements, map(pools.__contains__, map(_POOL, placements)))


_WORKLOAD = attrgetter("workload")
_WORKLOAD_NAME = attrgetter("workload_name")
_POOL = attrgetter("pool")
_PLACEMENT_ORDER = attrgetter("workload", "demand", "site", "pool")  # the planner's order of placements


def _whole_workloads(keys: Iterable[str], demands: Sequence[Demand]) -> set[str]:
    """A workload's trainer groups share its cost ceiling: free one, free them all."""
    return {d.key for d in _of_workloads(demands, workloads_of(keys))}


def workloads_of(keys: Iterable[str]) -> set[str]:
    """The workloads of these demand keys ("workload", or "workload@site" for a trainer group)."""
    return {key.split("@", 1)[0] for key in keys}


def demands_of(demands: Sequence[Demand], keys: Collection[str]) -> Iterator[Demand]:
    """The demands with these keys, in order, picked out by workload without a Python step per demand of a fleet."""
    return (d for d in _of_workloads(demands, workloads_of(keys)) if d.key in keys)


def _of_workloads(demands: Sequence[Demand], workloads: Collection[str]) -> Iterator[Demand]:
    """The demands of these workloads, in order, picked out without a Python step per demand of a fleet."""
    return compress(demands, map(workloads.__contains__, map(_WORKLOAD_NAME, demands)))
