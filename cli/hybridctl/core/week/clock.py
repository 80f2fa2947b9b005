"""Hours of a plan's week read as a clock: the day and time of an hour, the week a moment falls in, and
the segment that holds it. A plan is for a typical week, repeated; its hours count from Monday 00:00 UTC.

Shared by `status` (running.py), `failover --at` (failover/timing.py), the drill's worst segment and the
report's heat map. The moment is always the caller's: nothing here reads a clock.
"""

from __future__ import annotations

import zoneinfo
from collections.abc import Iterable
from datetime import UTC, date, datetime, time

from hybridctl.core.inventory.schedule import HOURS_PER_WEEK
from hybridctl.core.plan.model import PlanSegment

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def week_clock(hour: float) -> str:
    """An hour of the week as a day and a time: 116.5 → `Fri 20:30`; 168 → `Mon 00:00` (the week's end)."""
    minutes = round(hour * 60) % (HOURS_PER_WEEK * 60)
    day, rest = divmod(minutes, 24 * 60)
    return f"{DAYS[day]} {rest // 60:02d}:{rest % 60:02d}"


def week_start(moment: datetime) -> datetime:
    """Monday 00:00 UTC of the ISO week the moment (aware) falls in, read in UTC."""
    iso = moment.astimezone(UTC).isocalendar()
    return datetime.combine(date.fromisocalendar(iso.year, iso.week, 1), time(0), tzinfo=UTC)


def segment_index_at(segments: tuple[PlanSegment, ...], moment: datetime) -> int:
    """The segment (0-based) that holds the moment's hour of its week; segments cut the week 0 … 168."""
    hour = (moment.astimezone(UTC) - week_start(moment)).total_seconds() / 3600
    return next((k for k, s in enumerate(segments) if s.start_hour <= hour < s.end_hour), len(segments) - 1)


def offsets_moved(zones: Iterable[str], week_monday: date, moment: datetime) -> tuple[tuple[str, int, int], ...]:
    """(zone, its UTC offset in minutes at the same hour of the plan's week, its offset at `moment`) for each
    zone whose offset is not what the plan's week had: the plan's UTC segments (and the placements and
    runbooks cut at them) are that far off its windows now, after a clock change."""
    same_hour = datetime.combine(week_monday, time(0), tzinfo=UTC) + (moment.astimezone(UTC) - week_start(moment))
    out = []
    for name in sorted(set(zones)):
        zone = zoneinfo.ZoneInfo(name)
        then, now = same_hour.astimezone(zone).utcoffset(), moment.astimezone(zone).utcoffset()
        if then is not None and now is not None and then != now:
            out.append((name, int(then.total_seconds() // 60), int(now.total_seconds() // 60)))
    return tuple(out)
