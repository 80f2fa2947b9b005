"""When a runbook acts in the plan's week, as recorded in the runbook (its `at` object): the segment the
first steps act in and the steps needed only later. Computed by timing.py; kept and read back here, so
that the runbook's own model (runbook.py) needs nothing of how it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from hybridctl.core.inventory.schedule import HOURS_PER_WEEK
from hybridctl.core.week.clock import week_clock

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
    """A runbook file's `at` (None when absent); ValueError, KeyError or TypeError on a malformed one, naming the
    field (`at.segment.start_hour: …`). `at` is outside every digest: anything in it is checked here, before a
    view reads it (a moment past year 9998 overflowed, a NaN hour broke the clock)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or raw.get("version") != TIMING_VERSION:
        raise ValueError(f"`at` is not a version-{TIMING_VERSION} object")

    def span(s: object, where: str) -> SegmentSpan:
        if not isinstance(s, dict):
            raise TypeError(f"{where}: not an object")
        count = _whole(s.get("of"), f"{where}.of", 1, MAX_SEGMENTS)
        start, end = (_hour(s.get(k), f"{where}.{k}") for k in ("start_hour", "end_hour"))
        return SegmentSpan(_whole(s.get("index"), f"{where}.index", 1, count) - 1, count, start, end,
                           _parse(s.get("starts_at"), f"{where}.starts_at"), _parse(s.get("ends_at"), f"{where}.ends_at"))

    segment = raw.get("segment")
    later = raw.get("later_steps", [])
    if not isinstance(later, list):
        raise TypeError("at.later_steps: not a list")
    steps = []
    for i, s in enumerate(later):
        where = f"at.later_steps[{i}]"
        if not isinstance(s, dict) or not isinstance(s.get("workloads"), list):
            raise TypeError(f"{where}: not an object with a list of workloads")
        steps.append(LaterStep(str(s["step"]), tuple(str(w) for w in s["workloads"]), span(s.get("segment"),
                               f"{where}.segment"), _parse(s.get("needed_by"), f"{where}.needed_by")))
    return RunbookTiming(_parse(raw.get("time"), "at.time"), str(raw.get("week") or ""),
                         span(segment, "at.segment") if isinstance(segment, dict) else None, tuple(steps))


MAX_SEGMENTS = 60 * HOURS_PER_WEEK  # a week cut at every minute
_YEARS = (1970, 9998)  # the years a week or a moment may fall in (core/week/segments.py)


def _whole(value: object, where: str, least: int, most: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
        raise ValueError(f"{where}: {value!r:.40} is not a whole number from {least} to {most}")
    return value


def _hour(value: object, where: str) -> float:
    """An hour of the week from Monday 00:00 UTC: a number from 0 to 168 (NaN and infinities are neither)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= HOURS_PER_WEEK:
        raise ValueError(f"{where}: {value!r:.40} is not an hour of the week (a number from 0 to {HOURS_PER_WEEK})")
    return float(value)


def _iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _parse(text: object, where: str = "at") -> datetime:
    """An ISO 8601 moment with its offset, in the years 1970 to 9998 (in UTC as at its own offset)."""
    try:
        moment = datetime.fromisoformat(text) if isinstance(text, str) else None
        if moment is None or moment.tzinfo is None:
            raise ValueError
        utc = moment.astimezone(UTC)
    except (ValueError, OverflowError):
        raise ValueError(f"{where}: {text!r:.60} is not a date-time with its offset in the years "
                         f"{_YEARS[0]} to {_YEARS[1]}") from None
    if not _YEARS[0] <= min(moment.year, utc.year) <= max(moment.year, utc.year) <= _YEARS[1]:
        raise ValueError(f"{where}: {text!r:.60} is not in the years {_YEARS[0]} to {_YEARS[1]}")
    return utc
