"""`failover --at TIME` at the CLI's edge (issue 31 item 6): the runbook names the segment its first steps
act in; a TIME that cannot be one is a usage error with a hint (exit 2), never a traceback."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.examples import EXAMPLES
from support.inproc import run_cli
from support.week_fleet import SUMMER, WEEK_FLEET


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("at")
    inventory = root / "week-shop.yaml"
    inventory.write_text(WEEK_FLEET)
    plan_file = root / "plan.json"
    made = run_cli("plan", str(inventory), "--week", SUMMER, "--out", str(plan_file))
    assert made.code == 0, made.output
    return inventory, plan_file


def _friday(hour: int, minute: int = 0) -> str:
    """A Friday near now at this UTC time, with an offset (in range whatever day the suite runs)."""
    now = datetime.now(UTC)
    friday = (now + timedelta(days=(4 - now.weekday()) % 7)).replace(hour=hour, minute=minute, second=0,
                                                                     microsecond=0)
    return (friday + timedelta(hours=1)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M") + "+01:00"


def test_the_runbook_names_the_segment_and_the_steps_needed_later(planned: tuple[Path, Path]) -> None:
    inventory, plan_file = planned
    done = run_cli("failover", "site-lost", "dc-a", "--plan", str(plan_file), "-i", str(inventory),
                   "--at", _friday(1, 30))
    assert done.code == 0, done.output
    assert "01:30 UTC: segment 13 of 17, Thu 20:00 → Fri 06:00 UTC" in done.stdout
    assert f"in the plan's week {SUMMER}" in done.stdout
    assert "#### Later in the week" in done.stdout
    assert "| `cloud-pools/aws` | needed from Fri 06:00 UTC (segment 14, in 4 h 18 min; start by Fri 05:48 UTC): " \
           "day-service runs then |" in done.stdout


def test_the_json_has_the_versioned_at(planned: tuple[Path, Path]) -> None:
    inventory, plan_file = planned
    done = run_cli("failover", "site-lost", "dc-a", "--plan", str(plan_file), "-i", str(inventory),
                   "--at", _friday(12), "--format", "json")
    assert done.code == 0, done.output
    at = json.loads(done.stdout)["at"]
    assert at["version"] == 1 and at["week"] == SUMMER
    assert at["segment"]["clock"] == "Fri 06:00 → Fri 18:00 UTC"
    assert at["later_steps"] == []


def test_now_is_the_default(planned: tuple[Path, Path]) -> None:
    inventory, plan_file = planned
    done = run_cli("failover", "site-lost", "dc-b", "--plan", str(plan_file), "-i", str(inventory),
                   "--format", "json")
    assert done.code == 0, done.output
    at = json.loads(done.stdout)["at"]
    assert abs(datetime.fromisoformat(at["time"]) - datetime.now(UTC)) < timedelta(hours=1)
    assert at["segment"] is not None


@pytest.mark.parametrize(("text", "words"), [
    ("friday", "'friday' is not an ISO 8601 date-time"),
    ("2026-13-40T00:00Z", "is not an ISO 8601 date-time"),
    ("2026-11-27T02:30", "has no offset"),
    ("1999-01-01T00:00Z", "more than 366 days from now"),
    ("9999-12-31T23:59+14:00", "outside the years 1970 to 9998"),  # its week's end would overflow the clock
])
def test_a_time_that_cannot_be_one_is_a_usage_error(planned: tuple[Path, Path], text: str, words: str) -> None:
    inventory, plan_file = planned
    done = run_cli("failover", "site-lost", "dc-a", "--plan", str(plan_file), "-i", str(inventory), "--at", text)
    assert done.code == 2, done.output
    assert "--at: " in done.stderr and words in done.stderr
    assert "hint:" in done.stderr and "Traceback" not in done.output


def test_an_untimed_plan_says_it_has_no_week(tmp_path: Path) -> None:
    inventory = EXAMPLES / "split-inference.yaml"
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(inventory), "--out", str(plan_file)).code == 0
    sites = json.loads(plan_file.read_text())["placements"]
    done = run_cli("failover", "site-lost", sites[0]["site"], "--plan", str(plan_file), "-i", str(inventory),
                   "--at", "now")
    assert done.code == 0, done.output
    assert "the plan has no week (no `schedule`): every step acts at once" in done.stdout
