"""The plan's week (core/week/segments.py): segments, windows in UTC at that week, whole or deferrable."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.week.segments import IsoWeek, WeekError, build_week, parse_iso_week, week_of
from support.examples import BASE


def inventory(*workloads: str) -> Inventory:
    text = BASE.replace("workloads:\n", "workloads:\n" + "".join(workloads))
    return load_sources([Source("inv.yaml", text)], feasibility=False).inventory


def workload(name: str, windows: str, hours: str = "") -> str:
    return (f"  - name: {name}\n    type: batch_inference\n    gpu: {{types: [H100], count: 1}}\n{hours}"
            f"    schedule:\n      windows:\n{windows}")


NIGHTLY_AMS = '        - {days: mon-fri, from: "20:00", to: "06:00", tz: Europe/Amsterdam}\n'
WINTER, SUMMER = parse_iso_week("2026-W48"), parse_iso_week("2026-W26")


class TestIsoWeek:
    def test_read_and_written(self) -> None:
        assert (parse_iso_week("2026-W05"), str(IsoWeek(2026, 5))) == (IsoWeek(2026, 5), "2026-W05")

    # 0001-W01 was written back as "1-W01" and refused by the checker (exit 70); 9999-W52's last hours overflowed
    @pytest.mark.parametrize(("text", "words"), [("2026-48", "write YYYY-Www"), ("2025-W53", "has no week 53"),
                                                 ("0001-W01", "years 1970 to 9998"), ("9999-W52", "years 1970 to 9998")])
    def test_refused_with_how_to_write_it(self, text: str, words: str) -> None:
        with pytest.raises(WeekError, match=words):
            parse_iso_week(text)

    def test_the_week_of_a_moment(self) -> None:
        assert week_of(datetime(2026, 11, 26, 19, 0, tzinfo=UTC)) == IsoWeek(2026, 48)


class TestSegments:
    def test_no_schedule_is_one_segment_and_always_on_runs_it_whole(self) -> None:
        week = build_week(inventory(), WINTER)
        assert [(s.start_hour, s.end_hour) for s in week.segments] == [(0, 168)]
        train = week.workloads["train"]  # BASE's: 100 h a month without schedule
        assert (train.segments, train.deferrable, train.window_hours) == ((0,), True, 168)
        assert train.weekly_hours == pytest.approx(100 * 168 / 730)

    def test_the_week_is_cut_at_every_edge_of_every_workload(self) -> None:
        week = build_week(inventory(
            workload("day", '        - {days: mon, from: "08:00", to: "18:00"}\n'),
            workload("eve", '        - {days: mon, from: "12:00", to: "22:00"}\n')), WINTER)
        assert [(s.start_hour, s.end_hour) for s in week.segments] == [
            (0, 8), (8, 12), (12, 18), (18, 22), (22, 168)]
        assert (week.workloads["day"].segments, week.workloads["eve"].segments) == ((1, 2), (2, 3))
        assert week.workloads["train"].segments == (0, 1, 2, 3, 4)
        assert [s.hours for s in week.segments] == [8, 4, 6, 4, 146]

    def test_daylight_saving_is_read_at_the_plan_week(self) -> None:
        winter = build_week(inventory(workload("n", NIGHTLY_AMS)), WINTER).workloads["n"]
        summer = build_week(inventory(workload("n", NIGHTLY_AMS)), SUMMER).workloads["n"]
        assert winter.intervals[0] == (19 * 60, 29 * 60)  # Monday 20:00 CET = 19:00 UTC
        assert summer.intervals[0] == (18 * 60, 28 * 60)  # CEST: 18:00 UTC
        assert winter.window_hours == summer.window_hours == 50

    def test_a_window_past_sunday_midnight_utc_wraps_to_monday(self) -> None:
        week = build_week(inventory(workload("w", '        - {days: sun, from: "22:00", to: "02:00"}\n')), WINTER)
        assert week.workloads["w"].intervals == ((0, 120), (166 * 60, 168 * 60))

    def test_a_window_in_local_monday_morning_wraps_from_the_week_end(self) -> None:
        # Monday 00:00-01:00 in Tokyo is Sunday 15:00-16:00 UTC
        week = build_week(inventory(workload("t", '        - {days: mon, from: "00:00", to: "01:00", '
                                                   'tz: Asia/Tokyo}\n')), WINTER)
        assert week.workloads["t"].intervals == ((159 * 60, 160 * 60),)


class TestWholeOrDeferrable:
    def test_the_whole_windows_by_default(self) -> None:
        n = build_week(inventory(workload("n", NIGHTLY_AMS)), WINTER).workloads["n"]
        assert (n.deferrable, n.weekly_hours) == (False, 50)

    def test_a_rounded_whole_windows_is_whole(self) -> None:
        n = build_week(inventory(workload("n", NIGHTLY_AMS, "    hours_per_month: 217.26\n")), WINTER).workloads["n"]
        assert not n.deferrable  # 50 x 730 / 168 = 217.2619...

    def test_fewer_hours_are_deferrable_inside_the_windows(self) -> None:
        n = build_week(inventory(workload("n", NIGHTLY_AMS, "    hours_per_month: 73\n")), WINTER).workloads["n"]
        assert n.deferrable and n.weekly_hours == pytest.approx(16.8)
        assert len(n.segments) == 5
