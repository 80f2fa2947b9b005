"""A budget the planner keeps (spec, "Budget", `policies.budget_action: shed`): the month's total under the
cost model is a row of the model, `spend · x <= budget - committed constant`, and so a constraint of every
tier's stage (priority.py derives each stage from the model it is handed, rows and all).

The stages start from the penalised answer of the budgeted model (as priority.py's start from the first
solve's), found from the fixed tier alone at its least cost: the model with every lower tier's placements
closed, solved as any model is (solve(), and the stages where it leaves fixed work short). That answer keeps
every row of the budgeted model when its spend fits the budget; where it does not, the fixed tier alone is
over the budget, which no shedding mends (fixed work is never shed: the planner then keeps the plan without
the budget, over it). From it the budgeted model's penalised answer is improved as the first answer of any
model is (its whole MIP, or refine.py's means for a larger one: the start stays where nothing better is
found), so that the lower tiers get a placement by their penalties' order to start the stages from. The
fixed stage then has nothing left to place, burst's places as many of its GPU-hours as fit what the fixed
tier leaves of the budget, opportunistic's likewise, and the last stage minimizes cost under those rows.
Starting the stages from the plan that places nothing keeps the row too, but on a large model each tier
stage's neighbourhood then places its tier wherever it first fits, whatever that costs, and the stages below,
which hold it there, find the budget spent: on the 10,000-workload bench fleet at 90 % of its cash, 96 % of the
opportunistic GPU-hours went unplaced with a tenth of the budget unspent.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from hybridctl.core.placement.tiers import TIER_ORDER
from hybridctl.core.placement.units import Unit
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Col, FloatArray, Model, with_row
from hybridctl.core.solver.priority import _rank, by_priority, needs_stages
from hybridctl.core.solver.refine import improve, improve_over, refine
from hybridctl.core.solver.solve import Solution, solve, solved_whole, units_of

_TOL = 1e-6


def within_budget(units: list[Unit], model: Model, room: float, *, effort: Effort, gap: float) -> Solution | None:
    """The model's plan by tier priority with its spend (model.spend, the committed constant aside) at most
    `room`; None where the fixed tier alone, at its least cost, spends more."""
    if model.spend is None:
        raise ValueError("the model carries no spend to bound")  # formulation.py always gives it
    fixed = _fixed_alone(units, model, effort=effort, gap=gap)
    if float(model.spend @ fixed.values) > room + _TOL * max(1.0, abs(room)):
        return None
    cols = np.flatnonzero(model.spend != 0.0)
    capped = with_row(model, cols, model.spend[cols], -np.inf, room)
    first = improve(capped, fixed.values, effort=effort, gap=gap) if solved_whole(capped) \
        else refine(capped, fixed.values, effort=effort, gap=gap, basis=fixed.basis)
    staged = by_priority(units, capped, replace(first, basis=first.basis or fixed.basis), effort=effort, gap=gap)
    values = _given_way(units, capped, staged.values, effort=effort)
    objective = float(capped.cost @ values)
    return replace(staged, values=values, objective=objective, bound=min(staged.bound, objective))


def _given_way(units: list[Unit], model: Model, values: FloatArray, *, effort: Effort) -> FloatArray:
    """`values` where no lower-tier replica holds a pool that a short replica of a higher tier may use, and
    could take within the budget. On a large model a tier's stage frees every short unit of the tier at once
    (priority._local_stage), which under a budget is most of the tier's work: its MIP is cut short by its
    work (on the 10,000-workload bench fleet at 90 % of its cash the checker found burst replicas shed while
    opportunistic ones held owned GPUs they fit in). Here the stages are solved again over the short units
    of a tier that may use a pool a lower tier holds, with those holders: a neighbourhood small enough to
    end, exact within it. The tier's GPU-hours first, then each lower tier's, then the cost, each held by a
    row for the next, as priority.py's stages."""
    gpu_hours, rank, unplaced = _rank(units, model)
    place = model.kind == Col.PLACE
    follow = np.isin(model.kind, (int(Col.MACHINES), int(Col.GANG)))
    for r in range(len(TIER_ORDER) - 1):  # the lowest tier holds nothing a tier below it needs
        cols = np.flatnonzero(unplaced & (rank == r))
        short = cols[values[cols] > model.lower[cols] + 0.5]
        theirs = place & np.isin(model.unit, model.unit[short])
        holding = place & (values > 0.5) & (rank > r) & np.isin(model.ref, model.ref[theirs])
        if not holding.any():
            continue
        free = units_of(model, (theirs & np.isin(model.ref, model.ref[holding])) | holding) | follow
        held = model
        for tier in range(r, len(TIER_ORDER)):
            tier_cols = np.flatnonzero(unplaced & (rank == tier))
            tier_cost = np.zeros(model.columns)
            tier_cost[tier_cols] = gpu_hours[tier_cols]
            values = improve_over(replace(held, cost=tier_cost, offset=0.0), values, free, effort=effort,
                                  gap=0.0).values
            kept = float(gpu_hours[tier_cols] @ values[tier_cols])
            held = with_row(held, tier_cols, gpu_hours[tier_cols], -np.inf, kept + _TOL * max(1.0, kept))
        cost = model.cost.copy()
        cost[unplaced] = 0.0  # the penalties must not choose among equal GPU-hours (priority.py's last stage)
        values = improve_over(replace(held, cost=cost), values, free, effort=effort, gap=0.0).values
    return values


def _fixed_alone(units: list[Unit], model: Model, *, effort: Effort, gap: float) -> Solution:
    """The fixed tier placed as the model would place it with nothing else to place, at least cost."""
    fixed_tier = np.array([u.tier == TIER_ORDER[0] for u in units] + [True], dtype=np.bool_)
    owner = np.minimum(model.unit, len(units))  # machine and gang columns belong to no unit: never closed
    upper = model.upper.copy()
    upper[(model.kind == Col.PLACE) & ~fixed_tier[owner]] = 0.0
    alone = replace(model, upper=upper)
    solution = solve(alone, effort=effort, gap=gap)
    if needs_stages(units, alone, solution.values):
        solution = by_priority(units, alone, solution, effort=effort, gap=gap)
    return solution
