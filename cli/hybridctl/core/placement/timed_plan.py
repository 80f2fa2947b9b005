"""What the planner does with a timed week besides the model's rows (timed_rows.py): which week a plan is
for, each placement's hours per segment, and the objective of a timed answer by the spec's rules."""

from __future__ import annotations

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.inventory.schedule import HOURS_PER_MONTH, HOURS_PER_WEEK
from hybridctl.core.placement.eligibility import Demand, PoolInfo
from hybridctl.core.placement.units import Unit
from hybridctl.core.plan.model import Placement, PlanSegment
from hybridctl.core.pricing.rates import TIE_BREAK, machines_usd_per_month, objective_usd_per_month
from hybridctl.core.week.machines import segment_machines
from hybridctl.core.week.segments import IsoWeek, Week, build_week

# hours per segment within this of the previous plan's are the previous plan's (a plan file keeps 6 digits, and an LP
# held to rows its rounded figures break by a hair moves them by a few of those; the checker allows 1e-3)
SAME_HOURS = 1e-4


def plan_week(inventory: Inventory, iso_week: IsoWeek | None) -> Week | None:
    """The plan's week when the inventory has a `schedule`, else None. The spec's revision note says an
    inventory without `schedule` plans as in revision 2 (its part-time replicas hold their GPUs all
    month), so only a scheduled inventory counts GPU-hours, its part-time work deferrable anywhere in
    the week. The core reads no clock: the spec's default, the current week, is the operation's to name
    (operations/week.py this_week), so a scheduled inventory without a week is the caller's bug."""
    if not any(w.schedule is not None for w in inventory.workloads):
        return None
    if iso_week is None:
        raise ValueError(f"inventory {inventory.name!r} has a schedule: plan it for a week (PlanOptions.week, "
                         "FailoverOptions.week); the caller names it, the current one being this_week()")
    week = build_week(inventory, iso_week)
    return week if week.timed else None


def plan_segments(week: Week | None) -> tuple[PlanSegment, ...]:
    return () if week is None else tuple(PlanSegment(s.start_hour, s.end_hour) for s in week.segments)


def replica_weekly_hours(unit: Unit, p: int) -> float:
    """A deferrable replica's hours a week in pool p: H, times the pool's rework, within its windows."""
    assert unit.timing is not None
    rework = 1.0
    if unit.rework is not None:
        rework = float(unit.rework[unit.eligible.index(p)])
    return min(unit.timing.weekly_hours * rework, unit.timing.window_hours)


def segment_hours(unit: Unit, p: int, replicas: int, week: Week,
                  hours: dict[int, float] | None) -> tuple[float, ...]:
    """Hours each replica of the unit in pool p runs in each segment: its whole segments, or a
    deferrable replica's share of the hours the solver gave the column (`hours`: segment -> replica-
    hours of all its replicas there), scaled to exactly H (the model only asks for at least H)."""
    out = [0.0] * len(week.segments)
    timing = unit.timing
    if timing is None or not timing.deferrable:
        for s in (timing.segments if timing is not None else range(len(week.segments))):
            out[s] = week.segments[s].hours
        return tuple(out)
    need = replica_weekly_hours(unit, p)
    if len(timing.segments) == 1:
        out[timing.segments[0]] = need
        return tuple(out)
    given = {s: h / max(replicas, 1) for s, h in (hours or {}).items() if s in timing.segments}
    total = sum(given.values())
    if total <= 0:
        return tuple(out)
    for s, h in given.items():
        out[s] = round(min(h * need / total, week.segments[s].hours), 6)
    # the previous plan's hours given back (previous_hours.py) are its figures as written: scaled and rounded
    # again, a figure may move by its last digit
    before = unit.previous_hours.get(p)
    if before is not None and replicas == unit.previous.get(p) and len(before) == len(out) \
            and all(abs(a - b) <= SAME_HOURS for a, b in zip(out, before, strict=True)):
        return before
    return tuple(out)


def timed_objective(assigned: list[tuple[Demand, int, int]], units_of: dict[str, Unit], pools: list[PoolInfo],
                    week: Week, cash: bool) -> float:
    """The objective of a timed answer as the model counts it: each replica's own machines (deferrable,
    pay-per-use) and the amortized tie-break, and per pay-per-use pool and segment the shared machines
    of the replicas that run the whole segment (week/machines.py), paid for the segment's hours of every
    week."""
    total = 0.0
    lengths = [s.hours for s in week.segments]
    sharing: list[Placement] = []  # the replicas that share machines, as placements of their segments whole
    for demand, p, n in assigned:
        unit = units_of[demand.key]
        whole = unit.timing is None or not unit.timing.deferrable
        if whole and not pools[p].committed:
            total += TIE_BREAK * objective_usd_per_month(demand, pools[p], n, False) if cash \
                else objective_usd_per_month(demand, pools[p], n, False)
            segments = set(unit.timing.segments if unit.timing is not None else range(len(lengths)))
            sharing.append(Placement(demand.workload.name, demand.tier.value, pools[p].site.name, pools[p].name, n,
                                     n * demand.gpu_count, 0.0, gpus_per_replica=demand.gpu_count,
                                     segment_hours=tuple(h if s in segments else 0.0 for s, h in enumerate(lengths))))
        else:
            total += objective_usd_per_month(demand, pools[p], n, cash)
    if cash:
        by_name = {pool.name: pool for pool in pools}  # machines.py keys pools by name
        tallies = segment_machines(sharing, lengths, {pool.name: pool.gpus_per_node for pool in pools
                                                      if not pool.committed})
        for name, tally in tallies.items():
            for s, machines in enumerate(tally.shared):
                if machines:
                    monthly_hours = lengths[s] * HOURS_PER_MONTH / HOURS_PER_WEEK
                    total += machines_usd_per_month(by_name[name], machines, monthly_hours)
    return total
