"""The timed model's fast paths (inventory revision 3) keep the plans the slow ones make.

- Segment classes (segment_classes.py): the model counts classes of alike segments; solved with one class
  per segment instead, every fleet has the same optimum, and both plans pass the checker.
- The LP-guided route on a timed model (timed_start.py): its start meets every row of the model, and its
  plan passes the checker, costs no less than the whole MIP's optimum and no more than its own bound says.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement import formulation as formulation_module
from hybridctl.core.placement import planner as planner_module
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.placement.segment_classes import SegmentClasses, segment_classes
from hybridctl.core.placement.units import Unit
from hybridctl.core.plan.model import Plan
from hybridctl.core.solver import highs_run
from hybridctl.core.solver import solve as solve_module
from hybridctl.core.week.segments import Week, build_week, parse_iso_week
from inventory_gen import generate
from support.timed import load

WEEK = parse_iso_week("2026-W48")
EXACT = PlanOptions(week=WEEK, gap=0.0)


def _fleet(seed: int, workloads: int = 50, pools: int = 12) -> Inventory:
    return Inventory.model_validate(generate(workloads, pools, seed, 0.5))


def _one_class_per_segment(units: list[Unit], week: Week) -> SegmentClasses:
    every = tuple(range(len(week.segments)))
    return SegmentClasses(np.array([s.hours for s in week.segments], dtype=np.float64),
                          tuple((s,) for s in every),
                          tuple(u.timing.segments if u.timing is not None else every for u in units))


def test_alike_segments_make_one_class() -> None:
    # HAND's week: five day segments (the service may run) and six off-hours ones (only the batch)
    inventory = load(100)
    week = build_week(inventory, WEEK)
    units = planner_module.build_units(planner_module.demands(inventory),
                                       planner_module.EligibilityIndex(inventory, planner_module.pool_infos(inventory)),
                                       {}, week=week)
    classes = segment_classes(units, week)
    assert classes.segments == ((0, 2, 4, 6, 8, 10), (1, 3, 5, 7, 9))
    assert classes.lengths.tolist() == [108.0, 60.0]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_segment_classes_keep_the_optimum(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = _fleet(seed)
    classed = plan(inventory, options=EXACT)
    monkeypatch.setattr(formulation_module, "segment_classes", _one_class_per_segment)
    monkeypatch.setattr(planner_module, "segment_classes", _one_class_per_segment)
    by_segment = plan(inventory, options=EXACT)
    assert len(classed.segments) > 5 and classed.solver.variables < by_segment.solver.variables
    assert (classed.solver.status, by_segment.solver.status) == ("optimal", "optimal")
    assert classed.solver.objective == pytest.approx(by_segment.solver.objective, rel=1e-6, abs=0.01)
    assert check_plan(inventory, classed) == [] and check_plan(inventory, by_segment) == []


def _rows_met(model: Any, values: Any) -> bool:
    entry_col = np.repeat(np.arange(model.columns), np.diff(model.starts))
    activity = np.bincount(model.index, weights=model.value * values[entry_col], minlength=model.rows)
    slack = 1e-6 * np.maximum(1.0, np.abs(np.where(np.isfinite(model.rows_upper), model.rows_upper, 0.0)))
    return bool(np.all(activity <= model.rows_upper + slack) and np.all(activity >= model.rows_lower - slack)
                and np.all(values >= model.lower - 1e-9) and np.all(values <= model.upper + 1e-9))


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_lp_guided_route_on_a_timed_model(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = _fleet(seed, 100, 20)  # large enough for an LP with fractional units
    whole: Plan = plan(inventory, options=EXACT)
    starts: list[bool] = []
    repair = solve_module.feasible_timed_start

    def watched(model: Any, start: Any, free: Any) -> Any:
        out = repair(model, start, free)
        if out is not None:
            starts.append(_rows_met(model, out[0]))
        return out

    monkeypatch.setattr(solve_module, "feasible_timed_start", watched)
    monkeypatch.setattr(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0)
    monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    monkeypatch.setattr(solve_module, "TIMED_DIRECT_MIP_MAX_COLUMNS", 0)
    routed = plan(inventory, options=PlanOptions(week=WEEK))
    assert starts and all(starts)
    assert check_plan(inventory, routed) == []
    assert routed.solver.objective >= whole.solver.objective - 0.01
    assert routed.solver.bound <= whole.solver.objective + 0.01


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_timed_model_is_proven_whole_from_the_routes_answer(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # between TIMED_ROUTE_MIN_COLUMNS and TIMED_DIRECT_MIP_MAX_COLUMNS the route's answer, not the greedy
    # start, seeds the whole MIP (which then mostly proves the bound); the plan is the whole MIP's optimum
    inventory = _fleet(seed, 100, 20)
    whole: Plan = plan(inventory, options=EXACT)
    seeds: list[tuple[str, float]] = []
    routed_values: list[Any] = []
    run, route = highs_run.run, solve_module._lp_guided

    def watched_route(*args: Any, **kwargs: Any) -> Any:
        out = route(*args, **kwargs)
        routed_values.append(out)
        return out

    def watched_run(model: Any, columns: Any, fixed: Any, **kwargs: Any) -> Any:
        start = kwargs.get("start")
        if kwargs.get("integer") and columns.size == model.columns and start is not None:
            seeds.append(("route" if any(isinstance(r, solve_module.Solution) and np.array_equal(r.values, start)
                                         for r in routed_values) else "other", float(model.cost @ start)))
        return run(model, columns, fixed, **kwargs)

    monkeypatch.setattr(solve_module, "_lp_guided", watched_route)
    monkeypatch.setattr(highs_run, "run", watched_run)
    monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    routed = plan(inventory, options=EXACT)
    assert routed_values, "the route was not taken"
    proven_by_route = all(isinstance(r, solve_module.Solution) and r.status == "optimal" for r in routed_values)
    assert proven_by_route or (seeds and seeds[0][0] == "route"), seeds
    assert check_plan(inventory, routed) == []
    assert routed.solver.objective == pytest.approx(whole.solver.objective, rel=1e-9, abs=0.01)
