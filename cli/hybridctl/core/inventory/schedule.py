"""A workload's `schedule` (inventory revision 3): recurring windows in a typical week.

The models read and check each window on its own (days, quarter-hour times, a known IANA zone);
what needs the whole schedule (overlaps, the window hours W) is computed here and checked in
checks.py. Times are wall-clock in the window's zone; `utc_intervals` reads them at one ISO week,
so daylight saving is the one of that week.
"""

from __future__ import annotations

import re
import zoneinfo
from datetime import date, datetime, timedelta
from functools import cached_property
from types import MappingProxyType
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic_core import PydanticCustomError

DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
MINUTES_PER_DAY = 24 * 60
MINUTES_PER_WEEK = 7 * MINUTES_PER_DAY
HOURS_PER_WEEK = 168
HOURS_PER_MONTH = 730

_TIME_RE = re.compile(r"([01][0-9]|2[0-4]):([0-5][0-9])\Z")


def _day_spec(value: str) -> str:
    parts = value.split("-")
    if len(parts) > 2 or any(p not in DAYS for p in parts):
        raise PydanticCustomError("day_spec", "is not a day or a range of days")
    return value


def _time_of_day(value: str) -> str:
    match = _TIME_RE.fullmatch(value)
    if match is None or (match.group(1) == "24" and match.group(2) != "00"):
        raise PydanticCustomError("time_of_day", "is not a time of day HH:MM")
    if int(match.group(2)) % 15:
        raise PydanticCustomError("quarter_hour", "is not on the quarter hour")
    return value


# Zones that name no place: they follow the host's settings, or mean no zone at all
_HOST_ZONES = frozenset({"localtime", "Factory", "posixrules"})


def _time_zone(value: str) -> str:
    """An IANA zone by name. ZoneInfo alone took a directory of the zone database (`America`: "Is a directory")
    or a name the OS refuses as a path (5,000 characters) as a file to open, and said so in the OS's words."""
    if value in _HOST_ZONES or value.startswith(("posix/", "right/")):
        raise PydanticCustomError("time_zone", "is not an IANA time zone")
    try:
        zoneinfo.ZoneInfo(value)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise PydanticCustomError("time_zone", "is not an IANA time zone") from None
    return value


def _from_time(value: str) -> str:
    if _time_of_day(value) == "24:00":
        raise PydanticCustomError("time_of_day", "is not a start time (24:00 ends a day; start at 00:00)")
    return value


_QUARTERS = "([01][0-9]|2[0-3]):(00|15|30|45)"
DaySpec = Annotated[str, Field(strict=True), AfterValidator(_day_spec)]
TimeOfDay = Annotated[str, Field(strict=True), AfterValidator(_time_of_day),
                      WithJsonSchema({"type": "string", "pattern": f"^({_QUARTERS}|24:00)$"})]
StartTime = Annotated[str, Field(strict=True), AfterValidator(_from_time),
                      WithJsonSchema({"type": "string", "pattern": f"^{_QUARTERS}$"})]
TimeZone = Annotated[str, Field(strict=True), AfterValidator(_time_zone)]


def _one_or_more(value: object) -> object:
    return [value] if isinstance(value, str) else value


_DAY_SCHEMA = MappingProxyType(
    {"type": "string", "pattern": "^(mon|tue|wed|thu|fri|sat|sun)(-(mon|tue|wed|thu|fri|sat|sun))?$"})
# One day, a range or a list of them, read as a list: an error then names the one item that is wrong.
Days = Annotated[list[DaySpec], Field(min_length=1), BeforeValidator(_one_or_more),
                 WithJsonSchema({"anyOf": [dict(_DAY_SCHEMA), {"type": "array", "items": dict(_DAY_SCHEMA), "minItems": 1}]})]


class Window(BaseModel):
    """A recurring window: on these days, from this time to that one, in a time zone."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    days: Days = Field(
        description="A day (mon ... sun), a range (mon-fri; fri-mon wraps), or a list of them.")
    start: StartTime = Field(alias="from", description="HH:MM on the quarter hour, wall clock in tz.")
    end: TimeOfDay = Field(alias="to", description="HH:MM on the quarter hour (24:00 allowed); not after `from`: "
                                                   "the window runs past midnight into the next day.")
    tz: TimeZone = Field("UTC", description="An IANA time zone name (Europe/Amsterdam); default UTC.")

    def day_indexes(self) -> tuple[int, ...]:
        """The days the window opens on, Monday 0 ... Sunday 6, each once."""
        found: set[int] = set()
        for spec in self.days:
            first, _, last = spec.partition("-")
            a, b = DAYS.index(first), DAYS.index(last or first)
            found.update((a + k) % 7 for k in range((b - a) % 7 + 1))
        return tuple(sorted(found))

    def span_minutes(self) -> tuple[int, int]:
        """(start, length) in minutes after the opening day's midnight; past midnight when to <= from."""
        start, end = _minutes(self.start), _minutes(self.end)
        return start, (end - start) if end > start else end + MINUTES_PER_DAY - start


class Schedule(BaseModel):
    """When a workload may run: recurring windows in a typical week."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    windows: Annotated[list[Window], Field(min_length=1)] = Field(
        description="Recurring windows; a replica runs only inside them. Windows may not overlap.")

    @cached_property
    def window_hours(self) -> float:
        """W: the hours per week inside the windows (wall clock, as the user wrote them). Kept once
        read: the planner asks for it per demand and pool (10^5 times on a 10,000-workload fleet)."""
        return sum(len(w.day_indexes()) * w.span_minutes()[1] for w in self.windows) / 60


def _minutes(text: str) -> int:
    hours, minutes = text.split(":")
    return int(hours) * 60 + int(minutes)


def default_hours_per_month(schedule: Schedule) -> float:
    """hours_per_month's default with windows: W × 730 / 168, the whole windows."""
    return schedule.window_hours * HOURS_PER_MONTH / HOURS_PER_WEEK


def utc_intervals(window: Window, monday: date) -> list[tuple[int, int]]:
    """The window's openings in the week of `monday`, as [start, end) minutes from Monday 00:00 UTC,
    wrapped into the week (the typical week repeats: what spills past Sunday 24:00 UTC runs at
    the start of the week). Daylight saving is read at each opening's own date."""
    zone = zoneinfo.ZoneInfo(window.tz)
    start_minutes, length = window.span_minutes()
    week_start = datetime(monday.year, monday.month, monday.day, tzinfo=zoneinfo.ZoneInfo("UTC"))
    out: list[tuple[int, int]] = []
    for day in window.day_indexes():
        local_day = monday + timedelta(days=day)
        opens_wall = datetime(local_day.year, local_day.month, local_day.day, tzinfo=zone) \
            + timedelta(minutes=start_minutes)
        closes_wall = opens_wall + timedelta(minutes=length)  # wall-clock arithmetic in `zone`
        opens = int((opens_wall - week_start).total_seconds() // 60)
        closes = int((closes_wall - week_start).total_seconds() // 60)
        if closes <= opens:  # a window inside the hour daylight saving skips
            continue
        out.extend(_wrapped(opens, closes))
    return out


def _wrapped(opens: int, closes: int) -> tuple[tuple[int, int], ...]:
    """[opens, closes) minutes from Monday 00:00 UTC, wrapped into the week: one interval, or two."""
    opens_mod = opens % MINUTES_PER_WEEK
    closes_mod = opens_mod + (closes - opens)
    if closes_mod <= MINUTES_PER_WEEK:
        return ((opens_mod, closes_mod),)
    return (opens_mod, MINUTES_PER_WEEK), (0, closes_mod - MINUTES_PER_WEEK)


def merged(intervals: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted, non-overlapping, touching ones joined."""
    out: list[tuple[int, int]] = []
    for start, end in sorted(intervals):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


# The year whose weeks the overlap check reads the zones' rules in: validation must not depend on today's date.
_OVERLAP_YEAR = 2026
_UTC = zoneinfo.ZoneInfo("UTC")


def _offset_minutes(zone: zoneinfo.ZoneInfo, moment: datetime) -> int:
    offset = moment.astimezone(zone).utcoffset()
    assert offset is not None
    return int(offset.total_seconds() // 60)


def offset_regimes(zones: list[str]) -> list[tuple[int, ...]]:
    """Each distinct combination of the zones' UTC offsets (minutes, in `zones`' order) that holds for a whole
    week of the year, in the order the year meets them. Windows in zones whose daylight saving starts on
    different dates (America/New_York in the second week of March, Europe/London in the last) stand in
    another relation to each other in the weeks between: each such week is a regime of its own. A week in
    which a zone changes its offset is left out: its openings straddle two regimes, and what spills past
    Sunday into the next week (the week repeats) would meet the week's start at another offset."""
    loaded = [zoneinfo.ZoneInfo(name) for name in zones]
    regimes: list[tuple[int, ...]] = []
    for week in range(1, date(_OVERLAP_YEAR, 12, 28).isocalendar().week + 1):
        monday = date.fromisocalendar(_OVERLAP_YEAR, week, 1)
        # from a day before the week (a zone ahead of UTC opens Monday on Sunday) to two after (the last
        # opening lasts up to 24 hours, and a zone behind UTC runs up to 12 hours later)
        first = datetime(monday.year, monday.month, monday.day, tzinfo=_UTC) - timedelta(days=1)
        last = first + timedelta(days=10)
        before = tuple(_offset_minutes(z, first) for z in loaded)
        if before == tuple(_offset_minutes(z, last) for z in loaded) and before not in regimes:
            regimes.append(before)
    return regimes


def first_overlap(schedule: Schedule) -> tuple[int, int] | None:
    """The indexes (i < j) of two windows that share a minute (the first found in the first regime, in time
    order), or None. Sort and sweep: n windows cost n log n in each regime, not n² pairs. One window never
    overlaps itself: it lasts at most 24 hours, so its openings on consecutive days only touch."""
    windows = schedule.windows
    zones = sorted({w.tz for w in windows})
    spans = [(w.span_minutes(), w.day_indexes(), zones.index(w.tz)) for w in windows]
    for offsets in offset_regimes(zones):
        intervals = sorted(
            (opens, closes, index)
            for index, ((start, length), days, zone) in enumerate(spans)
            for day in days
            for opens, closes in _wrapped(day * MINUTES_PER_DAY + start - offsets[zone],
                                          day * MINUTES_PER_DAY + start - offsets[zone] + length))
        # the latest close so far and its window, and the latest of any other window: a new opening before
        # the close of another window than its own is an overlap
        reach, owner, other_reach, other = -1, -1, -1, -1
        for opens, closes, index in intervals:
            if index != owner and opens < reach:
                return min(owner, index), max(owner, index)
            if index == owner and opens < other_reach:
                return min(other, index), max(other, index)
            if closes > reach:
                if index != owner:
                    other_reach, other = reach, owner
                reach, owner = closes, index
            elif index != owner and closes > other_reach:
                other_reach, other = closes, index
    return None
