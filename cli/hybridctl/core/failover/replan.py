"""The failover replan: the applied plan, re-placed on what the events leave, moving as little as possible.

1. Plan the work the events touch (scope.py) with the applied plan as `previous` and a strong
   move threshold: a replica moves only when its capacity is gone, or when moving it saves more
   than the threshold per month. Work on untouched pools stays where it is; if touched work
   finds no room, the work on the pools it could use joins the replan, so moving it can make room.
2. Survival path: work left short is planned again in its `fallback` shape (fewer replicas,
   other GPU types), and those placements are marked `degraded`. A fallback that places nothing
   is dropped again, and the outcome with the least work down wins: a fallback keeps more of
   the service, never less.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter

from hybridctl.core.failover.demand_cache import MovementMemo, UsageMemo
from hybridctl.core.failover.disrupt import Disruption, disrupt
from hybridctl.core.failover.events import Event
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.scope import Scope, demands_of, replan_week
from hybridctl.core.inventory.models import Inventory, Workload
from hybridctl.core.memo import RunMemo
from hybridctl.core.nameindex import by_name
from hybridctl.core.placement.eligibility import (
    Demand,
    EligibilityIndex,
    PriceCap,
    demands,
    pool_infos,
    price_text,
)
from hybridctl.core.placement.planner import DEFAULT_GAP, DEFAULT_TIME_LIMIT_S, PlanOptions
from hybridctl.core.placement.tiers import TIER_ORDER, Tier
from hybridctl.core.placement.units import TIER_WEIGHT
from hybridctl.core.plan.delta import placement_delta
from hybridctl.core.plan.model import Plan, Unplaced
from hybridctl.core.week.segments import IsoWeek

# A replica that still has capacity stays unless moving it saves this much per month: a hundred
# times what `plan --previous` uses, because during an incident every move is a risk of its own.
# Re-optimising cost is for an ordinary `plan --previous` once the incident is over.
DEFAULT_FAILOVER_MOVE_THRESHOLD_USD = 10_000.0
# Each widening lets one more link of a chain of moves make room (C moves so B can, so A fits).
MAX_WIDENINGS = 3


@dataclass(frozen=True)
class FailoverOptions:
    move_threshold_usd: float = DEFAULT_FAILOVER_MOVE_THRESHOLD_USD
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    gap: float = DEFAULT_GAP
    # the week to plan in when the applied plan names none (an untimed plan of an inventory scheduled since):
    # the operation's, which reads the clock (operations/week.py); the core reads none
    week: IsoWeek | None = None

    def plan_options(self) -> PlanOptions:
        return PlanOptions(time_limit_s=self.time_limit_s, gap=self.gap, move_threshold_usd=self.move_threshold_usd,
                           week=self.week)


@dataclass(frozen=True)
class Replan:
    disruption: Disruption
    before: Plan  # the applied plan
    after: Plan  # the failover plan, on the disrupted inventory
    fallbacks: Mapping[str, str]  # demand key -> the fallback shape it runs in
    passes: int  # planner runs it took


def fallback_shape(workload: Workload) -> tuple[tuple[str, ...], int, int]:
    """(GPU types, GPUs per replica, replicas) in degraded mode."""
    fallback = workload.fallback
    gpu = fallback.gpu if fallback is not None and fallback.gpu is not None else workload.gpu
    replicas = fallback.replicas if fallback is not None and fallback.replicas is not None else workload.replicas
    return tuple(gpu.types), gpu.count, replicas


def describe_fallback(workload: Workload) -> str:
    types, count, replicas = fallback_shape(workload)
    return f"{replicas} replica{'s' * (replicas != 1)} × {count} {'/'.join(types)}"


def _degraded_demand(demand: Demand) -> Demand:
    types, count, replicas = fallback_shape(demand.workload)
    return dataclasses.replace(demand, gpu_types=types, gpu_count=count, replicas=replicas)


def _placed(result: Plan) -> dict[str, int]:
    counts: dict[str, int] = defaultdict(int)
    for p in result.placements:
        counts[p.demand or p.workload] += p.replicas
    return counts


def _finish(result: Plan, disruption: Disruption, degraded: Mapping[str, str], before: Plan,
            run_memo: RunMemo, deferred: Mapping[str, str]) -> Plan:
    """Mark fallback placements, explain what was left unplaced, and show pools by their real GPU. `deferred`: for
    burst and opportunistic work held to its price ceiling, the dearer pool it did not rent (_deferred_by_price),
    said where the cheaper pools are full."""
    placements = tuple(dataclasses.replace(p, degraded=True) if (p.demand or p.workload) in degraded else p
                       for p in result.placements) if degraded else result.placements
    shrunk = {c.pool: c for c in disruption.pool_changes if c.capacity_after < c.capacity_before}
    lost_from: dict[str, list[str]] = defaultdict(list)
    # the applied placements on pools that shrank, picked out without a Python step per placement of a fleet
    for p in compress(before.placements, map(shrunk.__contains__, map(attrgetter("pool"), before.placements))):
        lost_from[p.demand or p.workload].append(f"{p.pool} ({', '.join(shrunk[p.pool].causes)})")
    unplaced: list[Unplaced] = []
    for u in result.unplaced:
        key = u.demand or u.workload
        reason = u.reason
        if key in disruption.down:
            reason = "; ".join(filter(None, (disruption.cut_off.get(key), disruption.down[key])))
        elif key in disruption.cut_off:
            reason = f"{disruption.cut_off[key]}; {reason}"
        elif lost_from.get(key):
            ran = ", ".join(sorted(set(lost_from[key])))
            if reason.startswith("no eligible pool: no pool offers GPU type"):
                # the pools it may use are the ones the events emptied (they offer no GPU any more)
                reason = f"no eligible pool left: every pool it may use has lost its capacity; it ran in {ran}"
            else:
                reason = f"{reason}; it ran in {ran}"
        if key in degraded and key not in disruption.down:
            reason = f"even in its fallback shape ({degraded[key]}): {reason}"
        if key in deferred and "failover_max_price_ratio" not in reason:
            # its cheaper pools are full: the dearer one it could rent is what the ratio keeps it from
            reason = f"{reason}; {deferred[key]}"
        unplaced.append(dataclasses.replace(u, reason=reason))
    # federated trainers whose data site is lost have no demand left to be unplaced: list them here
    listed = {u.demand or u.workload for u in unplaced}
    for key, why in sorted(disruption.down.items()):
        workload, _, site = key.partition("@")
        if site and key not in listed:
            found = by_name(disruption.inventory.workloads, run_memo).get(workload)
            unplaced.append(Unplaced(workload, why, found.replicas if found else 1, result.tiers.get(workload, ""), key))
    unplaced.sort(key=lambda x: (x.workload, x.demand))
    real_gpu = disruption.gpu_types
    pools = tuple(dataclasses.replace(p, gpu=real_gpu.get(p.pool, p.gpu)) if p.pool in real_gpu else p
                  for p in result.pools)
    return dataclasses.replace(result, placements=placements, unplaced=tuple(unplaced), pools=pools)


def _placed_of(result: Plan, wanted: Mapping[str, Demand]) -> list[int]:
    placed = _placed(result)
    return [placed.get(key, 0) for key in wanted] or [1]


def _score(result: Plan, wanted: Mapping[str, Demand], degraded: Mapping[str, Demand]) -> tuple[float, ...]:
    """Lower is better: workloads down (fixed first), replicas missing (by tier), fallbacks used, cost."""
    placed = _placed(result)
    down = [0.0, 0.0, 0.0]
    missing = 0.0
    for key, demand in wanted.items():
        running = placed.get(key, 0)
        if running == 0:
            down[TIER_ORDER.index(demand.tier)] += 1
        missing += TIER_WEIGHT[demand.tier] * max(0, demand.replicas - running)
    return (*down, missing, float(len(degraded)), result.total_usd_per_month)


def replan(inventory: Inventory, applied: Plan, events: Sequence[Event],
           options: FailoverOptions | None = None, run: FailoverRun | None = None,
           stale: Collection[str] = ()) -> Replan:
    """The failover plan for `events` hitting the inventory while `applied` runs; `stale`: workloads
    replanned too, since the inventory no longer supports their applied placements (stale.py).
    `run` (default: one of its own): its memo is told the delta of each plan assembled from `applied`, which
    the run's later readers of the two plans (impacts, the checker, the steps) share; a drill's demand cache.

    Work left short first tries its fallback where that is all it can get (placed below the
    fallback's replicas). If some work is still down, the fallbacks of the other short work are
    tried too, since shrinking them frees capacity. The best outcome by _score wins.
    """
    options = options or FailoverOptions()
    run = run or FailoverRun()
    run_memo, demand_cache = run.memo, run.demand_cache
    disruption = disrupt(inventory, events, applied, demand_cache)
    disrupted = disruption.inventory
    # the week the applied plan was made for, whatever week the failover runs in: the pinned work's hours per
    # segment are that week's, and a zone's daylight saving moves the segments from week to week
    week = replan_week(applied, options.week)
    plan_options = dataclasses.replace(options.plan_options(), week=week)
    all_demands = demand_cache.demands(disrupted) if demand_cache is not None else demands(disrupted)
    # what a drill's scenarios share: the pinned work's data movements and use of pools, the workloads' tiers
    # and facts; a replan's passes share the first two
    if demand_cache is not None:
        movements, usage = demand_cache.movements, demand_cache.usage
        tiers, facts = demand_cache.tiers(disrupted, all_demands), demand_cache.facts(disrupted)
    else:
        movements, usage, tiers, facts = MovementMemo(), UsageMemo(), None, None
    scope = Scope.initial(disruption, all_demands, pool_infos(disrupted), applied, movements, tiers, usage, facts,
                          stale, run_memo, week=week)
    draft = scope.place(plan_options)
    passes = 1
    # what is short, and where the free work went, is told by the free work's plan: a pass that widens the
    # scope is never assembled with the pinned work
    for _ in range(MAX_WIDENINGS):
        if scope.everything:
            break
        wider = scope.widened(draft.free, _newly_short(draft.free, applied), options.move_threshold_usd)
        if wider.free == scope.free:
            break
        scope = wider
        draft = scope.place(plan_options)
        passes += 1
    first = scope.assemble(draft)
    best: tuple[Plan, dict[str, Demand]] = (first, {})
    short = {u.demand or u.workload for u in first.unplaced} & scope.free
    # a fallback that is the full shape again degrades nothing: such work is simply replanned
    fallbacks = {d.key: d for d in demands_of(all_demands, short) if d.key not in disruption.down
                 and d.workload.fallback is not None
                 and fallback_shape(d.workload) != (d.gpu_types, d.gpu_count, d.replicas)}
    if fallbacks:
        wanted = {d.key: d for d in all_demands}
        placed_full = _placed(first)
        needy = {k: d for k, d in fallbacks.items() if placed_full.get(k, 0) < fallback_shape(d.workload)[2]}
        for group in (needy, fallbacks):
            if group is fallbacks and (len(fallbacks) == len(needy) or min(_placed_of(best[0], wanted)) > 0):
                continue  # no other fallback to try, or nothing is down any more
            candidates = dict(group)
            while candidates:
                attempt = scope.plan(plan_options, {k: _degraded_demand(d) for k, d in candidates.items()})
                passes += 1
                placed = _placed(attempt)
                # a fallback that places nothing helps nobody: that work keeps its full shape
                useless = {k for k in candidates if placed.get(k, 0) == 0}
                if not useless:
                    if _score(attempt, wanted, candidates) < _score(best[0], wanted, best[1]):
                        best = (attempt, candidates)
                    break
                candidates = {k: d for k, d in candidates.items() if k not in useless}
    result, chosen = best
    degraded = {k: describe_fallback(d.workload) for k, d in chosen.items()}
    waiting = {u.workload for u in result.unplaced if u.tier != Tier.FIXED.value}
    caps = scope.price_caps(compress(applied.placements, map(waiting.__contains__,
                                                             map(attrgetter("workload"), applied.placements))))
    # only work this replan placed was held to the ceiling: work it left pinned keeps its applied plan's reason
    deferred = _deferred_by_price(scope, {k: c for k, c in caps.items()
                                          if k in scope.free and k not in disruption.down}, chosen)
    return Replan(disruption, applied, _finish(result, disruption, degraded, applied, run_memo, deferred),
                  degraded, passes)


def _deferred_by_price(scope: Scope, caps: Mapping[str, PriceCap], shaped: Mapping[str, Demand]) -> dict[str, str]:
    """For each capped demand (in the shape placed) that some pool with capacity left after the events would take
    but for its price ceiling: "deferred rather than rent POOL at $X/GPU-hour: <the ceiling>", of the cheapest."""
    if not caps:
        return {}
    index = EligibilityIndex(scope.inventory, list(scope.pools))
    found: dict[str, str] = {}
    for demand in demands_of(scope.demands, caps):
        demand = shaped.get(demand.key, demand)
        cap = caps[demand.key]
        above = [scope.pools[i] for i in index.eligible(demand)
                 if scope.pools[i].capacity_gpus > 0 and not cap.allows(scope.pools[i].usd_per_gpu_hour)]
        if above:
            cheapest = min(above, key=attrgetter("usd_per_gpu_hour"))
            found[demand.key] = (f"deferred rather than rent {cheapest.name} at "
                                 f"{price_text(cheapest.usd_per_gpu_hour)}/GPU-hour: {cap}")
    return found


def replanned_inventory(result: Replan, run_memo: RunMemo | None = None) -> Inventory:
    """The inventory a failover plan is checked against: the disrupted one, each workload the replan
    re-placed or left unplaced seen as the planner saw it (Disruption.as_replanned)."""
    if not result.disruption.down_links:
        return result.disruption.inventory
    moved = (placement_delta(result.before, result.after, run_memo).workloads
             | {u.workload for u in result.after.unplaced})
    return result.disruption.as_replanned(moved)


def _newly_short(result: Plan, applied: Plan) -> set[str]:
    """Fixed and burst demands with more replicas unplaced than the applied plan had unplaced (in `result`, a
    replan's plan or its free work's: the pinned work's unplaced replicas are the applied plan's).

    Opportunistic work is what a failover sheds first: making room for it is not a reason to
    move running work (and searching for such room is most of the cost on a large fleet).
    """
    before = {u.demand or u.workload: u.replicas for u in applied.unplaced}
    return {u.demand or u.workload for u in result.unplaced
            if u.tier != Tier.OPPORTUNISTIC.value and u.replicas > before.get(u.demand or u.workload, 0)}
