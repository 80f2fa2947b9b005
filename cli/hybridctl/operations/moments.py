"""`--at TIME` of `status` and `failover` (a moment of the plan's week) and `--week` of `plan`, `drill`, `cost` and
`synth` (the week a plan is for), each parsed once for the operations that take it (as the text given)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.errors import UsageError

if TYPE_CHECKING:
    from hybridctl.core.week.segments import IsoWeek

_HINT = "write `now`, or a date-time with its offset, such as 2026-11-27T02:30+01:00 or 2026-11-27T01:30Z"


def parse_moment(text: str) -> datetime | None:
    """None for `now` (the operation reads the clock), else an aware date-time in UTC. A moment without an
    offset is refused: it would depend on this machine's zone."""
    if text.strip().lower() == "now":
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(f"--at: '{text}' is not an ISO 8601 date-time", hint=_HINT) from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise UsageError(f"--at: '{text}' has no offset: the moment would depend on this machine's zone", hint=_HINT)
    from hybridctl.core.week.segments import FIRST_YEAR, LAST_YEAR

    # A moment is read in its week (from Monday 00:00 UTC), so it is in range where its week is one `--week` takes:
    # 1969-12-29T00:00Z is in 1970-W01, 9999-01-03T23:59Z in 9998-W53 (the written year refused both and took
    # 1970-01-01T00:00+14:00). 9999-12-31T23:59-14:00 overflows in UTC: out of range too.
    try:
        utc = moment.astimezone(UTC)
    except OverflowError:
        utc = None
    if utc is None or not FIRST_YEAR <= utc.isocalendar().year <= LAST_YEAR:
        last_week = date(LAST_YEAR, 12, 28).isocalendar().week  # the 28th of December is in a year's last week
        raise UsageError(f"--at: '{text}' is outside the years {FIRST_YEAR} to {LAST_YEAR} plans are for "
                         f"(their weeks {FIRST_YEAR}-W01 to {LAST_YEAR}-W{last_week}, read in UTC)", hint=_HINT)
    return utc


def parse_moment_within(text: str, days: int, *, why: str, now: datetime | None = None) -> datetime:
    """parse_moment, `now` read here, and the moment within `days` of now (`why` says why, as the hint)."""
    now = now or datetime.now(UTC)
    moment = parse_moment(text) or now
    if abs(moment - now) > timedelta(days=days):
        raise UsageError(f"--at: '{text}' is more than {days} days from now ({now:%Y-%m-%d} UTC)", hint=why)
    return moment


def parse_week(text: str | None) -> IsoWeek | None:
    """`--week YYYY-Www`; None when not given (the operation plans for the current week)."""
    from hybridctl.core.week.segments import WeekError, parse_iso_week

    if text is None:
        return None
    try:
        return parse_iso_week(text)
    except WeekError as exc:
        raise UsageError(f"--week: {exc}", hint="name an ISO week, such as 2026-W48") from None


def week_of_source(text: str | None, source: Path, *, what: str, inventory: Path | None = None) -> IsoWeek | None:
    """parse_week for a command whose source is an inventory or a plan file: a plan file was made for its own week
    (its segments, its costs), so a --week beside one contradicts it. `what`: what the command makes of the plan."""
    from hybridctl.operations.common import looks_like_plan

    week = parse_week(text)
    if week is not None and looks_like_plan(source):
        raise UsageError(f"--week and the plan file contradict each other: a plan file's {what} are of its own week",
                         hint=f"drop --week, or make the plan for that week: hybridctl plan "
                              f"{inventory or 'INVENTORY'} --week {week} --out {source}")
    return week
