"""`first_overlap`: windows compared in every regime of their zones' daylight saving, by sort and sweep.

Europe/London 13:00 and America/New_York 09:00 are an hour apart in winter and in summer, and meet only in
the weeks between the United States' change (second Sunday of March, first of November) and the United
Kingdom's (last Sunday of March, of October). The sweep agrees with comparing every pair, week by week.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from zoneinfo import ZoneInfo

from hybridctl.core.inventory.schedule import (
    DAYS,
    Schedule,
    Window,
    first_overlap,
    offset_regimes,
    utc_intervals,
)
from hypothesis import given, settings
from hypothesis import strategies as st


def window(days: str, start: str, end: str, tz: str = "UTC") -> Window:
    return Window(days=[days], start=start, end=end, tz=tz)


def test_windows_that_meet_only_between_two_zones_changes_of_daylight_saving_overlap() -> None:
    schedule = Schedule(windows=[window("mon", "13:00", "14:00", "Europe/London"),
                                 window("mon", "09:00", "10:00", "America/New_York")])
    assert first_overlap(schedule) == (0, 1)


def test_windows_that_touch_in_winter_and_in_summer_and_are_apart_between_do_not() -> None:
    schedule = Schedule(windows=[window("mon", "15:00", "16:00", "Europe/London"),
                                 window("mon", "09:00", "10:00", "America/New_York")])
    assert first_overlap(schedule) is None


def test_the_regimes_of_london_and_new_york() -> None:
    # winter, New York's summer alone (March and late October), both summers; London first in the list
    assert offset_regimes(["America/New_York", "Europe/London"]) == [(-300, 0), (-240, 0), (-240, 60)]
    assert offset_regimes(["UTC"]) == [(0,)]
    assert offset_regimes(["Europe/Amsterdam"]) == [(60,), (120,)]


def test_a_weekday_and_a_weekend_window_in_one_zone_do_not_overlap_across_its_change() -> None:
    """The weeks a zone changes its offset are left out: read there, Sunday's window spills past the week's
    end at one offset into Monday's at the other."""
    schedule = Schedule(windows=[window("mon-fri", "00:00", "24:00", "Europe/London"),
                                 Window(days=["sat-sun"], start="00:00", end="24:00", tz="Europe/London")])
    assert first_overlap(schedule) is None


def test_touching_quarter_hours_filling_the_week_do_not_overlap_and_one_more_does() -> None:
    quarters = [window(DAYS[k // 96], f"{k % 96 // 4:02d}:{k % 4 * 15:02d}",
                       f"{(k % 96 + 1) // 4:02d}:{(k % 96 + 1) % 4 * 15:02d}", "America/New_York") for k in range(672)]
    assert first_overlap(Schedule(windows=quarters)) is None
    assert first_overlap(Schedule(windows=[*quarters, window("wed", "12:00", "12:15")])) \
        == (quarters.index(window("wed", "07:00", "07:15", "America/New_York")), 672)


def pairwise(schedule: Schedule) -> set[tuple[int, int]]:
    """Every overlapping pair, comparing all pairs in every week of 2026 no zone changes its offset in."""
    found: set[tuple[int, int]] = set()
    zones = [ZoneInfo(w.tz) for w in schedule.windows]
    for week in range(1, 54):
        monday = date.fromisocalendar(2026, week, 1)
        first = datetime(monday.year, monday.month, monday.day, tzinfo=ZoneInfo("UTC")) - timedelta(days=1)
        if any(first.astimezone(z).utcoffset() != (first + timedelta(days=10)).astimezone(z).utcoffset() for z in zones):
            continue
        spans = [utc_intervals(w, monday) for w in schedule.windows]
        for j in range(len(spans)):
            for i in range(j):
                if any(a < d and c < b for a, b in spans[i] for c, d in spans[j]):
                    found.add((i, j))
    return found


ZONES = st.sampled_from(["UTC", "Europe/London", "America/New_York", "Australia/Sydney", "Asia/Kolkata"])
WINDOWS = st.builds(
    lambda day, start, length, tz: Window(days=[DAYS[day]], start=f"{start // 4:02d}:{start % 4 * 15:02d}",
                                          end=f"{(start + length) % 96 // 4:02d}:{(start + length) % 4 * 15:02d}",
                                          tz=tz),
    st.integers(0, 6), st.integers(0, 95), st.integers(1, 95), ZONES)


@settings(max_examples=150, deadline=None)
@given(st.lists(WINDOWS, min_size=1, max_size=6))
def test_the_sweep_finds_an_overlap_exactly_when_some_pair_overlaps(windows: list[Window]) -> None:
    schedule = Schedule(windows=windows)
    found = first_overlap(schedule)
    pairs = pairwise(schedule)
    assert (found is None) == (not pairs)
    assert found is None or found in pairs
