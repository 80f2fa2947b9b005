"""Improving a feasible answer of a model (priority.py's stages): the start is kept whenever the solver
finds nothing better within its work (effort.py), so every answer here is feasible.

A stage is solved the way solve() solved the model's first answer (solve.solved_whole): a smaller model
by its whole MIP (improve), a larger one as the LP-guided route does (refine). On the 10,000-workload bench
fleet without a schedule (seed 1), the last stage's whole MIP took 13.8 CPU-s where the first answer, from
the route, took 0.65 s: the stage demanded a proof the plan never had without the stages.
"""

from __future__ import annotations

import math

import numpy as np

from hybridctl.core.solver import highs_run
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.highs_run import LpBasis
from hybridctl.core.solver.milp import Col, FloatArray, Model
from hybridctl.core.solver.solve import (
    CANDIDATES_PER_UNIT,
    NEIGHBOURHOOD_MAX_COLUMNS,
    STAGE_GAP,
    BoolArray,
    Solution,
    candidates_of,
    neighbourhood_of,
    units_of,
    unsettled_of,
)


def lp_bound(model: Model, *, effort: Effort, basis: LpBasis | None = None) -> float:
    """The model's LP bound, -inf where the safety net struck in the LP."""
    relaxed = highs_run.relaxed(model, effort=effort, basis=basis)
    return relaxed.bound if relaxed.values is not None else -math.inf


def _within(cost: float, bound: float, gap: float, model: Model) -> bool:
    return cost - bound <= gap * abs(cost + model.offset)


def _better_or_start(model: Model, run: highs_run.Run, start: FloatArray, bound: float, method: str,
                     status: str | None = None) -> Solution:
    """The run's answer where it beats the start, else the start (`method` + "-start"), the bound capped by
    the answer kept."""
    start_cost = float(model.cost @ start)
    if run.values is None or run.objective >= start_cost - 1e-9 * max(1.0, abs(start_cost)):
        return Solution(start, start_cost, min(bound, start_cost), status or run.status, method + "-start")
    return Solution(run.values, run.objective, min(bound, run.objective), status or run.status, method)


def improve(model: Model, start: FloatArray, *, effort: Effort, gap: float, bound_first: bool = False,
            basis: LpBasis | None = None) -> Solution:
    """The whole MIP from a feasible start. With `bound_first`, the LP relaxation (from `basis`, where
    given) is solved first, and a start within `gap` of its bound is the answer: the MIP would spend its
    cuts and heuristics proving what the LP already proves (on the 10,000-workload bench fleet at --gap
    0.005, 2 s for the LP against 4.5 s for the MIP); when the LP does not prove it, its work is lost,
    so callers ask for it only where the start is likely that good."""
    start_cost = float(model.cost @ start)
    if bound_first:
        relaxed = highs_run.relaxed(model, effort=effort, basis=basis)
        if relaxed.values is not None and _within(start_cost, relaxed.bound, gap, model):
            return Solution(start, start_cost, min(relaxed.bound, start_cost), "optimal", "lp-bound")
    run = highs_run.run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=True,
                        effort=effort, gap=gap, start=start)
    return _better_or_start(model, run, start, run.bound, "mip")


def improve_over(model: Model, start: FloatArray, free: BoolArray, *, effort: Effort, gap: float) -> Solution:
    """The MIP over the `free` columns only, every other held at `start` (feasible, so the restricted MIP
    is too): priority.py's tier stage where the whole one was cut short. Its bound is of the restricted
    model only, so none is given (-inf)."""
    run = highs_run.run(model, np.flatnonzero(free), start, integer=True, effort=effort, gap=gap, start=start)
    return _better_or_start(model, run, start, -math.inf, "mip-local")


def refine(model: Model, start: FloatArray, *, effort: Effort, gap: float,
           basis: LpBasis | None = None) -> Solution:
    """A larger model's stage, as solve()'s route: the LP (from `basis`, where given) bounds it, and a
    start within `gap` of that bound is the answer. Otherwise a MIP improves the start over the units the
    LP would place otherwise (a fractional column, or a whole one the start lacks), with the pool's machines
    and gang switches, each such unit among its placements of least reduced cost and those the LP or the
    start use; every other column stays where the start has it. As the route's, its answer is within the
    gap of the LP bound (optimal) or is not proven (gap_limit)."""
    start_cost = float(model.cost @ start)
    relaxed = highs_run.relaxed(model, effort=effort, basis=basis)
    if relaxed.values is None or relaxed.reduced_costs is None:  # the safety net struck: the start, no bound
        return Solution(start, start_cost, -math.inf, relaxed.status, "lp-refine-start")
    bound, lp = relaxed.bound, relaxed.values
    if _within(start_cost, bound, gap, model):
        return Solution(start, start_cost, min(bound, start_cost), "optimal", "lp-bound")
    place = model.kind == Col.PLACE
    unsettled = unsettled_of(model, lp, start)
    follow = model.unit >= model.demand_rows  # machines and gang switches belong to no unit
    reach = candidates_of(model, lp, relaxed.reduced_costs, CANDIDATES_PER_UNIT) | (place & (start > 0.5))
    free = (units_of(model, unsettled) | follow) & reach
    kept = _restricted(model, start, free, bound, effort, gap)
    # as the route's second stage: the units with replicas in the pools where the LP split a replica or the
    # first MIP moved one, which can make room where rounding lost it
    wider = (neighbourhood_of(model, free & ~follow, lp, kept.values) | follow) & reach
    if kept.status == "gap_limit" and int((wider & model.integer).sum()) <= NEIGHBOURHOOD_MAX_COLUMNS \
            and wider.sum() > free.sum():
        kept = _restricted(model, kept.values, wider, bound, effort, gap)
    return kept


def _restricted(model: Model, start: FloatArray, free: BoolArray, bound: float, effort: Effort,
                gap: float) -> Solution:
    run = highs_run.run(model, np.flatnonzero(free), start, integer=True, effort=effort, gap=max(gap, STAGE_GAP),
                        start=start)
    kept = _better_or_start(model, run, start, bound, "lp-refine")
    status = ("optimal" if _within(kept.objective, bound, gap, model) else "gap_limit") \
        if run.status == "optimal" else run.status
    return Solution(kept.values, kept.objective, kept.bound, status, kept.method)
