"""`schedule.windows` (inventory revision 3): what is read, and every error at its line with a hint."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from support.examples import BASE


def scheduled(windows: str, hours: str | None = "    hours_per_month: 100\n") -> str:
    text = BASE.replace("    hours_per_month: 100\n", (hours or "") + "    schedule:\n      windows:\n" + windows)
    assert text != BASE
    return text


def load(text: str) -> Inventory:
    return load_sources([Source("inv.yaml", text)]).inventory


def errors(text: str) -> list[Diagnostic]:
    with pytest.raises(InvalidInventoryError) as refused:
        load(text)
    return refused.value.diagnostics


def line_of(text: str, marker: str) -> int:
    return next(n for n, line in enumerate(text.splitlines(), start=1) if marker in line)


NIGHTLY = '        - {days: mon-fri, from: "20:00", to: "06:00", tz: Europe/Amsterdam}\n'
WEEKEND = '        - {days: [sat, sun], from: "08:00", to: "24:00"}\n'


class TestRead:
    def test_days_ranges_wrap_and_lists(self) -> None:
        text = scheduled('        - {days: fri-mon, from: "00:00", to: "24:00"}\n'
                         '        - {days: [wed], from: "10:00", to: "11:00"}\n'
                         '        - {days: tue, from: "10:00", to: "10:15"}\n')
        windows = load(text).workloads[0].schedule.windows  # type: ignore[union-attr]
        assert [w.day_indexes() for w in windows] == [(0, 4, 5, 6), (2,), (1,)]
        assert windows[0].tz == "UTC"

    def test_past_midnight_and_the_default_hours(self) -> None:
        workload = load(scheduled(NIGHTLY + WEEKEND, hours=None)).workloads[0]
        # 5 nights of 10 h + 2 days of 16 h = 82 h a week; the default is the whole windows
        assert workload.hours == pytest.approx(82 * 730 / 168)

    def test_hours_within_the_windows_are_accepted(self) -> None:
        assert load(scheduled(NIGHTLY, hours="    hours_per_month: 217\n")).workloads[0].hours == 217


class TestErrors:
    def test_overlapping_windows_at_the_second_window(self) -> None:
        text = scheduled(NIGHTLY + '        - {days: sat, from: "04:00", to: "09:00"}\n')
        (found,) = [d for d in errors(text) if d.code == "overlapping-windows"]
        assert found.location.line == line_of(text, "days: sat")
        assert "windows[1] overlaps schedule.windows[0]" in found.message
        assert found.hint and "join them" in found.hint

    def test_windows_in_different_zones_overlap_in_summer_only(self) -> None:
        # 08:00-09:00 UTC and 10:00-11:00 Amsterdam: apart in winter (09:00 UTC), one hour in summer
        text = scheduled('        - {days: mon, from: "08:00", to: "09:00"}\n'
                         '        - {days: mon, from: "10:00", to: "11:00", tz: Europe/Amsterdam}\n')
        assert [d.code for d in errors(text)] == ["overlapping-windows"]

    def test_touching_windows_do_not_overlap(self) -> None:
        load(scheduled('        - {days: mon, from: "08:00", to: "12:00"}\n'
                       '        - {days: mon, from: "12:00", to: "13:00"}\n', hours=None))

    def test_hours_above_the_windows(self) -> None:
        text = scheduled(NIGHTLY, hours="    hours_per_month: 300\n")
        (found,) = errors(text)
        assert found.code == "hours-beyond-windows"
        assert found.location.line == line_of(text, "hours_per_month: 300")
        assert "50 h a week = 217.3 h a month" in found.message
        assert found.hint and "at most 217.3" in found.hint

    def test_an_unknown_zone(self) -> None:
        text = scheduled('        - {days: mon, from: "08:00", to: "09:00", tz: Europe/Atlantis}\n')
        (found,) = errors(text)
        assert (found.code, found.location.line) == ("invalid-value", line_of(text, "Atlantis"))
        assert "is not an IANA time zone" in found.message and found.hint and "Europe/Amsterdam" in found.hint

    # a directory of the zone database ("Is a directory"), a name the OS refuses as a path ("File name too long"),
    # and zones that depend on the host: each was read as a file, or planned by this machine's settings
    @pytest.mark.parametrize("zone", ["America", "A" * 5000, "localtime", "Factory", "../../etc/passwd"])
    def test_a_name_that_is_no_iana_zone(self, zone: str) -> None:
        text = scheduled(f'        - {{days: mon, from: "08:00", to: "09:00", tz: "{zone}"}}\n')
        (found,) = errors(text)
        assert found.code == "invalid-value" and found.location.line == line_of(text, "tz:")
        assert "is not an IANA time zone" in found.message and found.hint and "Europe/Amsterdam" in found.hint

    @pytest.mark.parametrize("field", ["from", "to"])
    def test_a_time_off_the_quarter_hour(self, field: str) -> None:
        times = {"from": '"08:10", to: "09:00"', "to": '"08:00", to: "09:20"'}[field]
        text = scheduled(f"        - {{days: mon, from: {times}}}\n")
        (found,) = errors(text)
        assert found.message.startswith(f"workloads[0].schedule.windows[0].{field}: ")
        assert "is not on the quarter hour" in found.message
        assert found.location.line == line_of(text, "days: mon") and found.hint and ":45" in found.hint

    @pytest.mark.parametrize(("window", "words"), [
        ('{days: monday, from: "08:00", to: "09:00"}', "is not a day or a range of days"),
        ('{days: [mon, funday], from: "08:00", to: "09:00"}', "is not a day or a range of days"),
        ('{days: mon, from: "24:00", to: "09:00"}', "is not a start time"),
        ('{days: mon, from: "8am", to: "09:00"}', "is not a time of day"),
        ('{days: mon, from: "08:00", to: "24:15"}', "is not a time of day"),
    ])
    def test_unreadable_windows(self, window: str, words: str) -> None:
        (found,) = errors(scheduled(f"        - {window}\n"))
        assert words in found.message and found.hint
