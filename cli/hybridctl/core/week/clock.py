"""Hours of a plan's week read as a clock: the day and time of an hour, the week a moment falls in, and
the segment that holds it. A plan is for a typical week, repeated; its hours count from Monday 00:00 UTC.

Shared by `status` (running.py), `failover --at` (failover/timing.py), the drill's worst segment and the
report's heat map. The moment is always the caller's: nothing here reads a clock.
"""

from __future__ import annotations

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
