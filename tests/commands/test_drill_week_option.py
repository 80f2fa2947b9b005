"""`drill --week`: the ISO week a fresh plan of a timed inventory is drilled in, as `plan --week` names it, so a
CI drill gives the same segments whatever week it runs; a week that is not one is plan's usage error (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.examples import write
from support.inproc import run_cli
from support.plan_week import PLAN_WEEK_TEXT
from support.week_fleet import SUMMER, WEEK_FLEET, WEEK_FLEET_FILE

DRILLS = WEEK_FLEET_FILE.parent / "week-shop-drills.yaml"


@pytest.fixture(scope="module")
def inventory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("drill-week"), WEEK_FLEET, "week-shop.yaml")


def _worst(inventory: Path, week: str) -> dict[str, object]:
    done = run_cli("drill", str(inventory), "-s", str(DRILLS), "--week", week, "--format", "json")
    assert done.code == 0, done.output
    scenarios = json.loads(done.stdout)["scenarios"]
    return {s["name"]: s["worst_segment"] for s in scenarios}["a-lost"]


def test_the_drill_is_of_the_named_weeks_segments(inventory: Path) -> None:
    # the daytime service's window is Amsterdam's: 08:00 is 06:00 UTC in summer, 07:00 UTC in winter
    summer, winter = _worst(inventory, SUMMER), _worst(inventory, PLAN_WEEK_TEXT)
    assert (summer["clock"], summer["of"]) == ("Mon 06:00 → Mon 18:00 UTC", 17)
    assert (winter["clock"], winter["of"]) == ("Mon 07:00 → Mon 19:00 UTC", 21)


@pytest.mark.parametrize(("week", "words"), [("2026-48", "write YYYY-Www"), ("2026-W60", "2026 has no week 60")])
def test_a_week_that_is_not_one_is_plans_usage_error(inventory: Path, week: str, words: str) -> None:
    drilled, planned = run_cli("drill", str(inventory), "--week", week), run_cli("plan", str(inventory), "--week", week)
    assert drilled.code == planned.code == 2
    assert drilled.stderr == planned.stderr  # one parser for both
    (line, hint) = drilled.stderr.splitlines()
    assert line.startswith(f"error: --week: '{week}'") and words in line
    assert hint == "hint: name an ISO week, such as 2026-W48"


def test_a_plan_files_drill_keeps_the_plans_week(inventory: Path, tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(inventory), "--week", SUMMER, "--out", str(plan_file)).code == 0
    done = run_cli("drill", str(inventory), "--plan", str(plan_file), "--week", PLAN_WEEK_TEXT)
    assert done.code == 2
    assert done.stderr.splitlines()[0] == ("error: --week and --plan contradict each other: a drill from a plan file "
                                           "is for the plan's own week")
