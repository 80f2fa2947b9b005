"""Solving one component's MILP with HiGHS.

Small models go to the MIP solver directly. Large ones are solved by LP-guided fixing:
the LP relaxation gives a proven lower bound and, for a transportation-like model such as
this, an almost integral solution; its integral columns are fixed and the MIP solves only
what is left. The gap reported is against the LP bound, so it is honest.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.plan.formulation import Model

DIRECT_MIP_MAX_COLUMNS = 2_000
_INTEGRAL_TOL = 1e-6


@dataclass(frozen=True)
class Solution:
    values: npt.NDArray[np.float64]
    objective: float
    bound: float
    status: str
    method: str
    seconds: float


def _highs(time_limit_s: float, gap: float) -> object:
    import highspy

    highs = highspy.Highs()
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("time_limit", max(time_limit_s, 0.01))
    highs.setOptionValue("mip_rel_gap", gap)
    highs.setOptionValue("threads", 1)  # deterministic: the same inventory gives the same plan
    highs.setOptionValue("random_seed", 0)
    return highs


def _pass(highs: object, model: Model, integer: bool, lower: npt.NDArray[np.float64] | None = None,
          upper: npt.NDArray[np.float64] | None = None) -> None:
    import highspy

    lp = highspy.HighsLp()
    lp.num_col_ = len(model.cost)
    lp.num_row_ = len(model.rows_lower)
    lp.col_cost_ = np.asarray(model.cost, dtype=np.float64)
    lp.col_lower_ = lower if lower is not None else np.asarray(model.lower, dtype=np.float64)
    lp.col_upper_ = upper if upper is not None else np.asarray(model.upper, dtype=np.float64)
    lp.row_lower_ = np.asarray(model.rows_lower, dtype=np.float64)
    lp.row_upper_ = np.asarray(model.rows_upper, dtype=np.float64)
    starts, rows, values = model.csc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = rows
    lp.a_matrix_.value_ = values
    if integer:
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous
                           for i in model.integer]
    highs.passModel(lp)  # type: ignore[attr-defined]


def _status(highs: object) -> str:
    import highspy

    status = highs.getModelStatus()  # type: ignore[attr-defined]
    return {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kTimeLimit: "time_limit",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
        highspy.HighsModelStatus.kSolutionLimit: "solution_limit",
        highspy.HighsModelStatus.kInterrupt: "interrupted",
    }.get(status, highs.modelStatusToString(status).lower().replace(" ", "_"))  # type: ignore[attr-defined]


def _solve_mip(model: Model, time_limit_s: float, gap: float, lower: npt.NDArray[np.float64] | None = None,
               upper: npt.NDArray[np.float64] | None = None) -> tuple[npt.NDArray[np.float64], float, float, str]:
    highs = _highs(time_limit_s, gap)
    _pass(highs, model, True, lower, upper)
    highs.run()  # type: ignore[attr-defined]
    status = _status(highs)
    info = highs.getInfo()  # type: ignore[attr-defined]
    values = np.asarray(highs.getSolution().col_value, dtype=np.float64)  # type: ignore[attr-defined]
    if values.size != len(model.cost):
        raise RuntimeError(f"the solver returned no solution (status {status})")
    objective = float(info.objective_function_value)
    bound = float(info.mip_dual_bound) if math.isfinite(info.mip_dual_bound) else objective
    return values, objective, bound, status


def solve(model: Model, *, time_limit_s: float, gap: float) -> Solution:
    started = time.perf_counter()
    if len(model.cost) <= DIRECT_MIP_MAX_COLUMNS:
        values, objective, bound, status = _solve_mip(model, time_limit_s, gap)
        return Solution(np.round(values), objective, min(bound, objective), status, "mip",
                        time.perf_counter() - started)
    highs = _highs(time_limit_s, gap)
    _pass(highs, model, False)
    highs.run()  # type: ignore[attr-defined]
    lp_values = np.asarray(highs.getSolution().col_value, dtype=np.float64)  # type: ignore[attr-defined]
    lp_bound = float(highs.getInfo().objective_function_value)  # type: ignore[attr-defined]
    integer = np.asarray(model.integer, dtype=bool)
    rounded = np.round(lp_values)
    fractional = integer & (np.abs(lp_values - rounded) > _INTEGRAL_TOL)
    # a unit with any fractional column stays wholly free (its unplaced column too), which keeps
    # the restricted MIP feasible; every other unit keeps the LP's integral answer
    owners = np.fromiter((o[0] for o in model.owner), dtype=np.int64, count=len(model.owner))
    free_units = np.unique(owners[fractional])
    fixed = integer & ~np.isin(owners, free_units)
    lower = np.asarray(model.lower, dtype=np.float64).copy()
    upper = np.asarray(model.upper, dtype=np.float64).copy()
    lower[fixed] = rounded[fixed]
    upper[fixed] = rounded[fixed]
    remaining = time_limit_s - (time.perf_counter() - started)
    values, objective, _, status = _solve_mip(model, remaining, gap, lower, upper)
    rel_gap = (objective - lp_bound) / max(abs(objective), 1e-9)
    final_status = "optimal" if status == "optimal" and rel_gap <= gap else ("gap_limit" if status == "optimal"
                                                                             else status)
    return Solution(np.round(values), objective, min(lp_bound, objective), final_status,
                    f"lp-fix-mip ({int((~fixed & integer).sum())} free integer columns)",
                    time.perf_counter() - started)
