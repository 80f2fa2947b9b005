"""Tier priority made exact (spec, "Tier priority"): placed GPU-hours are maximized tier by tier,
fixed first, and only then is cost minimized.

The penalties on unplaced replicas (formulation.py) already make placing work dearer to skip than
any placement costs, and higher tiers dearer than lower ones; but a weight cannot say that one
fixed replica outranks any number of burst GPU-hours without a weight so large that the MIP slows
down beside small costs, and the penalty prices a replica by the machines it could hold, not by its
GPU-hours. So the first solve keeps the penalties (a good start), and only when it leaves a replica
unplaced beyond what a cost ceiling forces does this module solve in stages: for each tier, highest
first, the least unplaced GPU-hours given the tiers above (a row `sum(gpu-hours × unplaced) <= best`
then holds it; a tier already at its floor needs no solve, only the row), and last the cost under those rows. Every stage starts from the previous stage's answer, which is
feasible for every row so far, so a stage cut short by its work still hands back a valid plan. Plans
where everything is placed pay no extra solve, unless opportunistic work sits in a pool the others may use.

Revision 4: between the burst tier and the opportunistic one, the fixed and burst tiers' cash priced as if they
were alone (alone.py) is minimized and held by a row, so that opportunistic work runs only in what they leave
(spec, "Tier priority"). The stage starts from the previous answer and is solved as the last stage is; where
everything was placed and its LP proves the first answer, that answer is the plan.

Each stage is solved as the first answer was (solve.solved_whole, refine.py). A model solve() takes whole
gets whole MIPs. A larger one, which the LP-guided route answered, gets the route's means: a tier stage
solves the neighbourhood of its short replicas first and takes the whole MIP only where the stage's LP
bound does not prove that answer and the model is small enough for it to end (the order is then exact;
otherwise the stage's status says gap_limit); the last stage is refined from the route's LP
basis and never proven by a whole MIP the first answer did not need either.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from hybridctl.core.placement.tiers import TIER_ORDER, Tier
from hybridctl.core.placement.units import Unit
from hybridctl.core.solver.alone import Alone, priced_alone
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.highs_run import LpBasis
from hybridctl.core.solver.milp import Col, FloatArray, Model, with_row
from hybridctl.core.solver.refine import improve, improve_over, lp_bound, refine
from hybridctl.core.solver.solve import NEIGHBOURHOOD_MAX_COLUMNS, Solution, solved_whole, units_of

_TOL = 1e-6


def _rank(units: list[Unit], model: Model) -> tuple[FloatArray, np.ndarray, np.ndarray]:
    """Per column: GPU-hours of one unplaced replica, the owning unit's tier rank, and the unplaced mask."""
    rank_of = {tier: i for i, tier in enumerate(TIER_ORDER)}
    unit_rank = np.array([rank_of[u.tier] for u in units] + [len(TIER_ORDER)], dtype=np.int64)
    gpu_hours = np.array([u.gpu_count * u.hours for u in units] + [0.0], dtype=np.float64)
    # machine columns belong to no unit: their unit index is len(units)
    owner = np.minimum(model.unit, len(units))
    return gpu_hours[owner], unit_rank[owner], model.kind == Col.UNPLACED


def needs_stages(units: list[Unit], model: Model, values: FloatArray) -> bool:
    """Some replica is left unplaced that no cost ceiling forced (its unplaced column above its floor),
    or an opportunistic replica is placed where a fixed or burst one may go.
    The penalties alone cannot be trusted then: they rank tiers by weight and price a replica by the
    machines it could hold, not by its GPU-hours. (Staging only when a lower tier holds capacity
    was tried: it breaks the spec's order inside the lowest tier, which the brute-force oracle of
    tests/core/placement/test_planner_properties.py catches.) With everything placed, the least cash
    can still break revision 4's rule: a service that could also rent a cheap machine leaves the owned one
    to a job whose only other pool is dear. Where no opportunistic replica is in a pool a fixed or burst unit
    may use, the others' plan is one of the inventory without them (they share no pool, machine or row) and
    the least cash of the whole is the least of theirs; elsewhere the stages check it, most often with one LP."""
    short = (model.kind == Col.UNPLACED) & (values > model.lower + 0.5)
    return bool(short.any()) or _opportunistic_beside_others(units, model, values)


def _opportunistic_beside_others(units: list[Unit], model: Model, values: FloatArray) -> bool:
    _, rank, _ = _rank(units, model)
    opportunistic = TIER_ORDER.index(Tier.OPPORTUNISTIC)
    place = model.kind == Col.PLACE
    held = place & (rank == opportunistic) & (values > 0.5)
    if not held.any():
        return False
    return bool(np.isin(model.ref[held], model.ref[place & (rank < opportunistic)]).any())


def by_priority(units: list[Unit], model: Model, first: Solution, *, effort: Effort, gap: float) -> Solution:
    """The lexicographic stages from `first`, a feasible answer of `model` (see the module's note)."""
    gpu_hours, rank, unplaced = _rank(units, model)
    values = first.values
    staged = model
    statuses: list[str] = []
    solved_a_tier = False
    whole = solved_whole(model)  # each stage is solved as the first answer was (refine.py)
    for r in range(len(TIER_ORDER)):
        cols = np.flatnonzero(unplaced & (rank == r))
        if not cols.size:
            continue
        if _others_first(rank, r):
            # before any opportunistic GPU-hour, the others' cash alone is held at its least (alone.py)
            alone = priced_alone(staged, rank < r, rank == r)
            values, cash, status = _alone_stage(alone, values, whole, first, effort=effort, gap=gap)
            staged = with_row(alone.model, np.flatnonzero(alone.cost), alone.cost[alone.cost != 0], -np.inf,
                              cash + _TOL * max(1.0, abs(cash)))
            statuses.append(status)
            gpu_hours, rank, unplaced = (_padded(a, staged.columns, fill)
                                         for a, fill in ((gpu_hours, 0.0), (rank, len(TIER_ORDER)), (unplaced, False)))
        floor = float(gpu_hours[cols] @ staged.lower[cols])
        short = float(gpu_hours[cols] @ values[cols])
        if short > floor + _TOL:  # not provably best yet: solve for this tier alone
            tier_cost = np.zeros(staged.columns)
            tier_cost[cols] = gpu_hours[cols]
            values, status = _tier_stage(_costed(staged, tier_cost, 0.0), values, cols, rank, r, whole, first,
                                         effort=effort)
            short = float(gpu_hours[cols] @ values[cols])
            statuses.append(status)
            solved_a_tier = True
        staged = with_row(staged, cols, gpu_hours[cols], -np.inf, short + _TOL * max(1.0, short))
    if not solved_a_tier and statuses == ["optimal"] and np.array_equal(values[:model.columns], first.values):
        # everything placed, and the others' cash alone proven least with it: the first answer, a plan of
        # least cash, stays one under the stages' rows, and the last stage would only prove it again
        return first
    # last, the cost alone: every tier's GPU-hours are held by the rows, and the penalties, which
    # price a replica by the machines it could hold, must not choose among equal GPU-hours
    cost = staged.cost.copy()
    cost[unplaced] = 0.0
    last = _costed(staged, cost, model.offset)
    if whole:
        # A first answer within the gap of the penalised model's bound makes it likely that the start is
        # within the gap of the last stage's LP bound too: then that LP proves it, and the MIP is not run
        final = _stage(last, values, effort=effort, gap=gap, bound_first=first.status == "optimal",
                       basis=first.basis)
    else:  # the route gave the first answer: the last stage is refined as the route would (refine.py)
        final = refine(last, values, effort=effort, gap=gap, basis=first.basis)
    found = final.values[:model.columns]  # the others' own machines (alone.py) are the stages' only
    penalties = float(model.cost[unplaced[:model.columns]] @ found[unplaced[:model.columns]])
    worst = next((s for s in [*statuses, final.status] if s != "optimal"), "optimal")
    # the first answer's bound holds for every plan of the model, these stages' too: it stands where a
    # stage was cut short before it proved anything
    bound = max(first.bound, final.bound + penalties)
    return Solution(found, float(model.cost @ found), bound, worst, "priority-stages")


def _others_first(rank: np.ndarray, r: int) -> bool:
    """Before tier `r`'s stage, the stage of the others' cash alone: for the opportunistic tier, where the model
    has fixed or burst work (bench/priority_price.py turns it off to plan by revision 3's rule)."""
    return TIER_ORDER[r] is Tier.OPPORTUNISTIC and bool((rank < r).any())


def _alone_stage(alone: Alone, values: FloatArray, whole: bool, first: Solution, *, effort: Effort,
                 gap: float) -> tuple[FloatArray, float, str]:
    """The least cash of the fixed and burst tiers alone under the rows so far, from `values`, solved as the
    last stage is (the first answer is most often that least already, which the LP then proves)."""
    start = alone.start(values)
    stage_model = _costed(alone.model, alone.cost, alone.model.offset)
    stage = _stage(stage_model, start, effort=effort, gap=gap, bound_first=True, basis=first.basis) if whole \
        else refine(stage_model, start, effort=effort, gap=gap, basis=first.basis)
    return stage.values, float(alone.cost @ stage.values), stage.status


def _padded(array: np.ndarray, size: int, fill: float | int | bool) -> np.ndarray:
    """A per-column array of a model extended with columns of no unit (alone.py's machines)."""
    return np.concatenate([array, np.full(size - array.size, fill, dtype=array.dtype)])


def _tier_stage(tier_model: Model, values: FloatArray, cols: np.ndarray, rank: np.ndarray, r: int, whole: bool,
                first: Solution, *, effort: Effort) -> tuple[FloatArray, str]:
    """Tier `r`'s stage (its short GPU-hours the cost), from `values`, by the first answer's means."""
    def whole_mip(start: FloatArray) -> tuple[FloatArray, str]:
        stage = _stage(tier_model, start, effort=effort, gap=0.0)
        return stage.values, stage.status

    if whole:
        values, status = whole_mip(values)
        if status != "optimal":  # cut short: at least no lower tier may keep what this one fits in
            values = _local_stage(tier_model, values, cols, rank, r, effort=effort)
        return values, status
    # the neighbourhood of the short replicas first, which the LP often proves (refine.py)
    values = _local_stage(tier_model, values, cols, rank, r, effort=effort)
    status = _proven(tier_model, values, effort, first)
    # the spec's order made exact by the whole MIP from the local answer, where it can end: on the 10,000-workload
    # fleets (52,000 columns and more) it never proved a tier stage in its time or work
    if status == "gap_limit" and tier_model.columns <= NEIGHBOURHOOD_MAX_COLUMNS:
        return whole_mip(values)
    return values, status


def _stage(model: Model, start: FloatArray, *, effort: Effort, gap: float, bound_first: bool = False,
           basis: LpBasis | None = None) -> Solution:
    """One stage: the whole MIP from a feasible start, which stays the answer when nothing better is
    found within its work. solve()'s LP-guided route is no help here: it rounds the LP, fixes most units and
    lets the rest leave replicas unplaced, which the tier rows forbid (its restricted MIPs come out
    infeasible on the 10,000-workload bench fleet)."""
    return improve(model, start, effort=effort, gap=gap, bound_first=bound_first, basis=basis)


def _local_stage(model: Model, values: FloatArray, cols: np.ndarray, rank: np.ndarray, r: int, *,
                 effort: Effort) -> FloatArray:
    """A tier stage the whole MIP could not finish, over a neighbourhood small enough to end: the units of
    tier `r` left short, every lower-tier unit with replicas in a pool they may use, and every machine and
    gang column (which follow the units); the rest is held where it is. Exact within it, so no lower-tier
    replica keeps capacity a short replica of this tier fits in (what checker/priority.py refuses), even
    when its work cut the whole stage short."""
    place = model.kind == Col.PLACE
    short = cols[values[cols] > model.lower[cols] + 0.5]
    if not short.size:
        return values
    theirs = place & np.isin(model.unit, model.unit[short])
    holding = place & (values > 0.5) & (rank > r) & np.isin(model.ref, model.ref[theirs])
    free = units_of(model, theirs | holding) | np.isin(model.kind, (int(Col.MACHINES), int(Col.GANG),
                                                                               int(Col.GANG_MACHINES)))
    return improve_over(model, values, free, effort=effort, gap=0.0).values


def _proven(model: Model, values: FloatArray, effort: Effort, first: Solution) -> str:
    """"optimal" where the stage's LP bound (its GPU-hours short) proves `values`, else "gap_limit" ("time_limit"
    where the safety net struck in the LP). Not rounded up: a replica's GPU-hours need not be whole."""
    bound = lp_bound(model, effort=effort, basis=first.basis)
    if not math.isfinite(bound):  # the safety net struck in the LP
        return "time_limit"
    return "optimal" if float(model.cost @ values) <= bound + _TOL * max(1.0, abs(bound)) else "gap_limit"


def _costed(model: Model, cost: FloatArray, offset: float) -> Model:
    return replace(model, cost=cost, offset=offset)
