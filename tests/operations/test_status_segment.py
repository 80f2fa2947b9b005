"""`status` of a timed applied plan (issue 31 item 5): the segment of the plan's week a moment falls in
(`--at`, default now), and what the plan wants running in it, in text and in JSON (`now`, versioned)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.serialize import plan_to_dict
from hybridctl.core.week.segments import parse_iso_week
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.state import State, StateStore
from hybridctl.errors import ExitCode
from support.inproc import run_cli

CLINIC = Path(__file__).resolve().parents[1] / "data" / "week-view" / "clinic.yaml"


def _applied(tmp_path: Path, text: str | None = None) -> str:
    source = CLINIC
    if text is not None:
        source = tmp_path / "inventory.yaml"
        source.write_text(text)
    the_plan = plan(load_inventory(source).inventory, options=PlanOptions(week=parse_iso_week("2026-W48")))
    store = StateStore(tmp_path / "state")
    with store.locked(command="test"):
        store.write(State(serial=1, applied_plan=plan_to_dict(the_plan, plan_file=True), applied_plan_digest="sha256:t",
                          applied_at="2026-11-26T00:00:00+00:00"))
    return str(tmp_path / "state")


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> str:
    return _applied(tmp_path_factory.mktemp("status-week"))


def _now(state: str, at: str) -> dict[str, object]:
    result = run_cli("status", "--state", state, "--no-drift", "--format", "json", "--at", at)
    assert result.code == 0, result.output
    now: dict[str, object] = json.loads(result.stdout)["now"]
    return now


def test_the_day_segment_names_its_span_and_what_runs(state: str) -> None:
    # Monday 10:00 in Amsterdam: the triage service's window (08:00-20:00 Amsterdam = 07:00-19:00 UTC)
    now = _now(state, "2026-11-30T10:00+01:00")
    assert now["version"] == 1 and now["week"] == "2026-W48" and now["at"] == "2026-11-30T09:00:00+00:00"
    assert now["segment"] == {"index": 1, "of": 17, "start_hour": 7.0, "end_hour": 19.0,
                              "starts_at": "2026-11-30T07:00:00+00:00", "ends_at": "2026-11-30T19:00:00+00:00",
                              "clock": "Mon 07:00 → Mon 19:00 UTC"}
    pools = {p["pool"]: p for p in now["pools"]}  # type: ignore[attr-defined]
    # 5 replicas of 4 GPUs: the 16 owned GPUs, and 4 on one rented p5 (8 GPUs a machine)
    assert (pools["own-h100"]["gpus"], pools["own-h100"]["idle_committed_gpu_hours"]) == (16.0, 0.0)
    assert (pools["rent-h100"]["gpus"], pools["rent-h100"]["machines"]) == (4.0, 1.0)
    assert sorted((w["workload"], w["pool"], w["replicas"], w["runs"]) for w in now["workloads"]) == [  # type: ignore[attr-defined]
        ("triage-api", "own-h100", 4, "whole segment"), ("triage-api", "rent-h100", 1, "whole segment")]


def test_the_night_and_the_weekend(state: str) -> None:
    # Tuesday 02:00 UTC: the nightly training on the owned GPUs, nothing rented
    night = _now(state, "2026-12-01T02:00Z")
    assert night["segment"]["clock"] == "Mon 19:00 → Tue 05:00 UTC"  # type: ignore[index]
    pools = {p["pool"]: p for p in night["pools"]}  # type: ignore[attr-defined]
    assert (pools["own-h100"]["gpus"], pools["rent-h100"]["machines"]) == (8.0, 0.0)
    assert [(w["workload"], w["runs"]) for w in night["workloads"]] == [("nightly-train", "whole segment")]  # type: ignore[attr-defined]
    # Sunday noon: the weekend evaluation is deferrable: the hours the plan reserves for it in the segment
    sunday = _now(state, "2026-12-06T12:00Z")
    assert sunday["segment"]["index"] == 16  # type: ignore[index]
    [evaluation] = sunday["workloads"]  # type: ignore[misc]
    assert evaluation["workload"] == "weekend-eval" and evaluation["runs"] == "deferrable"
    assert evaluation["hours"] == pytest.approx(40 * 168 / 730)


def test_the_text_names_the_segment(state: str) -> None:
    result = run_cli("status", "--state", state, "--no-drift", "--at", "2026-11-30T10:00+01:00")
    assert result.code == 0, result.output
    text = " ".join(result.stdout.split())
    assert ("now: 2026-11-30 09:00 UTC, segment 2 of 17 of the plan's week 2026-W48: Mon 07:00 → Mon 19:00 UTC "
            "(2026-11-30 07:00 to 2026-11-30 19:00 UTC)") in text
    assert "should be running now, per pool" in text and "triage-api" in text and "the whole segment" in text


def test_an_untimed_plan_shows_no_segment(tmp_path: Path) -> None:
    text = "\n".join(line.replace("hours_per_month: 40", "hours_per_month: 730")
                     .replace("type: fine_tuning", "type: fine_tuning\n    hours_per_month: 730")
                     for line in CLINIC.read_text().splitlines() if "schedule:" not in line and "windows:" not in line)
    state = _applied(tmp_path, text)
    doc = json.loads(run_cli("status", "--state", state, "--no-drift", "--format", "json").stdout)
    assert "now" not in doc
    shown = run_cli("status", "--state", state, "--no-drift", "--at", "2026-11-30T10:00Z")
    assert shown.code == 0 and "segment" not in shown.stdout and "should be running" not in shown.stdout


# the last two overflowed in UTC (exit 70)
@pytest.mark.parametrize("at", ["tomorrow", "2026-11-30T10:00", "9999-12-31T23:59-14:00", "0001-01-01T00:00+14:00"])
def test_a_moment_that_is_not_one(state: str, at: str) -> None:
    result = run_cli("status", "--state", state, "--no-drift", "--at", at)
    assert result.code == int(ExitCode.USAGE) and "--at" in result.output and "Traceback" not in result.output


def test_a_week_that_cannot_be_read_leaves_the_rest_of_status(tmp_path: Path) -> None:
    state = _applied(tmp_path)
    store = StateStore(Path(state))
    with store.locked(command="test"):
        current = store.read()
        applied = dict(current.applied_plan or {})
        applied["segments"] = [{"start_hour": 0.0, "end_hour": 100.0}]  # not the week's 168 hours
        store.write(State(serial=2, applied_plan=applied, applied_plan_digest="sha256:t", applied_at=current.applied_at))
    shown = run_cli("status", "--state", state, "--no-drift", "--at", "2026-11-30T10:00Z")
    assert shown.code == 0 and "applied plan: inventory clinic-week" in shown.stdout
    assert "the applied plan's week cannot be read" in shown.stdout and "168" in " ".join(shown.stdout.split())
    doc = json.loads(run_cli("status", "--state", state, "--no-drift", "--format", "json").stdout)
    assert doc["now"]["version"] == 1 and "168" in doc["now"]["error"]


def _applied_with_inventory(tmp_path: Path) -> str:
    """The winter plan (2026-W48) applied, the state naming its inventory."""
    the_plan = plan(load_inventory(CLINIC).inventory, options=PlanOptions(week=parse_iso_week("2026-W48")))
    store = StateStore(tmp_path / "state")
    with store.locked(command="test"):
        store.write(State(serial=1, applied_plan=plan_to_dict(the_plan, plan_file=True), applied_plan_digest="sha256:t",
                          applied_at="2026-11-26T00:00:00+00:00", inventory_path=str(CLINIC)))
    return str(tmp_path / "state")


def test_status_warns_when_the_clocks_have_changed_since_the_plan_s_week(tmp_path: Path) -> None:
    """A winter plan still applied in summer: Amsterdam is UTC+02:00, the plan's segments were cut at
    UTC+01:00. Before: nothing said the applied plan had gone stale."""
    state = _applied_with_inventory(tmp_path)
    summer = run_cli("status", "--state", state, "--no-drift", "--format", "json", "--at", "2027-06-14T10:00+02:00")
    assert json.loads(summer.stdout)["now"]["clock_moved"] == [
        {"zone": "Europe/Amsterdam", "plan_utc_offset_minutes": 60, "utc_offset_minutes": 120}]
    text = " ".join(run_cli("status", "--state", state, "--no-drift", "--at", "2027-06-14T10:00+02:00").stdout.split())
    assert ("warning: the applied plan is for week 2026-W48, when Europe/Amsterdam was UTC+01:00; it is UTC+02:00 now"
            in text) and "plan --week" in text
    winter = run_cli("status", "--state", state, "--no-drift", "--format", "json", "--at", "2027-01-11T10:00+01:00")
    assert json.loads(winter.stdout)["now"]["clock_moved"] == []
    assert "warning" not in run_cli("status", "--state", state, "--no-drift", "--at", "2027-01-11T10:00+01:00").stdout
