"""Solving one component's MILP with HiGHS.

Small models (up to DIRECT_MIP_MAX_COLUMNS) go to the MIP solver directly, which proves its
own bound. Large ones are solved by LP-guided fixing:
1. the LP relaxation gives a proven lower bound and, for a transportation-like model such
   as this, an almost integral solution; its reduced costs say which other pools each unit
   could use at little cost (the candidates);
2. units whose LP columns are all integral keep them; a MIP over the few fractional units and
   their candidate pools (the fixed columns folded into the row bounds and the objective
   offset) finds a plan;
3. unless that plan is already within the gap, the units with replicas in the pools where the
   LP split a replica are freed too, and a second MIP improves the plan from there: those are
   the units that can make room where rounding lost it.
The gap reported is against the LP bound, so it is honest.

Every stage stops on a gap, not a clock, so the same model gives the same plan; the time
limit only guards against a pathological model (and its status says when it struck). When it
strikes before the solver has a solution (the LP of a huge model on a loaded machine), the
plan is the greedy start (start.py), feasible by construction, improved by the MIP if time is
left, with status time_limit: never an empty plan.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.plan.milp import Col, Model
from hybridctl.core.plan.start import greedy_start
from hybridctl.core.plan.timed_start import feasible_timed_start
from hybridctl.core.plan.timed_start import nothing_placed as _nothing_placed

DIRECT_MIP_MAX_COLUMNS = 2_000
# A timed model's LP bound is weaker (whole machines and gang switches beside continuous hours: 0.4 % below
# the optimum on the bench's 1,000-workload fleet, where the MIP's cuts close it in seconds): up to this
# size the MIP takes it whole and proves its optimum, from the LP-guided route's answer (see solve());
# larger ones take the route alone.
TIMED_DIRECT_MIP_MAX_COLUMNS = 10_000
# Below this a timed model goes to the MIP from the greedy start: the route's LP and restricted MIPs cost
# more than they save (bench seed 6, 1,323 columns: 0.35 s direct, 0.6 s routed; seed 2, 1,860: 2.3 s, 0.5 s)
TIMED_ROUTE_MIN_COLUMNS = 1_500
NEIGHBOURHOOD_MAX_COLUMNS = 15_000  # above this, freeing the neighbourhood costs more time than it saves
CANDIDATES_PER_UNIT = 2  # placements of least reduced cost a freed unit may move to (see _candidates)
# A timed model's route only seeds the whole MIP, which must then find nothing better: a wider choice
# makes its answer the optimum more often (on the bench's 1,000-workload fleets, 2 left seed 1 at
# 0.015 % over it, and the whole MIP then took longer than from the greedy start)
TIMED_CANDIDATES_PER_UNIT = 8
# The restricted MIPs stop within this of their own bound at the least: their bound is not the
# model's, so closing the last hundredths of a percent there buys little and costs seconds.
STAGE_GAP = 2e-4
_INTEGRAL_TOL = 1e-6
MIN_MIP_SECONDS = 1.0  # after an LP timeout, less than this left: the greedy start is the plan

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Solution:
    values: FloatArray
    objective: float
    bound: float
    status: str
    method: str
    seconds: float


@dataclass(frozen=True)
class _Run:
    values: FloatArray | None  # None when the solver found no solution
    objective: float
    bound: float
    status: str
    reduced_costs: FloatArray | None = None  # LP only


def _highs(time_limit_s: float, gap: float) -> object:
    import highspy

    highs = highspy.Highs()  # type: ignore[no-untyped-call]
    # highspy hands HiGHS a Python callback, which takes the GIL again and again during a run even with no
    # handler subscribed; hybridctl subscribes none
    highs.disableCallbacks()  # type: ignore[no-untyped-call]
    highs.setOptionValue("output_flag", False)
    highs.setOptionValue("time_limit", max(time_limit_s, 0.01))
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
        highspy.HighsModelStatus.kSolutionLimit: "solution_limit",
        highspy.HighsModelStatus.kInterrupt: "interrupted",
    }
    name = known.get(status)
    return name if name is not None else str(highs.modelStatusToString(status)).lower().replace(" ", "_")  # type: ignore[attr-defined]


def _run(model: Model, columns: npt.NDArray[np.int64], fixed_values: FloatArray, *, integer: bool,
         time_limit_s: float, gap: float, start: FloatArray | None = None) -> _Run:
    """Solve over `columns` only, every other column held at `fixed_values` (folded into the rows)."""
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
    highs = _highs(time_limit_s, gap)
    highs.passModel(lp)  # type: ignore[attr-defined]
    if start is not None:
        solution = highspy.HighsSolution()
        solution.col_value = start[columns].tolist()
        solution.value_valid = True
        highs.setSolution(solution)  # type: ignore[attr-defined]
    highs.run()  # type: ignore[attr-defined]
    status = _status(highs)
    values = np.asarray(highs.getSolution().col_value, dtype=np.float64)  # type: ignore[attr-defined]
    info = highs.getInfo()  # type: ignore[attr-defined]
    feasible = int(info.primal_solution_status) == 2  # kSolutionStatusFeasible
    if values.size != columns.size or not feasible or (status != "optimal" and not integer):
        return _Run(None, math.inf, -math.inf, status)
    full = fixed_values.copy()
    full[columns] = values
    if not integer:
        objective = float(info.objective_function_value) - model.offset
        reduced = np.full(model.columns, np.inf)
        reduced[columns] = np.asarray(highs.getSolution().col_dual, dtype=np.float64)  # type: ignore[attr-defined]
        return _Run(full, objective, objective, status, reduced)
    # whole numbers, but a deferrable replica's hours in a segment (timed.py), which are continuous
    full[columns] = np.where(model.kind[columns] == Col.HOURS, values, np.round(values))
    objective = float(model.cost @ full)
    # stopped before its first bound (a time limit before the root LP), HiGHS proves nothing: the bound is
    # unknown, never the answer's own objective (that would read as proven optimal)
    bound = float(info.mip_dual_bound) - model.offset if math.isfinite(info.mip_dual_bound) else -math.inf
    return _Run(full, objective, bound, status)


def units_of(model: Model, mask: BoolArray) -> BoolArray:
    """Columns of every unit that owns at least one column in the mask."""
    chosen = np.zeros(int(model.unit.max(initial=-1)) + 1, dtype=np.bool_)
    chosen[model.unit[mask]] = True
    free: BoolArray = chosen[model.unit]
    return free


def _cheapest(model: Model, score: FloatArray, count: int) -> BoolArray:
    """Each unit's `count` placement columns of least score (ties by column)."""
    place = model.kind == Col.PLACE
    columns = np.flatnonzero(place)
    order = columns[np.lexsort((columns, score[columns], model.unit[columns]))]
    owners = model.unit[order]
    first = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    chosen = np.zeros(model.columns, dtype=np.bool_)
    chosen[order[rank < count]] = True
    return chosen


def _kept(model: Model) -> BoolArray:
    """Placement columns where the previous plan had replicas (each has a moved column)."""
    place = model.kind == Col.PLACE
    moved = model.kind == Col.MOVED
    if not moved.any():
        return np.zeros(model.columns, dtype=np.bool_)
    key = model.unit * (int(model.ref.max()) + 1) + model.ref
    kept: BoolArray = place & np.isin(key, key[moved])
    return kept


def _candidates(model: Model, lp_values: FloatArray, reduced_costs: FloatArray, per_unit: int) -> BoolArray:
    """The columns the restricted MIPs may use: every column but placements, placements the LP
    uses or the previous plan had, and each unit's few placements of least reduced cost. The
    reduced costs say which pools are worth a look; dropping the rest makes the MIPs fifty times
    faster and, measured on the benchmark inventories, costs less than the time saved buys."""
    keep: BoolArray = ~(model.kind == Col.PLACE) | _cheapest(model, reduced_costs, per_unit) \
        | (lp_values > _INTEGRAL_TOL) | _kept(model)
    return keep


def _neighbourhood(model: Model, free: BoolArray, lp_values: FloatArray, values: FloatArray) -> BoolArray:
    """The free units plus every unit with replicas in a pool where the LP split a replica or the
    restricted MIP moved one: the units that can make room where rounding lost it."""
    place = model.kind == Col.PLACE
    unsettled = place & ((np.abs(lp_values - np.round(lp_values)) > _INTEGRAL_TOL)
                         | (np.abs(values - np.round(lp_values)) > 0.5))
    pools = np.zeros(int(model.ref.max(initial=-1)) + 1, dtype=np.bool_)
    pools[model.ref[unsettled]] = True
    sharing = place & ((lp_values > _INTEGRAL_TOL) | (values > 0.5)) & pools[np.where(place, model.ref, 0)]
    return units_of(model, sharing | free)


def solve(model: Model, *, time_limit_s: float, gap: float) -> Solution:
    started = time.perf_counter()

    def left() -> float:
        return time_limit_s - (time.perf_counter() - started)

    def direct(method: str, status: str | None = None, start: FloatArray | None = None) -> Solution:
        # the greedy start is feasible by construction: the MIP improves it, and it is the plan
        # when the solver keeps nothing in the time it has (the status then says time_limit)
        if start is None:
            start = greedy_start(model, _nothing_placed(model, model.lower, np.ones(model.columns, dtype=np.bool_)))
        if left() <= MIN_MIP_SECONDS and status is not None:
            return Solution(start, float(model.cost @ start), 0.0, status, method + "-greedy",
                            time.perf_counter() - started)
        run = _run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=True, time_limit_s=left(),
                   gap=gap, start=start)
        if run.values is None:  # out of time before the solver kept even the start
            return Solution(start, float(model.cost @ start), 0.0, status or run.status, method + "-greedy",
                            time.perf_counter() - started)  # costs are never negative: 0 bounds them
        # costs are never negative: 0 bounds them where the solver proved nothing
        return Solution(run.values, run.objective, max(min(run.bound, run.objective), 0.0), status or run.status,
                        method, time.perf_counter() - started)

    # A timed model's hours (continuous, tied to their placement) and gang switches (tied to several units'
    # placements) break the fixing's premise that leaving the free units unplaced keeps every row: its start
    # is repaired (timed_start.py), and the MIP takes it whole where that fails.
    timed = bool(np.isin(model.kind, (int(Col.HOURS), int(Col.GANG))).any())
    if model.columns <= (TIMED_ROUTE_MIN_COLUMNS if timed else DIRECT_MIP_MAX_COLUMNS):
        return direct("mip")
    if timed and model.columns <= TIMED_DIRECT_MIP_MAX_COLUMNS:
        # The whole MIP proves the optimum, but from the greedy start its heuristics spend most of
        # their time finding a good plan: the route's answer, within hundredths of a percent of it,
        # leaves HiGHS mostly the bound to prove (bench/plan_bench.py --scheduled 0.3, docs/performance.md).
        routed = _lp_guided(model, timed, left, gap, TIMED_CANDIDATES_PER_UNIT)
        if isinstance(routed, Solution) and routed.status == "optimal":
            return routed
        return direct("mip-timed", start=routed.values if isinstance(routed, Solution) else None)
    routed = _lp_guided(model, timed, left, gap, CANDIDATES_PER_UNIT)
    if routed == _LP_TIMEOUT:  # the LP alone outran the time limit: the greedy start, improved if time is left
        return direct("mip-after-lp-timeout", "time_limit")
    return routed if isinstance(routed, Solution) else direct("mip-timed")


_LP_TIMEOUT = "lp-timeout"
_UNREPAIRED = "unrepaired"


def _lp_guided(model: Model, timed: bool, left: Callable[[], float], gap: float,
               candidates_per_unit: int) -> Solution | str:
    """The LP-guided route (the module's note), or why it gave no plan: the LP outran the time limit
    (_LP_TIMEOUT), or a timed start could not be repaired (_UNREPAIRED: the MIP is solved whole)."""
    started = time.perf_counter()
    # A column its bounds fix (a placement on a pool the events emptied or pinned work fills: a fifth of a
    # failover's) is held at its bound like any fixed column: HiGHS's presolve would drop it too, but the LP
    # takes a fifth longer over it. With no reduced cost, it is no MIP candidate, where it could hold nothing.
    relaxed = _run(model, np.flatnonzero(model.upper > model.lower), model.lower, integer=False,
                   time_limit_s=left(), gap=0.0)
    if relaxed.values is None:
        return _LP_TIMEOUT
    lp_bound, lp_values = relaxed.bound, relaxed.values
    candidates = _candidates(model, lp_values, relaxed.reduced_costs if relaxed.reduced_costs is not None
                             else np.zeros(model.columns), candidates_per_unit)
    rounded = np.round(lp_values)
    fractional = model.integer & (np.abs(lp_values - rounded) > _INTEGRAL_TOL)
    if not fractional.any():
        rounded[~model.integer] = lp_values[~model.integer]
        proven = relaxed.objective - lp_bound <= gap * abs(relaxed.objective + model.offset)
        return Solution(rounded, relaxed.objective, lp_bound, "optimal" if proven else "gap_limit", "lp",
                        time.perf_counter() - started)
    # a unit with any fractional column stays wholly free (its unplaced column too), which keeps
    # the restricted MIP feasible: leaving its replicas unplaced always fits. Continuous columns
    # (moves) and the few machine columns always follow the units.
    machines = model.kind == Col.MACHINES
    if timed:  # gang switches, like machines, follow the units
        machines = machines | (model.kind == Col.GANG)
    units_free = units_of(model, fractional & ~machines)
    free = units_free | ~model.integer | machines
    # a timed model's kept units keep their LP hours (continuous) and moves: they meet the hours rows
    base = np.where(model.integer, rounded, lp_values if timed else model.lower)
    # the LP's machines, rounded up, still hold the kept units' always-on GPUs and fit the quota
    # (its right-hand side is whole), so the start stays feasible
    base[machines] = np.ceil(lp_values[machines] - _INTEGRAL_TOL)
    stage_gap = max(gap, STAGE_GAP)
    if timed:
        repaired = feasible_timed_start(model, _nothing_placed(model, base, units_free), units_free)
        if repaired is None:
            return _UNREPAIRED
        # the kept units' hours stay as the LP has them: freeing every hours column (a timed model's most)
        # makes the restricted MIP as large as the whole one
        start, units_free = repaired
        free = units_free | machines
    else:
        start = _nothing_placed(model, base, free)
    best = _run(model, np.flatnonzero(free & candidates), base, integer=True, time_limit_s=left(), gap=stage_gap,
                start=start)
    if best.values is None:  # out of time: the fractional units stay unplaced
        best = _Run(start, float(model.cost @ start), lp_bound, best.status)
    values = best.values if best.values is not None else start
    status, stages = best.status, 1
    wider = (_neighbourhood(model, free & model.integer & ~machines, lp_values, values)
             | (free if timed else ~model.integer) | machines) & candidates
    # continuous columns (moves) are cheap to free: only integer ones count against the cap
    if ((best.objective - lp_bound) > gap * abs(best.objective + model.offset)
            and int((wider & model.integer).sum()) <= NEIGHBOURHOOD_MAX_COLUMNS
            and left() > 0 and wider.sum() > (free & candidates).sum()):
        again = _run(model, np.flatnonzero(wider), values, integer=True, time_limit_s=left(), gap=stage_gap,
                     start=values)
        stages = 2
        if again.values is not None and again.objective < best.objective - 1e-9:
            best, values = again, again.values
        status = again.status if again.status != "optimal" else status
    rel_gap = (best.objective - lp_bound) / max(abs(best.objective + model.offset), 1e-9)
    final_status = "optimal" if status == "optimal" and rel_gap <= gap else (
        "gap_limit" if status == "optimal" else status)
    return Solution(values, best.objective, min(lp_bound, best.objective), final_status,
                    f"lp-fix-mip ({stages} stage{'s' * (stages > 1)}, {int((free & candidates).sum())} free columns)",
                    time.perf_counter() - started)


def relaxation_bound(model: Model) -> float:
    """The LP relaxation's optimum: a proven lower bound on the model (benchmarks report it)."""
    run = _run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=False,
               time_limit_s=600.0, gap=0.0)
    if run.values is None:
        raise RuntimeError(f"the LP relaxation was not solved (status {run.status})")
    return run.bound


def improve(model: Model, start: FloatArray, *, time_limit_s: float, gap: float, bound_first: bool = False) -> Solution:
    """The whole MIP from a feasible start (priority.py's stages): the start is kept when the solver
    finds nothing better in its time, so the answer is always feasible. With `bound_first`, the LP
    relaxation is solved first, and a start within `gap` of its bound is the answer: the MIP would
    spend its cuts and heuristics proving what the LP already proves (on the 10,000-workload bench
    fleet at --gap 0.005, 2 s for the LP against 4.5 s for the MIP); when the LP does not prove it,
    its seconds are lost, so callers ask for it only where the start is likely that good."""
    started = time.perf_counter()
    start_cost = float(model.cost @ start)
    if bound_first:
        relaxed = _run(model, np.flatnonzero(model.upper > model.lower), model.lower, integer=False,
                       time_limit_s=time_limit_s, gap=0.0)
        if relaxed.values is not None and start_cost - relaxed.bound <= gap * abs(start_cost + model.offset):
            return Solution(start, start_cost, min(relaxed.bound, start_cost), "optimal", "lp-bound",
                            time.perf_counter() - started)
        time_limit_s -= time.perf_counter() - started
    run = _run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=True,
               time_limit_s=max(time_limit_s, 0.01), gap=gap, start=start)
    if run.values is None or run.objective > start_cost + 1e-9:
        return Solution(start, start_cost, min(run.bound, start_cost), run.status, "mip-start",
                        time.perf_counter() - started)
    return Solution(run.values, run.objective, min(run.bound, run.objective), run.status, "mip",
                    time.perf_counter() - started)


def improve_over(model: Model, start: FloatArray, free: BoolArray, *, time_limit_s: float, gap: float) -> Solution:
    """The MIP over the `free` columns only, every other held at `start`, from `start` (feasible, so the
    restricted MIP is too): priority.py's tier stage where the whole one was cut short. Its bound is of the
    restricted model only, so none is given (-inf)."""
    started = time.perf_counter()
    run = _run(model, np.flatnonzero(free), start, integer=True, time_limit_s=max(time_limit_s, 0.01), gap=gap,
               start=start)
    start_cost = float(model.cost @ start)
    if run.values is None or run.objective > start_cost + 1e-9:
        return Solution(start, start_cost, -math.inf, run.status, "mip-local-start", time.perf_counter() - started)
    return Solution(run.values, run.objective, -math.inf, run.status, "mip-local", time.perf_counter() - started)
