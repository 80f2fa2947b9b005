"""A plan is a function of its inputs, never of the machine's speed or load (spec, "Plans are reproducible").

The solver's work is counted (core/solver/effort.py); the wall clock is only the safety net. Here the clock
is made to run fast, as a loaded machine's seems to: each reading of it 2 s later than the last. Before, the
planner handed each component and stage "what was left" of a 30 s limit, so on such a clock the same fleet
planned otherwise; now the plan file is the same byte for byte. tests/e2e/test_plans_under_load.py plans
one fleet beside three busy processes.
"""

from __future__ import annotations

import itertools
import time

import pytest
import yaml
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.serialize import plan_to_json
from hybridctl.core.solver import effort as effort_module
from hybridctl.core.solver import highs_run
from hybridctl.core.week.segments import IsoWeek
from hybridctl.drivers.inventory_files import load_inventory
from inventory_gen import generate

WEEK = IsoWeek(2026, 48)


def _generated(tmp_path_factory: pytest.TempPathFactory, *shape: float) -> Inventory:
    path = tmp_path_factory.mktemp("fleet") / "inventory.yaml"
    path.write_text(yaml.safe_dump(generate(*shape), sort_keys=False))  # type: ignore[arg-type]
    return load_inventory(path).inventory


@pytest.fixture(scope="module", params=[(300, 40, 2, 0.3), (300, 40, 1, 0.0)], ids=["scheduled", "untimed"])
def fleet(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    return _generated(tmp_path_factory, *request.param)


@pytest.fixture(scope="module")
def busy_fleet(tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    """A fleet whose HiGHS runs take seconds (seed 4 of 1,000 x 100, 30 % scheduled: about 5 CPU-s): a run cut
    to the half second the old planner's least budget gave it plans otherwise."""
    return _generated(tmp_path_factory, 1000, 100, 4, 0.3)


def _plan_file(inventory: Inventory) -> str:
    return plan_to_json(plan(inventory, options=PlanOptions(week=WEEK)), plan_file=True)


@pytest.mark.slow
def test_a_fast_clock_plans_the_same_file(busy_fleet: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    quiet = _plan_file(busy_fleet)
    readings = itertools.count()
    start = time.perf_counter()
    monkeypatch.setattr(time, "perf_counter", lambda: start + 2.0 * next(readings))
    loaded = _plan_file(busy_fleet)
    assert next(readings) > 3  # the clock was read, and ran fast
    assert loaded == quiet


@pytest.mark.slow
def test_the_safety_net_says_so_when_it_strikes(busy_fleet: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past the deadline (a clock that jumps an hour at each reading) each run keeps its last half second, which
    this fleet's runs need more than: the plan is still valid, and its status says the safety net cut it short,
    the one plan that may differ from run to run."""
    readings = itertools.count()
    start = time.perf_counter()
    monkeypatch.setattr(time, "perf_counter", lambda: start + 3600.0 * next(readings))
    result = plan(busy_fleet, options=PlanOptions(week=WEEK))
    assert result.solver.status == "time_limit"
    assert check_plan(busy_fleet, result) == []


def test_a_plan_past_its_deadline_whose_runs_all_end_is_not_cut_short(fleet: Inventory,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The status says what happened, not what the clock read: runs that end within what is left them past the
    deadline make the plan that work gives, and it says so. That grace is half a second of wall time; on a loaded
    machine a run of this fleet can take longer, which would be the safety net striking rightly: the test gives
    each run a minute, so that what it checks is the status, not the machine's load."""
    quiet = _plan_file(fleet)
    monkeypatch.setattr(highs_run, "AFTER_DEADLINE_SECONDS", 60.0)
    readings = itertools.count()
    start = time.perf_counter()
    monkeypatch.setattr(time, "perf_counter", lambda: start + 3600.0 * next(readings))
    result = plan(fleet, options=PlanOptions(week=WEEK))
    assert result.solver.status != "time_limit" and plan_to_json(result, plan_file=True) == quiet


def test_the_effort_is_counted_work() -> None:
    effort = effort_module.Effort()
    assert effort.seconds_left() == float("inf") and not effort.expired()
    assert effort_module.Effort.within(float("inf")).deadline == float("inf")
    assert effort_module.Effort.within(-1.0).expired()
