"""The inclusive ends of the years plans are for, 1970 and 9998 (core/week/segments.py FIRST_YEAR, LAST_YEAR), wherever
a week or a moment is taken: `--week` takes 1970-W01 (from Monday 1969-12-29) to 9998-W53 (to Monday 9999-01-04), and
`--at` every moment of those weeks, read in UTC; one second outside is a usage error (exit 2) with a hint."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.week.segments import IsoWeek, WeekError, parse_iso_week
from hybridctl.errors import ExitCode
from support.inproc import run_cli

CLINIC = Path(__file__).resolve().parents[1] / "data" / "week-view" / "clinic.yaml"
FIRST_WEEK, LAST_WEEK = "1970-W01", "9998-W53"


def test_the_first_and_last_weeks_are_weeks() -> None:
    assert parse_iso_week(FIRST_WEEK) == IsoWeek(1970, 1) and str(parse_iso_week(FIRST_WEEK).monday) == "1969-12-29"
    assert parse_iso_week(LAST_WEEK) == IsoWeek(9998, 53) and str(parse_iso_week(LAST_WEEK).monday) == "9998-12-28"
    for outside in ("1969-W52", "9999-W01"):
        with pytest.raises(WeekError, match="years 1970 to 9998"):
            parse_iso_week(outside)


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("years")
    out = {}
    for week in (FIRST_WEEK, LAST_WEEK, "2026-W48"):
        out[week] = root / f"plan-{week}.json"
        done = run_cli("plan", str(CLINIC), "--week", week, "--out", str(out[week]))
        assert done.code == 0, done.output
    return out


def test_plan_and_cost_at_both_ends(plans: dict[str, Path]) -> None:
    # Amsterdam is on winter time in all three weeks (no daylight saving before 1977; 9998's rule is today's)
    totals = {week: json.loads(path.read_text())["total_usd_per_month"] for week, path in plans.items()}
    assert totals[FIRST_WEEK] == totals[LAST_WEEK] == totals["2026-W48"]
    for week, path in plans.items():
        assert json.loads(path.read_text())["week"] == week
        shown = run_cli("cost", str(path), "--format", "json")
        assert shown.code == 0, shown.output
        assert json.loads(shown.stdout)["total_usd_per_month"] == totals[week]
    assert run_cli("cost", str(CLINIC), "--week", LAST_WEEK).code == 0


@pytest.mark.parametrize("week", ["1969-W52", "9999-W01"])
def test_a_week_outside_is_a_usage_error(week: str) -> None:
    done = run_cli("plan", str(CLINIC), "--week", week)
    assert done.code == int(ExitCode.USAGE) and "years 1970 to 9998" in done.stderr and "hint:" in done.stderr


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory, plans: dict[str, Path]) -> str:
    from hybridctl.drivers.state import State, StateStore

    store = StateStore(tmp_path_factory.mktemp("years-state") / "state")
    with store.locked(command="test"):
        store.write(State(serial=1, applied_plan=json.loads(plans["2026-W48"].read_text()),
                          applied_plan_digest="sha256:t", applied_at="2026-11-26T00:00:00+00:00"))
    return str(store.root)


@pytest.mark.parametrize(("at", "index"), [
    ("1969-12-29T00:00Z", 0),  # Monday 00:00 of 1970-W01
    ("1970-01-01T00:00+14:00", 7),  # Wednesday 1969-12-31 10:00 UTC: hour 58, Wed 07:00-19:00
    ("9998-12-31T23:59-14:00", 13),  # Friday 9999-01-01 13:59 UTC, in 9998-W53: Fri 07:00-19:00
    ("9999-01-03T23:59:59Z", 16),  # the last second of 9998-W53
])
def test_status_at_moments_of_the_first_and_last_weeks(state_dir: str, at: str, index: int) -> None:
    done = run_cli("status", "--state", state_dir, "--no-drift", "--format", "json", "--at", at)
    assert done.code == 0, done.output
    assert json.loads(done.stdout)["now"]["segment"]["index"] == index


@pytest.mark.parametrize("at", ["1969-12-28T23:59:59Z", "1969-12-29T00:59:59+01:00", "9999-01-04T00:00Z",
                                "9999-12-31T23:59-14:00", "0001-01-01T00:00+14:00"])
def test_status_at_a_moment_outside(state_dir: str, at: str) -> None:
    done = run_cli("status", "--state", state_dir, "--no-drift", "--at", at)
    assert done.code == int(ExitCode.USAGE), done.output
    assert "outside the years 1970 to 9998" in done.stderr and "1970-W01 to 9998-W53" in done.stderr
    assert "hint:" in done.stderr and "Traceback" not in done.output
