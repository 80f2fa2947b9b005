"""When a runbook acts in the plan's week (inventory revision 3, "Time": `failover --at TIME`).

A plan is for a typical week, cut into segments (hours from Monday 00:00 UTC). A failover acts at a
moment: the runbook's first steps act in the segment that holds the moment's hour of its week. A
step that brings up capacity or ships a model for workloads none of which runs in that segment (a
scale-up for the nightly window, at noon) only matters from the first later segment where one of
them runs, less the step's own estimate (provision_minutes: a node must be up when its window
opens); the runbook says so. Deferrable work counts where the plan reserves its hours.

The moment is the caller's (the core reads no clock). An untimed plan has no week: every step acts
at once.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime, time, timedelta

from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.failover.timingrecord import LaterStep, RunbookTiming, SegmentSpan
from hybridctl.core.inventory.schedule import HOURS_PER_WEEK
from hybridctl.core.plan.model import Plan, PlanSegment
from hybridctl.core.week.clock import segment_index_at, week_clock, week_start
from hybridctl.core.week.segments import WeekError, parse_iso_week


def plan_week_start(plan: Plan) -> datetime | None:
    """Monday 00:00 UTC of the plan's week, or None (no week, or one this reader cannot read)."""
    try:
        monday = parse_iso_week(plan.week).monday
    except WeekError:
        return None
    return datetime.combine(monday, time(0), tzinfo=UTC)


def _span(segments: tuple[PlanSegment, ...], index: int, monday: datetime) -> SegmentSpan:
    segment = segments[index]
    return SegmentSpan(index, len(segments), segment.start_hour, segment.end_hour,
                       monday + timedelta(hours=segment.start_hour), monday + timedelta(hours=segment.end_hour))


def segment_at(plan: Plan, moment: datetime) -> SegmentSpan | None:
    """The plan's segment that holds the moment's hour of its week; None for a plan without a week."""
    if not plan.segments:
        return None
    return _span(plan.segments, segment_index_at(plan.segments, moment), week_start(moment))


def runbook_timing(runbook: Runbook, moment: datetime) -> RunbookTiming:
    """When the runbook acts, read at `moment` (aware) in its failover plan's week."""
    at = moment.astimezone(UTC)
    plan = runbook.after
    current = segment_at(plan, at)
    if current is None:
        return RunbookTiming(at, plan.week, None)
    # (site, workload) -> the segments it runs in after the failover
    runs: dict[tuple[str, str], set[int]] = defaultdict(set)
    for placement in plan.placements:
        runs[(placement.site, placement.workload)].update(
            s for s, hours in enumerate(placement.segment_hours) if hours > 0)
    monday = week_start(at)
    count = len(plan.segments)
    later: list[LaterStep] = []
    for step in runbook.steps:
        if not step.workloads:
            continue  # containment, queues, releases: they act at once
        site = step.step.site or ""
        used = set().union(*(runs.get((site, w), set()) for w in step.workloads))
        if not used or current.index in used:
            continue
        offset = next(o for o in range(1, count) if (current.index + o) % count in used)
        index = (current.index + offset) % count
        wrapped = monday + timedelta(hours=HOURS_PER_WEEK) if index < current.index else monday
        span = _span(plan.segments, index, wrapped)
        needed_by = span.starts_at - timedelta(minutes=step.estimated_minutes)
        if needed_by > at:
            later.append(LaterStep(step.id, step.workloads, span, needed_by))
    return RunbookTiming(at, plan.week, current, tuple(later))


def timing_summary(timing: RunbookTiming, plan: Plan) -> str:
    """The runbook header's line: the segment the first steps act in, in UTC and in the plan's week."""
    at = timing.at.strftime("%Y-%m-%d %H:%M UTC")
    segment = timing.segment
    if segment is None:
        return f"At {at}: the plan has no week (no `schedule`): every step acts at once"
    text = (f"At {at}: segment {segment.index + 1} of {segment.count}, {segment.clock} "
            f"({_dates(segment.starts_at, segment.ends_at)})")
    monday = plan_week_start(plan)
    if monday is not None and monday != week_start(timing.at):
        start, end = monday + timedelta(hours=segment.start_hour), monday + timedelta(hours=segment.end_hour)
        text += f", in the plan's week {timing.week} ({_dates(start, end)})"
    elif timing.week:
        text += f", in the plan's week {timing.week}"
    return text


def later_text(step: LaterStep, at: datetime) -> str:
    """`needed from Fri 06:00 UTC (segment 13, in 8 h 5 min; start by 05:48 UTC): day-service runs then`."""
    wait = step.needed_by - at
    hours, rest = divmod(round(wait.total_seconds() / 60), 60)
    span = f"{hours} h {rest} min" if hours else f"{rest} min"
    return (f"needed from {week_clock(step.segment.start_hour)} UTC (segment {step.segment.index + 1}, in {span}; "
            f"start by {step.needed_by.strftime('%a %H:%M')} UTC): {', '.join(step.workloads)} "
            f"run{'s' * (len(step.workloads) == 1)} then")


def _dates(start: datetime, end: datetime) -> str:
    return f"{start.strftime('%Y-%m-%d %H:%M')} → {end.strftime('%Y-%m-%d %H:%M')} UTC"
