"""When a runbook acts in the plan's week, as recorded in the runbook (its `at` object): the segment the
first steps act in and the steps needed only later. Computed by timing.py; kept and read back here, so
that the runbook's own model (runbook.py) needs nothing of how it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

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
