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
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.inventory.schedule import HOURS_PER_WEEK
from hybridctl.core.plan.model import Plan, PlanSegment
from hybridctl.core.plan.weekclock import segment_index_at, week_clock, week_start

TIMING_VERSION = 1  # of the runbook's `at` object: its fields may grow apart from the runbook's format


@dataclass(frozen=True)
class SegmentSpan:
    """One segment of the plan's week, and where it falls in the week of the moment."""

    index: int  # 0-based, in the plan's segments
    count: int  # segments in the week
    start_hour: float  # from Monday 00:00 UTC
    end_hour: float
    starts_at: datetime  # UTC, in the moment's week (or the next one, for a later step past Sunday)
    ends_at: datetime

    @property
    def clock(self) -> str:
        """`Thu 20:00 → Fri 06:00 UTC`: its span in any week."""
        return f"{week_clock(self.start_hour)} → {week_clock(self.end_hour)} UTC"


@dataclass(frozen=True)
class LaterStep:
    """A runbook step that only matters from a later segment: none of its workloads runs before it."""

    step: str
    workloads: tuple[str, ...]
    segment: SegmentSpan
    needed_by: datetime  # UTC: the segment's start less the step's estimated minutes


@dataclass(frozen=True)
class RunbookTiming:
    at: datetime  # UTC
    week: str  # the plan's ISO week; "" for a plan without one
    segment: SegmentSpan | None  # the segment the first steps act in; None without a week
    later: tuple[LaterStep, ...] = ()

    @property
    def timed(self) -> bool:
        return self.segment is not None


def plan_week_start(plan: Plan) -> datetime | None:
    """Monday 00:00 UTC of the plan's week, or None (no week, or one this reader cannot read)."""
    try:
        year, week = plan.week.split("-W")
        return datetime.combine(date.fromisocalendar(int(year), int(week), 1), time(0), tzinfo=UTC)
    except ValueError:
        return None


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


def timing_to_dict(timing: RunbookTiming | None) -> dict[str, object] | None:
    if timing is None:
        return None

    def span(s: SegmentSpan) -> dict[str, object]:
        return {"index": s.index + 1, "of": s.count, "start_hour": s.start_hour, "end_hour": s.end_hour,
                "starts_at": _iso(s.starts_at), "ends_at": _iso(s.ends_at), "clock": s.clock}

    return {
        "version": TIMING_VERSION,
        "time": _iso(timing.at),
        "week": timing.week or None,
        "segment": span(timing.segment) if timing.segment is not None else None,
        "later_steps": [{"step": s.step, "workloads": list(s.workloads), "segment": span(s.segment),
                         "needed_by": _iso(s.needed_by)} for s in timing.later],
    }


def timing_from_dict(raw: object) -> RunbookTiming | None:
    """A runbook file's `at` (None when absent); ValueError, KeyError or TypeError on a malformed one."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("version") != TIMING_VERSION:
        raise ValueError(f"`at` is not a version-{TIMING_VERSION} object")

    def span(s: dict[str, object]) -> SegmentSpan:
        return SegmentSpan(int(str(s["index"])) - 1, int(str(s["of"])), float(str(s["start_hour"])),
                           float(str(s["end_hour"])), _parse(s["starts_at"]), _parse(s["ends_at"]))

    segment = raw.get("segment")
    return RunbookTiming(
        _parse(raw["time"]), str(raw.get("week") or ""), span(segment) if isinstance(segment, dict) else None,
        tuple(LaterStep(str(s["step"]), tuple(str(w) for w in s["workloads"]), span(s["segment"]),
                        _parse(s["needed_by"])) for s in raw.get("later_steps", [])))


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse(text: object) -> datetime:
    moment = datetime.fromisoformat(str(text))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no offset")
    return moment.astimezone(UTC)
