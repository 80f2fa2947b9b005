"""A budget the planner keeps (spec, "Budget", `policies.budget_action: shed`): the month's total under the
cost model is a row of the model, `spend · x <= budget - committed constant`, and so a constraint of every
tier's stage (priority.py derives each stage from the model it is handed, rows and all).

The stages start from the plan that places nothing, which keeps the row whenever the committed pools alone
fit the budget (every other price is what placing something adds): the penalised first solve would have
to be kept within the budget as well, and a start is all the stages need. The fixed tier's stage then places
as many of its GPU-hours as fit the budget, burst's as many as fit what is left, opportunistic's likewise,
and the last stage minimizes cost under those rows. Whether the fixed tier kept all it places without the
budget is the planner's question (it never sheds fixed work: planner.py).
"""

from __future__ import annotations

import numpy as np

from hybridctl.core.placement.units import Unit
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Model, with_row
from hybridctl.core.solver.priority import by_priority
from hybridctl.core.solver.solve import Solution
from hybridctl.core.solver.timed_start import nothing_placed


def within_budget(units: list[Unit], model: Model, room: float, *, effort: Effort, gap: float) -> Solution:
    """The model's plan by tier priority with its spend (model.spend, the committed constant aside) at most
    `room`, which is at least 0 (the committed pools alone fit the budget: the planner's to check)."""
    if model.spend is None:
        raise ValueError("the model carries no spend to bound")  # formulation.py always gives it
    cols = np.flatnonzero(model.spend != 0.0)
    capped = with_row(model, cols, model.spend[cols], -np.inf, room)
    start = nothing_placed(capped, capped.lower, np.ones(capped.columns, dtype=np.bool_))
    first = Solution(start, float(capped.cost @ start), 0.0, "gap_limit", "budget")
    return by_priority(units, capped, first, effort=effort, gap=gap)
