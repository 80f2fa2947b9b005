"""The week a plan is for (inventory revision 3, "Time"): segments and each workload's hours in it.

Pure: an inventory and an ISO week in, a `Week` out. Every hour is an hour of the week from
Monday 00:00 UTC; windows are read in their zones at the plan's week, so daylight saving is the
one of that week. The week is cut at every window edge of every workload: in each segment the
same workloads may run. An inventory without `schedule` has one segment, the whole week.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass
from datetime import date, datetime
from itertools import pairwise

from hybridctl.core.inventory.models import Inventory, Workload
from hybridctl.core.inventory.schedule import (
    HOURS_PER_MONTH,
    HOURS_PER_WEEK,
    MINUTES_PER_WEEK,
    merged,
    utc_intervals,
)

QUARTERS_PER_WEEK = MINUTES_PER_WEEK // 15
# A workload's weekly hours within this of its window hours runs its whole windows: hours_per_month
# is written with a few decimals (W x 730 / 168 rarely is a round number).
_WHOLE_TOLERANCE_HOURS = 0.01

_ISO_WEEK_RE = re.compile(r"(\d{4})-W(\d{2})\Z")
# The years a plan's week may fall in: a moment of the week, in any zone, stays a valid date-time
FIRST_YEAR, LAST_YEAR = 1970, 9998


class WeekError(ValueError):
    """A `--week` that is not an ISO week."""


@dataclass(frozen=True, order=True)
class IsoWeek:
    year: int
    week: int

    def __str__(self) -> str:
        return f"{self.year}-W{self.week:02d}"

    @property
    def monday(self) -> date:
        return date.fromisocalendar(self.year, self.week, 1)


def parse_iso_week(text: str) -> IsoWeek:
    """`2026-W48` → IsoWeek(2026, 48); a WeekError with how to write it otherwise."""
    match = _ISO_WEEK_RE.fullmatch(text.strip())
    if match is None:
        raise WeekError(f"'{text}' is not an ISO week: write YYYY-Www, such as 2026-W48")
    year, week = int(match.group(1)), int(match.group(2))
    if not FIRST_YEAR <= year <= LAST_YEAR:  # 0001 wrote itself "1-W01"; 9999's last week overflowed its clock
        raise WeekError(f"'{text}': plans are for weeks of the years {FIRST_YEAR} to {LAST_YEAR}")
    try:
        date.fromisocalendar(year, week, 1)
    except ValueError:
        raise WeekError(f"'{text}': {year} has no week {week} (ISO years have 52 or 53 weeks)") from None
    return IsoWeek(year, week)


def week_of(moment: datetime) -> IsoWeek:
    """The ISO week a moment falls in (the caller reads the clock: the core does not)."""
    iso = moment.isocalendar()
    return IsoWeek(iso.year, iso.week)


@dataclass(frozen=True)
class Segment:
    """A stretch of the week in which the same workloads may run."""

    start_hour: float  # hours from Monday 00:00 UTC
    end_hour: float

    @property
    def hours(self) -> float:
        return self.end_hour - self.start_hour


@dataclass(frozen=True)
class WorkloadWeek:
    """When one workload may run in the plan's week, and how much of it it needs."""

    name: str
    intervals: tuple[tuple[int, int], ...]  # [start, end) minutes from Monday 00:00 UTC, merged
    segments: tuple[int, ...]  # indexes of the week's segments it may run in
    window_hours: float  # W: 168 without schedule
    weekly_hours: float  # H = hours_per_month x 168 / 730
    deferrable: bool  # H < W: the planner chooses H of its W hours

    @property
    def whole(self) -> bool:
        """Runs its whole windows (every hour of each of its segments)."""
        return not self.deferrable


@dataclass(frozen=True)
class Week:
    iso_week: IsoWeek
    segments: tuple[Segment, ...]
    workloads: dict[str, WorkloadWeek]

    @property
    def timed(self) -> bool:
        """Whether time changes anything: more than one segment, or a deferrable workload."""
        return len(self.segments) > 1 or any(w.deferrable for w in self.workloads.values())


def _utc_intervals(workload: Workload, iso_week: IsoWeek,
                   known: dict[tuple[object, ...], list[tuple[int, int]]]) -> list[tuple[int, int]]:
    """`known`: each window's openings found so far (a fleet's workloads share a few windows: on a
    10,000-workload fleet, reading daylight saving per opening was a third of the week's building)."""
    if workload.schedule is None:
        return [(0, MINUTES_PER_WEEK)]
    spans: list[tuple[int, int]] = []
    for window in workload.schedule.windows:
        key = (tuple(window.days), window.start, window.end, window.tz)
        found = known.get(key)
        if found is None:
            found = known[key] = utc_intervals(window, iso_week.monday)
        spans.extend(found)
    return merged(spans)


def build_week(inventory: Inventory, iso_week: IsoWeek) -> Week:
    """The plan's week: its segments, and each workload's windows, hours and segments in it."""
    known: dict[tuple[object, ...], list[tuple[int, int]]] = {}
    spans = {w.name: _utc_intervals(w, iso_week, known) for w in inventory.workloads}
    edges = sorted({0, MINUTES_PER_WEEK} | {edge for intervals in spans.values() for span in intervals
                                            for edge in span})
    # A segment is kept even when no workload may run in it: the plan reports the whole week (idle
    # committed capacity, pools torn down).
    bounds = list(pairwise(edges))
    segments = tuple(Segment(a / 60, b / 60) for a, b in bounds)
    starts = [a for a, _ in bounds]
    workloads: dict[str, WorkloadWeek] = {}
    for workload in inventory.workloads:
        intervals = spans[workload.name]
        inside: list[int] = []
        for start, end in intervals:
            k = bisect_left(starts, start)
            while k < len(bounds) and bounds[k][1] <= end:
                inside.append(k)
                k += 1
        # Whether it runs its whole windows is the user's wall-clock arithmetic (W as written); its hours
        # in this week are UTC hours, which daylight saving's change of week may make one fewer.
        wall = workload.schedule.window_hours if workload.schedule is not None else float(HOURS_PER_WEEK)
        utc = sum(end - start for start, end in intervals) / 60
        weekly = workload.hours * HOURS_PER_WEEK / HOURS_PER_MONTH
        deferrable = weekly < wall - _WHOLE_TOLERANCE_HOURS
        workloads[workload.name] = WorkloadWeek(
            name=workload.name, intervals=tuple(intervals), segments=tuple(sorted(inside)), window_hours=utc,
            weekly_hours=min(weekly, utc) if deferrable else utc, deferrable=deferrable)
    return Week(iso_week=iso_week, segments=segments, workloads=workloads)

