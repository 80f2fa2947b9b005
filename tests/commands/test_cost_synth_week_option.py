"""`cost --week` and `synth --week`: the ISO week an inventory is planned for, as `plan --week` names it, so the
showback and the stacks of a timed inventory are of the named week whatever week the suite runs; a week that is not
one is plan's usage error (exit 2), and a plan file keeps its own week."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.examples import write
from support.inproc import run_cli
from support.plan_week import PLAN_WEEK_TEXT
from support.week_fleet import SUMMER, WEEK_FLEET

# Two more service replicas (20 GPUs by day) and the fine-tune from 18:00 UTC: in summer the service's window
# (06:00-18:00 UTC) ends as the fine-tune starts and the owned 24 GPUs hold both; in winter (07:00-19:00 UTC)
# they overlap for an hour, 28 GPUs, and a service replica is rented: the week changes the cost.
OVERLAP_IN_WINTER = (WEEK_FLEET.replace("replicas: 3", "replicas: 5")
                     .replace('from: "20:00", to: "06:00"}', 'from: "18:00", to: "06:00"}'))
# Seven service replicas (28 GPUs by day): one is rented every weekday in either week, so the rented pool's
# scheduled scaling follows the service's Amsterdam window in UTC.
RENTED_BY_DAY = WEEK_FLEET.replace("replicas: 3", "replicas: 7")


@pytest.fixture(autouse=True)
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HYBRIDCTL_STATE", str(tmp_path / "state"))


def _total(*args: str) -> float:
    done = run_cli(*args, "--format", "json")
    assert done.code == 0, done.output
    total = json.loads(done.stdout)["total_usd_per_month"]
    assert isinstance(total, float)
    return total


def test_the_cost_is_of_the_named_weeks_plan(tmp_path: Path) -> None:
    inventory = str(write(tmp_path, OVERLAP_IN_WINTER, "week-shop.yaml"))
    costs = {week: _total("cost", inventory, "--week", week) for week in (SUMMER, PLAN_WEEK_TEXT)}
    plans = {week: _total("plan", inventory, "--week", week) for week in (SUMMER, PLAN_WEEK_TEXT)}
    assert costs == plans
    assert costs[PLAN_WEEK_TEXT] > costs[SUMMER]  # winter's overlap hour rents


def _schedule(inventory: Path, week: str, out: Path) -> set[tuple[str, str]]:
    done = run_cli("synth", str(inventory), "--week", week, "--out", str(out))
    assert done.code == 0, done.output
    actions = (out / "week-shop-aws" / "aws" / "autoscaling.Schedule").glob("*.json")
    return {(json.loads(a.read_text())["recurrence"], json.loads(a.read_text())["timeZone"]) for a in actions}


def test_synth_scales_on_the_windows_own_clock_in_any_week(tmp_path: Path) -> None:
    inventory = write(tmp_path, RENTED_BY_DAY, "week-shop.yaml")
    summer, winter = _schedule(inventory, SUMMER, tmp_path / "summer"), _schedule(inventory, PLAN_WEEK_TEXT,
                                                                                   tmp_path / "winter")
    # up 12 minutes (aws's provision_minutes) before 08:00 Amsterdam time, down at 20:00, Monday to Friday (cron's
    # days 1-5), written in Amsterdam's zone: a plan made in winter is right in summer (an hour earlier in UTC)
    expected = {(f"{m} {h} * * {d}", "Europe/Amsterdam") for d in range(1, 6) for m, h in (("48", "7"), ("0", "20"))}
    assert summer == winter == expected


@pytest.mark.parametrize("command", ["cost", "synth"])
@pytest.mark.parametrize(("week", "words"), [("2026-48", "write YYYY-Www"), ("2026-W60", "2026 has no week 60")])
def test_a_week_that_is_not_one_is_plans_usage_error(tmp_path: Path, command: str, week: str, words: str) -> None:
    inventory = str(write(tmp_path, WEEK_FLEET, "week-shop.yaml"))
    extra = ("--out", str(tmp_path / "out")) if command == "synth" else ()
    done, planned = run_cli(command, inventory, "--week", week, *extra), run_cli("plan", inventory, "--week", week)
    assert done.code == planned.code == 2
    assert done.stderr == planned.stderr  # one parser for all three
    (line, hint) = done.stderr.splitlines()
    assert line.startswith(f"error: --week: '{week}'") and words in line
    assert hint == "hint: name an ISO week, such as 2026-W48"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("command", "what"), [("cost", "costs"), ("synth", "stacks")])
def test_a_plan_file_keeps_the_plans_week(tmp_path: Path, command: str, what: str) -> None:
    inventory = write(tmp_path, RENTED_BY_DAY, "week-shop.yaml")
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(inventory), "--week", SUMMER, "--out", str(plan_file)).code == 0
    extra = ("--inventory", str(inventory), "--out", str(tmp_path / "out")) if command == "synth" else ()
    done = run_cli(command, str(plan_file), "--week", PLAN_WEEK_TEXT, *extra)
    assert done.code == 2, done.output
    (line, hint) = done.stderr.splitlines()
    assert line == f"error: --week and the plan file contradict each other: a plan file's {what} are of its own week"
    assert hint.startswith("hint: drop --week, or make the plan for that week: hybridctl plan ")
    assert not (tmp_path / "out").exists()
