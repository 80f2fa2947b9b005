"""`status --at` and `failover --at` on the edges of the plan's week and of its segments (spec, "Time": segments cut
the week from Monday 00:00 UTC, each [start, end)): a moment exactly on an edge belongs to the segment that starts
there, a moment a second before an edge to the one that ends there, and Monday 00:00 is the week's first segment,
not its last (the week wraps: Sunday 23:59:59 is the last)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from support.inproc import run_cli
from support.week_fleet import SUMMER, WEEK_FLEET

# tests/data/week-view/clinic.yaml planned for 2026-W48 (tests/operations/test_status_segment.py's state): its
# segments start Mon 00:00 (index 0), Mon 07:00 (1, the triage service's Amsterdam day) and Mon 19:00 (2, to Tue
# 05:00, across Monday 24:00); the last of the 17 runs to Monday 00:00.
STATUS_MOMENTS = [
    ("2026-11-30T00:00Z", 0, "Mon 00:00 → Mon 07:00 UTC"),  # the week's first minute
    ("2026-11-29T19:00-05:00", 0, "Mon 00:00 → Mon 07:00 UTC"),  # the same moment, a Sunday where it is written
    ("2026-11-30T06:59:59Z", 0, "Mon 00:00 → Mon 07:00 UTC"),  # a second before an edge
    ("2026-11-30T07:00Z", 1, "Mon 07:00 → Mon 19:00 UTC"),  # exactly on it
    ("2026-11-30T23:59:59Z", 2, "Mon 19:00 → Tue 05:00 UTC"),  # just before Monday 24:00
    ("2026-12-01T00:00Z", 2, "Mon 19:00 → Tue 05:00 UTC"),  # Monday 24:00
    ("2026-12-06T23:59:59Z", 16, None),  # just before the week's end: its last segment
]


@pytest.fixture(scope="module")
def state(tmp_path_factory: pytest.TempPathFactory) -> str:
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.core.plan.serialize import plan_to_dict
    from hybridctl.core.week.segments import parse_iso_week
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.state import State, StateStore

    clinic = Path(__file__).resolve().parents[1] / "data" / "week-view" / "clinic.yaml"
    the_plan = plan(load_inventory(clinic).inventory, options=PlanOptions(week=parse_iso_week("2026-W48")))
    root = tmp_path_factory.mktemp("edges")
    store = StateStore(root / "state")
    with store.locked(command="test"):
        store.write(State(serial=1, applied_plan=plan_to_dict(the_plan, plan_file=True), applied_plan_digest="sha256:t",
                          applied_at="2026-11-26T00:00:00+00:00"))
    return str(root / "state")


@pytest.mark.parametrize(("at", "index", "clock"), STATUS_MOMENTS)
def test_status_at_an_edge(state: str, at: str, index: int, clock: str | None) -> None:
    done = run_cli("status", "--state", state, "--no-drift", "--format", "json", "--at", at)
    assert done.code == 0, done.output
    segment = json.loads(done.stdout)["now"]["segment"]
    assert segment["index"] == index
    if clock is not None:
        assert segment["clock"] == clock
    moment = datetime.fromisoformat(at.replace("Z", "+00:00"))
    assert datetime.fromisoformat(segment["starts_at"]) <= moment < datetime.fromisoformat(segment["ends_at"])


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("edges-failover")
    inventory = root / "week-shop.yaml"
    inventory.write_text(WEEK_FLEET)
    plan_file = root / "plan.json"
    made = run_cli("plan", str(inventory), "--week", SUMMER, "--out", str(plan_file))
    assert made.code == 0, made.output
    return inventory, plan_file


def _next_monday() -> datetime:
    """Monday 00:00 UTC of next week: within failover's range whatever day the suite runs."""
    now = datetime.now(UTC)
    return datetime(now.year, now.month, now.day, tzinfo=UTC) + timedelta(days=7 - now.weekday())


# the week shop in summer: nothing timed runs Mon 00:00-06:00 UTC (segment 1 of 17); the nightly fine-tune's window
# runs Mon 20:00 → Tue 06:00 (segment 4), across Monday 24:00; the weekend's segment runs to the week's end
@pytest.mark.parametrize(("offset", "index", "clock"), [
    (timedelta(0), 1, "Mon 00:00 → Mon 06:00 UTC"),
    (timedelta(hours=6) - timedelta(seconds=1), 1, "Mon 00:00 → Mon 06:00 UTC"),
    (timedelta(hours=6), 2, "Mon 06:00 → Mon 18:00 UTC"),
    (timedelta(hours=24) - timedelta(seconds=1), 4, "Mon 20:00 → Tue 06:00 UTC"),
    (-timedelta(seconds=1), 17, "Sat 06:00 → Mon 00:00 UTC"),  # Sunday 23:59:59: the week before's last
])
def test_failover_at_an_edge(planned: tuple[Path, Path], offset: timedelta, index: int, clock: str) -> None:
    inventory, plan_file = planned
    moment = _next_monday() + offset
    done = run_cli("failover", "site-lost", "dc-b", "--plan", str(plan_file), "-i", str(inventory),
                   "--at", moment.strftime("%Y-%m-%dT%H:%M:%SZ"), "--format", "json")
    assert done.code == 0, done.output
    segment = json.loads(done.stdout)["at"]["segment"]
    assert (segment["index"], segment["of"], segment["clock"]) == (index, 17, clock)
    assert datetime.fromisoformat(segment["starts_at"]) <= moment < datetime.fromisoformat(segment["ends_at"])
