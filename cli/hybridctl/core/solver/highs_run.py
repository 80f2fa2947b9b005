"""One HiGHS run over part of a model: the columns asked for are solved, every other column is held at a
given value and folded into the rows' bounds and the objective's offset. solve.py's route and direct MIP,
refine.py's later stages and the benchmarks' LP bound all run the solver through here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.solver.effort import AFTER_DEADLINE_SECONDS, Effort
from hybridctl.core.solver.milp import Col, FloatArray, Model


@dataclass(frozen=True)
class Run:
    values: FloatArray | None  # None when the solver found no solution
    objective: float
    bound: float
    status: str
    reduced_costs: FloatArray | None = None  # LP only
    basis: LpBasis | None = None  # LP only
    iterations: int = 0  # the LP's simplex iterations


class LpBasis:
    """An LP's optimal basis by the model's columns and rows (HiGHS's status codes), to start a later LP
    of the same model from: priority.py's last stage is the route's LP with a few rows more and the
    penalties off, which from the route's basis takes a third of the simplex iterations (2,951 against
    9,477 on the 10,000-workload bench fleet, 0.5 s against 1.6 s). Read from HiGHS only when a later LP
    asks for it: on that fleet reading it costs 0.2 s, and most plans (and every drill scenario) never do."""

    def __init__(self, found: object, shape: tuple[int, int], columns: npt.NDArray[np.int64],
                 rows: npt.NDArray[np.int64]) -> None:
        self._found, self._shape, self._columns, self._rows = found, shape, columns, rows
        self._statuses: tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]] | None = None

    def statuses(self) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.int8]]:
        """Per column of the model (a column held at its bound: nonbasic) and per row (a row left out: slack)."""
        if self._statuses is None:
            col_status = np.full(self._shape[0], _AT_LOWER, dtype=np.int8)
            col_status[self._columns] = [int(v) for v in self._found.col_status]  # type: ignore[attr-defined]
            row_status = np.full(self._shape[1], _BASIC, dtype=np.int8)
            row_status[self._rows] = [int(v) for v in self._found.row_status]  # type: ignore[attr-defined]
            self._statuses = (col_status, row_status)
        return self._statuses


_BASIC = 1  # HighsBasisStatus.kBasic
_AT_LOWER = 0  # HighsBasisStatus.kLower


def _basis_of(highs: object, model: Model, columns: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> LpBasis | None:
    found = highs.getBasis()  # type: ignore[attr-defined]
    return LpBasis(found, (model.columns, model.rows), columns, rows) if found.valid else None


def _warm(highs: object, basis: LpBasis, columns: npt.NDArray[np.int64], rows: npt.NDArray[np.int64]) -> None:
    """Start the LP from `basis` where it still counts one basic variable per row (rows added since are
    slack); otherwise HiGHS starts cold, as it would have anyway."""
    import highspy

    by_column, by_row = basis.statuses()
    row_status = np.full(rows.size, _BASIC, dtype=np.int8)
    known = rows < by_row.size
    row_status[known] = by_row[rows[known]]
    # columns added since (priority.py's machines priced alone) start nonbasic at their lower bound
    col_status = np.full(columns.size, _AT_LOWER, dtype=np.int8)
    known_columns = columns < by_column.size
    col_status[known_columns] = by_column[columns[known_columns]]
    if int((col_status == _BASIC).sum() + (row_status == _BASIC).sum()) != rows.size:
        return
    status = highspy.HighsBasisStatus
    codes = {int(v): v for v in (status.kLower, status.kBasic, status.kUpper, status.kZero, status.kNonbasic)}
    warm = highspy.HighsBasis()
    warm.col_status = [codes[v] for v in col_status.tolist()]
    warm.row_status = [codes[v] for v in row_status.tolist()]
    warm.valid = True
    highs.setBasis(warm)  # type: ignore[attr-defined]


def relaxed(model: Model, *, effort: Effort, basis: LpBasis | None = None) -> Run:
    """The model's LP relaxation (from `basis`, where given). A column its bounds fix (a placement on a pool
    the events emptied or pinned work fills: a fifth of a failover's) is held at its bound like any fixed
    column: HiGHS's presolve would drop it too, but the LP takes a fifth longer over it. With no reduced
    cost, it is no MIP candidate, where it could hold nothing."""
    return run(model, np.flatnonzero(model.upper > model.lower), model.lower, integer=False,
               effort=effort, gap=0.0, basis=basis)


class _CountedChecks:
    """Interrupts a MIP run at its `limit`-th check of its limits. HiGHS checks them at points its algorithm
    reaches in the same order on every run (one thread, a fixed seed), in the root's cut rounds and
    heuristics as in the tree, so the count is work, not time: what bounds the root, where mip_max_nodes
    does not reach (effort.py)."""

    def __init__(self, limit: int) -> None:
        self.limit, self.checks = limit, 0

    def __call__(self, kind: object, message: object, out: object, into: object, data: object) -> None:
        self.checks += 1
        if self.checks >= self.limit:
            into.user_interrupt = True  # type: ignore[attr-defined]


def _highs(effort: Effort, gap: float, integer: bool) -> object:
    import highspy

    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    # highspy's wrapper hands HiGHS a Python callback that takes the GIL again and again during a run even
    # with no handler subscribed: it is disabled, and a MIP gets only the one check counter, set directly
    highs.disableCallbacks()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    # work decides where a run stops (effort.py); the time limit is only the safety net
    if integer:
        highs.setOptionValue("mip_max_nodes", effort.mip_nodes)
        highs.setCallback(_CountedChecks(effort.mip_checks), None)
        highs.startCallback(highspy.cb.HighsCallbackType.kCallbackMipInterrupt)
    left = effort.seconds_left()
    if math.isfinite(left):
        highs.setOptionValue("time_limit", max(left, AFTER_DEADLINE_SECONDS))
    highs.setOptionValue("mip_rel_gap", gap)
    highs.setOptionValue("threads", 1)  # deterministic: the same inventory gives the same plan
    highs.setOptionValue("random_seed", 0)
    return highs


def _status(highs: object) -> str:
    import highspy

    status = highs.getModelStatus()  # type: ignore[attr-defined]
    known: dict[object, str] = {
        highspy.HighsModelStatus.kOptimal: "optimal",
        highspy.HighsModelStatus.kTimeLimit: "time_limit",
        highspy.HighsModelStatus.kInfeasible: "infeasible",
        # stopped on its work (mip_max_nodes, the counted checks: effort.py) before it proved its gap
        highspy.HighsModelStatus.kSolutionLimit: "gap_limit",
        highspy.HighsModelStatus.kInterrupt: "gap_limit",
    }
    name = known.get(status)
    return name if name is not None else str(highs.modelStatusToString(status)).lower().replace(" ", "_")  # type: ignore[attr-defined]


def run(model: Model, columns: npt.NDArray[np.int64], fixed_values: FloatArray, *, integer: bool,
         effort: Effort, gap: float, start: FloatArray | None = None, basis: LpBasis | None = None) -> Run:
    """Solve over `columns` only, every other column held at `fixed_values` (folded into the rows). An LP
    starts from `basis` where it fits, and hands back its own."""
    import highspy

    keep = np.zeros(model.columns, dtype=np.bool_)
    keep[columns] = True
    entry_col = np.repeat(np.arange(model.columns), np.diff(model.starts))
    fixed_entries = ~keep[entry_col]
    activity = np.bincount(model.index[fixed_entries], weights=model.value[fixed_entries] * fixed_values[
        entry_col[fixed_entries]], minlength=model.rows)
    lengths = np.diff(model.starts)[columns]
    picked = keep[entry_col]
    # rows that touch no kept column are satisfied by the fixed columns alone: drop them
    touched = np.zeros(model.rows, dtype=np.bool_)
    touched[model.index[picked]] = True
    row_map = np.cumsum(touched) - 1
    rows = np.flatnonzero(touched)

    lp = highspy.HighsLp()
    lp.num_col_ = int(columns.size)
    lp.num_row_ = int(rows.size)
    lp.col_cost_ = model.cost[columns]
    lp.col_lower_ = model.lower[columns]
    lp.col_upper_ = model.upper[columns]
    lp.row_lower_ = model.rows_lower[rows] - activity[rows]
    lp.row_upper_ = model.rows_upper[rows] - activity[rows]
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    starts = np.zeros(columns.size + 1, dtype=np.int32)
    np.cumsum(lengths, out=starts[1:])
    lp.a_matrix_.start_ = starts
    lp.a_matrix_.index_ = row_map[model.index[picked]].astype(np.int32)
    lp.a_matrix_.value_ = model.value[picked]
    # the fixed columns' cost goes in as an offset, so that the relative gap means the same as
    # on the whole model (without it, HiGHS would chase 0.01 % of a small remainder)
    fixed_cost = float(model.cost @ fixed_values - model.cost[columns] @ fixed_values[columns])
    lp.offset_ = fixed_cost + model.offset
    if integer:
        kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
        lp.integrality_ = [kinds[i] for i in model.integer[columns].tolist()]
    highs = _highs(effort, gap, integer)
    highs.passModel(lp)  # type: ignore[attr-defined]
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = start[columns].tolist()
        solution.value_valid = True
        highs.setSolution(solution)  # type: ignore[attr-defined]
    if basis is not None and not integer:
        _warm(highs, basis, columns, rows)
    highs.run()  # type: ignore[attr-defined]
    status = _status(highs)
    values = np.asarray(highs.getSolution().col_value, dtype=np.float64)  # type: ignore[attr-defined]
    info = highs.getInfo()  # type: ignore[attr-defined]
    feasible = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
    if values.size != columns.size or not feasible or (status != "optimal" and not integer):
        return Run(None, math.inf, -math.inf, status)
    full = fixed_values.copy()
    full[columns] = values
    if not integer:
        objective = float(info.objective_function_value) - model.offset
        reduced = np.full(model.columns, np.inf)
        reduced[columns] = np.asarray(highs.getSolution().col_dual, dtype=np.float64)  # type: ignore[attr-defined]
        return Run(full, objective, objective, status, reduced, _basis_of(highs, model, columns, rows),
                   int(info.simplex_iteration_count))
    # whole numbers, but a deferrable replica's hours in a segment (timed_rows.py), which are continuous
    full[columns] = np.where(model.kind[columns] == Col.HOURS, values, np.round(values))
    objective = float(model.cost @ full)
    # stopped before its first bound (the safety net before the root LP), HiGHS proves nothing: the bound is
    # unknown, never the answer's own objective (that would read as proven optimal)
    bound = float(info.mip_dual_bound) - model.offset if math.isfinite(info.mip_dual_bound) else -math.inf
    return Run(full, objective, bound, status)
