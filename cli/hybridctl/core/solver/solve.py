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

Every stage stops on its gap or its work (effort.py), never on a clock, and which stages run
depends only on what the earlier ones found, so the same model gives the same plan on any machine.
The safety net's time limit only guards against a pathological model (its status says when it
struck). When it strikes before the solver has a solution, the plan is the greedy start
(start.py), feasible by construction, with status time_limit: never an empty plan.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.solver import highs_run
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.highs_run import LpBasis
from hybridctl.core.solver.milp import Col, Model
from hybridctl.core.solver.start import greedy_start
from hybridctl.core.solver.timed_start import feasible_timed_start
from hybridctl.core.solver.timed_start import nothing_placed as _nothing_placed

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
CANDIDATES_PER_UNIT = 2  # placements of least reduced cost a freed unit may move to (see candidates_of)
# A timed model's route only seeds the whole MIP, which must then find nothing better: a wider choice
# makes its answer the optimum more often (on the bench's 1,000-workload fleets, 2 left seed 1 at
# 0.015 % over it, and the whole MIP then took longer than from the greedy start)
TIMED_CANDIDATES_PER_UNIT = 8
# The restricted MIPs stop within this of their own bound at the least: their bound is not the
# model's, so closing the last hundredths of a percent there buys little and costs seconds.
STAGE_GAP = 2e-4
_INTEGRAL_TOL = 1e-6

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Solution:
    values: FloatArray
    objective: float
    bound: float
    status: str
    method: str
    basis: LpBasis | None = None  # the model's LP basis, where the route solved its LP (a later stage starts from it)


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


def candidates_of(model: Model, lp_values: FloatArray, reduced_costs: FloatArray, per_unit: int) -> BoolArray:
    """The columns the restricted MIPs may use: every column but placements, placements the LP
    uses or the previous plan had, and each unit's few placements of least reduced cost. The
    reduced costs say which pools are worth a look; dropping the rest makes the MIPs fifty times
    faster and, measured on the benchmark inventories, costs less than the time saved buys."""
    keep: BoolArray = ~(model.kind == Col.PLACE) | _cheapest(model, reduced_costs, per_unit) \
        | (lp_values > _INTEGRAL_TOL) | _kept(model)
    return keep


def unsettled_of(model: Model, lp_values: FloatArray, values: FloatArray) -> BoolArray:
    """Placement columns the LP splits, or where `values` differ from the LP rounded."""
    unsettled: BoolArray = (model.kind == Col.PLACE) & ((np.abs(lp_values - np.round(lp_values)) > _INTEGRAL_TOL)
                                                       | (np.abs(values - np.round(lp_values)) > 0.5))
    return unsettled


def neighbourhood_of(model: Model, free: BoolArray, lp_values: FloatArray, values: FloatArray) -> BoolArray:
    """The free units plus every unit with replicas in a pool where the LP split a replica or the
    restricted MIP moved one: the units that can make room where rounding lost it."""
    place = model.kind == Col.PLACE
    unsettled = unsettled_of(model, lp_values, values)
    pools = np.zeros(int(model.ref.max(initial=-1)) + 1, dtype=np.bool_)
    pools[model.ref[unsettled]] = True
    sharing = place & ((lp_values > _INTEGRAL_TOL) | (values > 0.5)) & pools[np.where(place, model.ref, 0)]
    return units_of(model, sharing | free)


def solve(model: Model, *, effort: Effort, gap: float, previous: FloatArray | None = None) -> Solution:
    """The model's answer. `previous`: the previous plan as an answer of the model (placement/previous_hours.py),
    the start in place of the greedy one, and the answer wherever the solver finds none cheaper: with the same
    inputs the same plan comes back, whatever the solver's work allowed (spec, "Plans are reproducible")."""
    found = _solve(model, effort, gap, previous)
    if previous is None:
        return found
    cost = float(model.cost @ previous)
    if cost > found.objective + 1e-9 * max(1.0, abs(found.objective + model.offset)):
        return found
    return Solution(previous, cost, min(found.bound, cost), found.status, found.method + "-previous", found.basis)


def _solve(model: Model, effort: Effort, gap: float, previous: FloatArray | None) -> Solution:
    def direct(method: str, status: str | None = None, start: FloatArray | None = None,
               basis: LpBasis | None = None, proven: float = 0.0) -> Solution:
        # the greedy start is feasible by construction: the MIP improves it, and it is the plan when the
        # safety net strikes before the solver keeps anything (the status then says time_limit)
        if start is None:
            start = previous
        if start is None:
            start = greedy_start(model, _nothing_placed(model, model.lower, np.ones(model.columns, dtype=np.bool_)))
        if status is not None and effort.expired():
            return Solution(start, float(model.cost @ start), 0.0, status, method + "-greedy", basis)
        run = highs_run.run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=True, effort=effort,
                            gap=gap, start=start)
        if run.values is None:  # the safety net struck before the solver kept even the start
            return Solution(start, float(model.cost @ start), 0.0, status or run.status, method + "-greedy",
                            basis)  # costs are never negative: 0 bounds them
        # costs are never negative: 0 bounds them where the solver proved nothing; a bound the route proved
        # (`proven`, its LP's) stands where this run stopped on its work before proving as much
        return Solution(run.values, run.objective, max(min(run.bound, run.objective), proven, 0.0),
                        status or run.status, method, basis)

    # A timed model's hours (continuous, tied to their placement) and gang switches (tied to several units'
    # placements) break the fixing's premise that leaving the free units unplaced keeps every row: its start
    # is repaired (timed_start.py), and the MIP takes it whole where that fails.
    timed = _timed(model)
    if model.columns <= (TIMED_ROUTE_MIN_COLUMNS if timed else DIRECT_MIP_MAX_COLUMNS):
        return direct("mip")
    if timed and solved_whole(model):
        # The whole MIP proves the optimum, but from the greedy start its heuristics spend most of
        # their work finding a good plan: the route's answer, within hundredths of a percent of it,
        # leaves HiGHS mostly the bound to prove (bench/plan_bench.py --scheduled 0.3, docs/performance.md).
        routed = _lp_guided(model, timed, effort, gap, TIMED_CANDIDATES_PER_UNIT)
        if isinstance(routed, Solution) and routed.status == "optimal":
            return routed
        if isinstance(routed, Solution):
            better = previous is not None and float(model.cost @ previous) <= routed.objective
            return direct("mip-timed", start=previous if better else routed.values, basis=routed.basis,
                          proven=routed.bound)
        return direct("mip-timed")
    routed = _lp_guided(model, timed, effort, gap, CANDIDATES_PER_UNIT)
    if routed == _LP_TIMEOUT:  # the safety net struck in the LP: the greedy start, improved while it allows
        return direct("mip-after-lp-timeout", "time_limit")
    return routed if isinstance(routed, Solution) else direct("mip-timed")


def _timed(model: Model) -> bool:
    return bool(np.isin(model.kind, (int(Col.HOURS), int(Col.GANG), int(Col.GANG_MACHINES))).any())


def solved_whole(model: Model) -> bool:
    """Whether solve() ends with the model's whole MIP (smaller models), not with the LP-guided route alone:
    a later stage of the model (priority.py) is then solved the same way (refine.py)."""
    return model.columns <= (TIMED_DIRECT_MIP_MAX_COLUMNS if _timed(model) else DIRECT_MIP_MAX_COLUMNS)


_LP_TIMEOUT = "lp-timeout"
_UNREPAIRED = "unrepaired"


def _lp_guided(model: Model, timed: bool, effort: Effort, gap: float,
               candidates_per_unit: int) -> Solution | str:
    """The LP-guided route (the module's note), or why it gave no plan: the safety net struck in the LP
    (_LP_TIMEOUT), or a timed start could not be repaired (_UNREPAIRED: the MIP is solved whole)."""
    relaxed = highs_run.relaxed(model, effort=effort)
    if relaxed.values is None:
        return _LP_TIMEOUT
    lp_bound, lp_values = relaxed.bound, relaxed.values
    candidates = candidates_of(model, lp_values, relaxed.reduced_costs if relaxed.reduced_costs is not None
                             else np.zeros(model.columns), candidates_per_unit)
    rounded = np.round(lp_values)
    fractional = model.integer & (np.abs(lp_values - rounded) > _INTEGRAL_TOL)
    if not fractional.any():
        rounded[~model.integer] = lp_values[~model.integer]
        proven = relaxed.objective - lp_bound <= gap * abs(relaxed.objective + model.offset)
        return Solution(rounded, relaxed.objective, lp_bound, "optimal" if proven else "gap_limit", "lp",
                        relaxed.basis)
    # a unit with any fractional column stays wholly free (its unplaced column too), which keeps
    # the restricted MIP feasible: leaving its replicas unplaced always fits. Continuous columns
    # (moves) and the few machine columns always follow the units.
    machines = np.isin(model.kind, (int(Col.MACHINES), int(Col.GANG_MACHINES)))
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
    best = highs_run.run(model, np.flatnonzero(free & candidates), base, integer=True, effort=effort, gap=stage_gap,
                         start=start)
    if best.values is None:  # the safety net struck: the fractional units stay unplaced
        best = highs_run.Run(start, float(model.cost @ start), lp_bound, best.status)
    values = best.values if best.values is not None else start
    status, stages = best.status, 1
    wider = (neighbourhood_of(model, free & model.integer & ~machines, lp_values, values)
             | (free if timed else ~model.integer) | machines) & candidates
    # continuous columns (moves) are cheap to free: only integer ones count against the cap
    if ((best.objective - lp_bound) > gap * abs(best.objective + model.offset)
            and int((wider & model.integer).sum()) <= NEIGHBOURHOOD_MAX_COLUMNS
            and wider.sum() > (free & candidates).sum()):
        # run whatever the clock says: past the safety net's deadline it has its last half second, and its
        # status (time_limit) says so, where skipping it would change the plan without a word
        again = highs_run.run(model, np.flatnonzero(wider), values, integer=True, effort=effort, gap=stage_gap,
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
                    relaxed.basis)


