"""A drill scenario's worst segment of the week (inventory revision 3, "Time"; issue 31 item 6).

A lost site is lost in every segment, but what it costs differs from hour to hour: losing the GPUs a
nightly batch runs on matters at night, not at noon. The worst segment is the one where the most
service is lost: the GPUs the base plan runs there (a segment's average: whole-segment replicas' GPUs,
and deferrable ones' GPU-hours over its length) that the scenario's plan no longer runs. A drill is a
resilience gate, so service comes first. Where nothing is lost, or as much is lost in two segments,
the one where the scenario's cash rises most per hour wins: the pay-per-use machines it rents there
(per hour, so that a long weekend segment does not win by its length alone). A scenario that loses
nothing and pays nothing more has no worst segment.

Deferrable work is lost only when its weekly GPU-hours shrink: the replan may choose other hours for
it (the plan reserves GPU-hours; the queue fits them at run time), which is not a loss; what it loses
is spread over the segments where the base plan ran it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hybridctl.core.plan.model import Placement, Plan, runs_whole_segment
from hybridctl.core.week.clock import week_clock
from hybridctl.core.week.usage import pool_weeks


@dataclass(frozen=True)
class WorstSegment:
    index: int  # 0-based, in the plan's segments
    count: int
    start_hour: float  # from Monday 00:00 UTC of the plan's week
    end_hour: float
    lost_gpus: float  # of the base plan's work, not run by the scenario's plan (the segment's average)
    usd_per_hour_delta: float  # the pay-per-use machines' cash per hour in it, scenario less base


def _whole(placement: Placement, lengths: list[float]) -> bool:
    return all(h <= 0 or runs_whole_segment(h, lengths[s])
               for s, h in enumerate(placement.segment_hours))


def lost_gpus_by_segment(base: Plan, after: Plan) -> list[float]:
    """Per segment, the GPUs of the base plan's work that the scenario's plan does not run there."""
    lengths = [s.hours for s in base.segments]
    count = len(lengths)
    # workload -> GPU-hours per segment, before and after; whether it runs its segments whole (in the base plan)
    before: dict[str, list[float]] = defaultdict(lambda: [0.0] * count)
    later: dict[str, list[float]] = defaultdict(lambda: [0.0] * count)
    whole: dict[str, bool] = {}
    for plan, into in ((base, before), (after, later)):
        for p in plan.placements:
            if len(p.segment_hours) != count:
                continue
            if plan is base:
                whole[p.workload] = whole.get(p.workload, True) and _whole(p, lengths)
            row = into[p.workload]
            for s, hours in enumerate(p.segment_hours):
                row[s] += p.gpus * hours
    lost = [0.0] * count
    for workload, held in before.items():
        now = later.get(workload, [0.0] * count)
        if whole.get(workload, True):
            for s in range(count):
                lost[s] += max(0.0, held[s] - now[s]) / lengths[s]
            continue
        total = sum(held)
        short = max(0.0, total - sum(now))
        if total > 0 and short > 0:
            for s in range(count):
                lost[s] += short * held[s] / total / lengths[s]
    return lost


def usd_per_hour_by_segment(plan: Plan) -> list[float]:
    """Per segment, what the plan's pay-per-use machines cost an hour (committed pools cost the same every hour)."""
    usage = {u.pool: u for u in plan.pools}
    out = [0.0] * len(plan.segments)
    for week in pool_weeks(plan):
        pool = usage[week.pool]
        if pool.committed:
            continue
        for s, machines in enumerate(week.machines):
            out[s] += machines * pool.gpus_per_node * pool.usd_per_gpu_hour
    return out


def worst_segment(base: Plan, after: Plan) -> WorstSegment | None:
    """The scenario's worst segment (see the module); None for an untimed plan, or one that loses nothing and
    costs nothing more in any segment."""
    if not base.segments or after.segments != base.segments:
        return None
    lost = lost_gpus_by_segment(base, after)
    rate_before, rate_after = usd_per_hour_by_segment(base), usd_per_hour_by_segment(after)
    delta = [round(a - b, 2) for a, b in zip(rate_after, rate_before, strict=True)]
    # rounded as shown (hundredths of a GPU), so that float noise (2e-06 GPUs) neither picks one of equal
    # segments nor counts as a loss; ties go to the earliest
    lost = [round(g, 2) for g in lost]
    s = max(range(len(lost)), key=lambda k: (lost[k], delta[k], -k))
    if lost[s] <= 0 and delta[s] <= 0:
        return None
    segment = base.segments[s]
    return WorstSegment(s, len(base.segments), segment.start_hour, segment.end_hour, lost[s], delta[s])


def worst_segment_to_dict(worst: WorstSegment | None) -> dict[str, object] | None:
    if worst is None:
        return None
    return {"index": worst.index + 1, "of": worst.count, "start_hour": worst.start_hour, "end_hour": worst.end_hour,
            "clock": f"{week_clock(worst.start_hour)} → {week_clock(worst.end_hour)} UTC", "lost_gpus": worst.lost_gpus,
            "usd_per_hour_delta": worst.usd_per_hour_delta}


def worst_segment_text(worst: WorstSegment | None) -> str:
    """The drill table's cell: `13/17 Thu 20:00 → Fri 06:00: 8 GPUs lost, +$80.00/h`; `—` without one."""
    if worst is None:
        return "—"
    parts = []
    if worst.lost_gpus > 0:
        parts.append(f"{gpus_text(worst.lost_gpus)} GPU{'s' * (worst.lost_gpus != 1)} lost")
    if worst.usd_per_hour_delta:
        sign = "+" if worst.usd_per_hour_delta > 0 else "−"
        parts.append(f"{sign}${abs(worst.usd_per_hour_delta):,.2f}/h")
    return (f"{worst.index + 1}/{worst.count} {week_clock(worst.start_hour)} → {week_clock(worst.end_hour)}: "
            + ", ".join(parts))


def gpus_text(gpus: float) -> str:
    """A segment's average GPUs, as people read them: 4, 19.84 (deferrable work's GPU-hours over its length)."""
    return f"{gpus:,.2f}".rstrip("0").rstrip(".")
