"""plan(): inventory (and optionally the previous plan) in, Plan out. Pure apart from the solver library."""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from operator import attrgetter
from types import MappingProxyType
from typing import overload

import numpy as np

from hybridctl import __version__
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.core.inventory.models import (
    DEFAULT_REALTIME_HOURS,
    BudgetAction,
    CostModel,
    Inventory,
    Workload,
    WorkloadType,
)
from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo, demands, pool_infos
from hybridctl.core.placement.explain import budget_reason, placement_reason, unplaced_reason
from hybridctl.core.placement.formulation import formulate, penalty_per_replica
from hybridctl.core.placement.movements import data_movements
from hybridctl.core.placement.patterns import Pattern, deal_by_pattern
from hybridctl.core.placement.previous_hours import keep_hours, previous_hours, previous_start
from hybridctl.core.placement.reason_tallies import pool_tallies
from hybridctl.core.placement.segment_classes import column_segment_hours, segment_classes
from hybridctl.core.placement.tiers import classify_workload
from hybridctl.core.placement.timed_plan import plan_segments, plan_week, segment_hours, timed_objective
from hybridctl.core.placement.units import PoolTable, Unit, build_units, components, distribute
from hybridctl.core.plan.model import Placement, Plan, SolverReport, Unplaced
from hybridctl.core.pricing.pools import pool_usage
from hybridctl.core.pricing.rates import (
    committed_total_usd_per_month,
    is_always_on,
    machines_usd_per_month,
    objective_usd_per_month,
    placement_usd_per_month,
    replica_hours,
    whole_machines,
)
from hybridctl.core.pricing.totals import compute_usd_per_month, data_usd_per_month
from hybridctl.core.solver.budget import within_budget
from hybridctl.core.solver.effort import SAFETY_SECONDS, Effort
from hybridctl.core.solver.milp import Col
from hybridctl.core.solver.priority import by_priority, needs_stages
from hybridctl.core.solver.solve import solve
from hybridctl.core.week.segments import IsoWeek, Week

DEFAULT_TIME_LIMIT_S = SAFETY_SECONDS  # the safety net only: the solver's work is bounded (effort.py)
DEFAULT_GAP = 1e-4
DEFAULT_MOVE_THRESHOLD_USD = 100.0
EXACT_RESOLVE_MAX_COLUMNS = 2_000  # an unmerged model this small is solved again when merging lost money

_STATUS_RANK = MappingProxyType({"optimal": 0, "gap_limit": 1, "time_limit": 2})


@dataclass(frozen=True)
class PlanOptions:
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    gap: float = DEFAULT_GAP
    move_threshold_usd: float = DEFAULT_MOVE_THRESHOLD_USD
    # the ISO week the plan is for (windows in UTC at it): required when the inventory has a schedule, named by
    # the operation (--week, else operations/week.py this_week), since the core reads no clock
    week: IsoWeek | None = None


def previous_replicas(previous: Plan | None) -> dict[str, dict[str, int]]:
    """demand key -> pool -> replicas, from a previous plan, for the stability term."""
    kept: dict[str, dict[str, int]] = defaultdict(dict)
    for placement in previous.placements if previous else ():
        key = placement.demand or placement.workload
        kept[key][placement.pool] = kept[key].get(placement.pool, 0) + placement.replicas
    return kept


def _reason_key(demand: Demand, p: int) -> tuple[object, ...]:
    """Everything placement_reason() reads: thousands of twins share one reason per pool."""
    w = demand.workload
    return (demand.gpu_types, demand.decision.capacity_types, demand.pinned_site,
            tuple(w.sites) if w.sites is not None else None, tuple(d.name for d in demand.checked_datasets),
            (w.latency.region, w.latency.p95_ms) if w.latency else None, p, demand.gpu_count, demand.tier,
            tuple(sorted({d.site for d in demand.remote_datasets})), w.replicas > 1)


@dataclass
class _Solved:
    """What the solver decided, summed over components."""

    counts: dict[int, dict[int, int]]  # unit -> pool -> replicas
    patterns: dict[int, list[tuple[int, Pattern]]]  # unit -> (twins, pattern) for twins counted exactly
    objective: float  # of the (merged) models
    bound: float
    statuses: list[str]
    methods: set[str]
    variables: int
    components: int
    hours: dict[int, dict[int, dict[int, float]]] = field(default_factory=dict)  # unit -> pool -> segment -> hours


@dataclass
class _Assignment:
    """The solver's answer handed back to demands, and its objective by the spec's rules."""

    assigned: list[tuple[Demand, int, int]]  # (demand, pool, replicas)
    objective: float
    penalty: float
    segment_hours: dict[tuple[str, int], tuple[float, ...]] = field(default_factory=dict)  # (demand, pool) -> hours


def _solve_components(units: list[Unit], table: PoolTable, ceilings: dict[str, float], options: PlanOptions,
                      effort: Effort, cash: bool, week: Week | None = None, room: float | None = None) -> _Solved | None:
    """`room`: what a budget leaves beside the committed pools (policies.budget_action: shed), which binds
    every component together: they are then solved as one model (None: no budget to keep). None where the
    fixed tier alone spends more than `room`."""
    groups = components(units) if room is None else [list(range(len(units)))] if units else []
    solved = _Solved(defaultdict(dict), {}, 0.0, 0.0, [], set(), 0, len(groups))
    for group in groups:
        comp_units = [units[i] for i in group]
        model = formulate(comp_units, table, ceilings, options.move_threshold_usd, cash=cash, week=week)
        solved.variables += model.columns
        classes = segment_classes(comp_units, week) if week is not None and week.timed else None  # as formulate()'s
        start = previous_start(model, comp_units, classes, effort)
        if room is not None:  # the budget a row of every tier's stage (solver/budget.py)
            kept = within_budget(comp_units, model, room, effort=effort, gap=options.gap)
            if kept is None:
                return None
            solution = kept
        else:
            # each run's work is its own (effort.py): a component's plan never depends on how long another took
            solution = solve(model, effort=effort, gap=options.gap, previous=None if start is None else start.values)
            if needs_stages(comp_units, model, solution.values):  # spec: highest tier first, then cost
                solution = by_priority(comp_units, model, solution, effort=effort, gap=options.gap)
        # the hours nearest the previous plan's, all else held (a start kept inside its rows by a margin, too)
        if start is None or not (start.hours_kept and np.array_equal(solution.values, start.values)):
            solution = replace(solution, values=keep_hours(model, solution.values, comp_units, classes, effort))
        solved.objective += solution.objective
        solved.bound += solution.bound
        solved.statuses.append(solution.status)
        solved.methods.add(solution.method.split(" ")[0])
        placed = np.flatnonzero((model.kind == Col.PLACE) & (solution.values > 0.5))
        for col in placed.tolist():
            solved.counts[group[int(model.unit[col])]][int(model.ref[col])] = int(solution.values[col])
        if week is not None and classes is not None:
            for col, by_segment in column_segment_hours(model, solution.values, comp_units, week, classes).items():
                unit_hours = solved.hours.setdefault(group[int(model.unit[col])], {})
                unit_hours[int(model.ref[col])] = by_segment
        followed = np.flatnonzero((model.kind == Col.PATTERN) & (solution.values > 0.5))
        for col in followed.tolist():
            u = int(model.unit[col])
            sites, patterns = model.patterns[u]
            pattern = patterns[int(model.ref[col])].tolist()
            solved.patterns.setdefault(group[u], []).append(
                (int(np.rint(solution.values[col])), {site: k for site, k in zip(sites.tolist(), pattern, strict=True) if k}))
    return solved


def _assign(units: list[Unit], solved: _Solved, pools: list[PoolInfo], table: PoolTable,
            options: PlanOptions, cash: bool, week: Week | None = None) -> _Assignment:
    """Hand replicas back to demands and price the result as the model counts it: compute under
    the cost model (pay-per-use always-on machines per pool), data movement once per site, the
    penalty on unplaced replicas and the stability term."""
    result = _Assignment([], 0.0, 0.0)
    moved = 0.0
    always_on_gpus: dict[int, int] = defaultdict(int)
    for u, unit in enumerate(units):
        counts = solved.counts.get(u, {})
        egress_at = dict(zip(unit.eligible, unit.egress.tolist(), strict=True))
        placed_of: dict[str, int] = defaultdict(int)
        sites_of: dict[str, dict[int, float]] = defaultdict(dict)
        patterns = solved.patterns.get(u)
        dealt = (deal_by_pattern(unit, counts, table, patterns) if patterns is not None and len(unit.members) > 1
                 else distribute(unit, counts, table))
        for demand, p, n in dealt:
            result.assigned.append((demand, p, n))
            if week is not None:
                result.segment_hours[(demand.key, p)] = segment_hours(unit, p, counts.get(p, n), week,
                                                                      solved.hours.get(u, {}).get(p))
            if week is None:  # a timed plan is priced by the week's rules, below
                result.objective += objective_usd_per_month(demand, pools[p], n, cash)
            if not pools[p].committed and is_always_on(demand.hours):
                always_on_gpus[p] += n * demand.gpu_count
            placed_of[demand.key] += n
            sites_of[demand.key][int(table.site[p])] = egress_at[p]
        penalty = penalty_per_replica(unit, table.max_price)  # the same for every twin
        for demand in unit.members:
            result.penalty += (demand.replicas - placed_of[demand.key]) * penalty
            result.objective += sum(sites_of[demand.key].values())
        for p, n in unit.previous.items():
            moved += max(0, n - counts.get(p, 0)) * options.move_threshold_usd
    if week is not None:  # priced by the week's rules instead of the month's (timed_plan.py)
        units_of = {d.key: unit for unit in units for d in unit.members}
        result.objective += timed_objective(result.assigned, units_of, pools, week, cash)
        always_on_gpus.clear()
    if cash:
        for p, gpus in always_on_gpus.items():
            machines = whole_machines(gpus, pools[p].gpus_per_node)
            result.objective += machines_usd_per_month(pools[p], machines, DEFAULT_REALTIME_HOURS)
    result.objective += result.penalty + moved
    return result


def plan(inventory: Inventory, *, previous: Plan | None = None, options: PlanOptions | None = None,
         pools: list[PoolInfo] | None = None, planned_demands: list[Demand] | None = None,
         digest: str | None = None, tiers: dict[str, str] | None = None, facts: WorkloadFacts | None = None) -> Plan:
    """A cost-optimal placement. `pools`/`planned_demands` let failover plan against changed capacity;
    `digest`, `tiers` (workload -> tier) and `facts`, the inventory's when the caller knows them, save
    working them out again for the whole inventory.

    A plan over the budget is the plan (it fails, marked over budget) unless `policies.budget_action: shed`:
    then the plan that keeps within the budget by leaving lower tiers' work out, if it places all the fixed
    tier's GPU-hours the plan without the budget places (fixed work is never shed: spec, "Budget"). Only a
    plan of the whole inventory sheds: a failover's replan of some of its work against what is left (`pools`,
    `planned_demands`) sees only part of the month's cash, and reports its plan over budget instead."""
    options = options or PlanOptions()
    facts = facts or WorkloadFacts.of(inventory)
    whole = pools is None and planned_demands is None
    pools = pools if pools is not None else pool_infos(inventory)
    made = _plan(inventory, previous, options, pools, planned_demands, digest, tiers, facts)
    policies = inventory.policies
    if policies.budget_action is not BudgetAction.SHED or not made.over_budget or not whole:
        return made
    # what the budget leaves beside the committed pools (the model's constant), which are paid whatever runs
    room = (policies.monthly_budget_usd or 0.0) - (made.committed_usd_per_month if made.cost_model == "cash" else 0.0)
    if room < 0:
        return made
    shed = _plan(inventory, previous, options, pools, planned_demands, digest, tiers, facts, (room, made))
    if shed is None or shed.over_budget:
        return made
    keeps_fixed = _fixed_gpu_hours(shed) >= _fixed_gpu_hours(made) * (1 - 1e-9) - 1e-6
    return shed if keeps_fixed else made


def _fixed_gpu_hours(plan_: Plan) -> float:
    return sum(pl.gpus * pl.hours_per_month for pl in plan_.placements if pl.tier == "fixed")


@overload
def _plan(inventory: Inventory, previous: Plan | None, options: PlanOptions, pools: list[PoolInfo],
          planned_demands: list[Demand] | None, digest: str | None, tiers: dict[str, str] | None,
          facts: WorkloadFacts, shedding: None = None) -> Plan: ...


@overload
def _plan(inventory: Inventory, previous: Plan | None, options: PlanOptions, pools: list[PoolInfo],
          planned_demands: list[Demand] | None, digest: str | None, tiers: dict[str, str] | None,
          facts: WorkloadFacts, shedding: tuple[float, Plan]) -> Plan | None: ...


def _plan(inventory: Inventory, previous: Plan | None, options: PlanOptions, pools: list[PoolInfo],
          planned_demands: list[Demand] | None, digest: str | None, tiers: dict[str, str] | None,
          facts: WorkloadFacts, shedding: tuple[float, Plan] | None = None) -> Plan | None:
    """The plan; with `shedding`, (room, the plan without the budget): the plan whose cash beside the
    committed pools keeps within room, its shed replicas' reasons told against the plan without the budget
    (None where the fixed tier alone spends more than room)."""
    started = time.perf_counter()
    room, unbudgeted = shedding if shedding is not None else (None, None)
    table = PoolTable.of(pools)
    index = EligibilityIndex(inventory, pools)
    all_demands = planned_demands if planned_demands is not None else demands(inventory)
    before = previous_replicas(previous)
    # the ceilings of the workloads planned here (a replan plans a few of a fleet's)
    ceilings = {d.workload.name: d.workload.max_usd_per_month for d in all_demands
                if d.workload.max_usd_per_month is not None}
    cash = inventory.policies.cost_model is CostModel.CASH
    # the committed pools are a constant the model leaves out: the reported objective and bound
    # carry it, so that they read as the total under the cost model (plus tie-break and penalties)
    constant = committed_total_usd_per_month(pools) if cash else 0.0
    week = plan_week(inventory, options.week)
    hours_before = previous_hours(previous, week)
    units = build_units(all_demands, index, before, table, week=week, previous_hours=hours_before)
    effort = Effort.within(options.time_limit_s)  # the safety net's deadline: one for the whole plan
    solved = _solve_components(units, table, ceilings, options, effort, cash, week, room)
    if solved is None:
        return None
    result = _assign(units, solved, pools, table, options, cash, week)
    # Twins that pay data movement are merged by a relaxation; in the rare case handing them back
    # pays more than it counted, a small model is solved again unmerged, which is exact.
    if result.objective > solved.objective * (1 + 1e-9) + 0.01 \
            and sum(len(u.eligible) * len(u.members) for u in units) <= EXACT_RESOLVE_MAX_COLUMNS:
        exact_units = build_units(all_demands, index, before, table, merge_egress=False, week=week,
                                  previous_hours=hours_before)
        exact = _solve_components(exact_units, table, ceilings, options, effort, cash, week, room)
        if exact is not None:  # None: the fixed tier alone over the room unmerged; the merged answer stands
            exact_result = _assign(exact_units, exact, pools, table, options, cash, week)
            exact.bound = max(exact.bound, solved.bound)  # both models bound the same optimum from below
            if exact_result.objective < result.objective:
                solved, result = exact, exact_result
            else:
                solved.bound = exact.bound
    # what the reasons count of each pool (in a timed plan, its busiest segment: reason_tallies.py)
    tallies = pool_tallies(result.assigned, pools, result.segment_hours,
                           [s.hours for s in week.segments] if week is not None and week.timed else ())
    used, used_by_tier, machines = tallies.used, tallies.used_by_tier, tallies.machines
    holders: dict[int, dict[str, int]] = defaultdict(dict)  # who holds each pool's GPUs, for the reasons
    tier_of: dict[str, str] = {}
    for demand, p, n in result.assigned:
        name = demand.workload.name
        holders[p][name] = holders[p].get(name, 0) + n * demand.gpu_count
        tier_of[name] = demand.tier.value
    placements: list[Placement] = []
    placed_replicas: dict[str, int] = defaultdict(int)
    reasons: dict[tuple[object, ...], str] = {}
    for demand, p, n in result.assigned:
        pool = pools[p]
        placed_replicas[demand.key] += n
        key = _reason_key(demand, p)
        reason = reasons.get(key)
        if reason is None:
            reason = reasons[key] = placement_reason(demand, pool, index, used, inventory, machines, holders,
                                                               used_by_tier, tier_of)
        placements.append(Placement(
            workload=demand.workload.name, tier=demand.tier.value, site=pool.site.name, pool=pool.name,
            replicas=n, gpus=n * demand.gpu_count, usd_per_month=placement_usd_per_month(demand, pool, n),
            reason=reason, demand=demand.key, gpu_type=pool.pool.gpu, gpus_per_replica=demand.gpu_count,
            hours_per_month=replica_hours(demand, pool), segment_hours=result.segment_hours.get((demand.key, p), ())))
    placements.sort(key=lambda pl: (pl.workload, pl.demand, pl.site, pl.pool))

    unplaced: list[Unplaced] = []
    missing_unbudgeted = {u.demand: u.replicas for u in unbudgeted.unplaced} if unbudgeted is not None else {}
    for demand in all_demands:
        missing = demand.replicas - placed_replicas.get(demand.key, 0)
        if missing > 0:
            shed = missing - missing_unbudgeted.get(demand.key, 0) if unbudgeted is not None else 0
            reason = budget_reason(demand, shed, index, inventory, used, machines) if shed > 0 else \
                unplaced_reason(demand, missing, index, used, used_by_tier, machines, tallies.gang_machines)
            unplaced.append(Unplaced(demand.workload.name, reason, missing, demand.tier.value, demand.key))
    movements = data_movements(inventory, all_demands, placements)
    usage = pool_usage(pools, placements, [s.hours for s in week.segments] if week is not None else ())
    objective = result.objective + constant
    bound = min(solved.bound + constant, objective)
    gap = max(0.0, (objective - bound) / abs(objective)) if objective else 0.0
    status = max(solved.statuses, key=lambda s: _STATUS_RANK.get(s, 3)) if solved.statuses else "no_demand"
    if status == "optimal" and gap > options.gap + 1e-9:
        status = "gap_limit"
    report = SolverReport(status, round(objective, 2), round(bound, 2), round(gap, 6),
                          round(time.perf_counter() - started, 3), "+".join(sorted(solved.methods)) or "none",
                          solved.components, solved.variables, round(result.penalty, 2))
    if tiers is not None:
        decisions = tiers
    else:
        # classified once, in demands(); demands handed in (failover) may carry other decisions
        planned_tiers = {d.workload.name: d.tier.value for d in all_demands} if planned_demands is None else {}
        decisions = {w.name: planned_tiers.get(w.name) or classify_workload(w, inventory.policies).tier.value
                     for w in inventory.workloads}
    return Plan(
        inventory_name=inventory.name,
        inventory_digest=digest if digest is not None else inventory_digest(inventory),
        placements=tuple(placements),
        unplaced=tuple(sorted(unplaced, key=lambda x: (x.workload, x.demand))),
        data_movements=tuple(movements),
        pools=usage,
        solver=report,
        compute_usd_per_month=compute_usd_per_month(placements),
        data_usd_per_month=data_usd_per_month(movements),
        budget_usd_per_month=inventory.policies.monthly_budget_usd,
        tiers=decisions,
        workload_types=dict(facts.types),
        teams=dict(facts.teams),
        tool_version=__version__,
        cost_model=inventory.policies.cost_model.value,
        week=str(week.iso_week) if week is not None else "",
        segments=plan_segments(week),
    )


@dataclass(frozen=True)
class WorkloadFacts:
    """What a plan records of every workload of its inventory besides where it runs: its type (for the
    showback) and its team. A caller that plans one inventory again and again (a replan's passes, a
    drill's scenarios) works them out once."""

    types: dict[str, str]
    teams: dict[str, str]

    @staticmethod
    def of(inventory: Inventory, workloads: Sequence[Workload] | None = None) -> WorkloadFacts:
        """Of the inventory's workloads (or of these)."""
        chosen = inventory.workloads if workloads is None else workloads
        # without an enum lookup per workload of a fleet (in a dict: a lookup in the read-only proxy costs more)
        value_of = _TYPE_VALUE.copy()
        return WorkloadFacts(dict(zip(map(_NAME, chosen), map(value_of.__getitem__, map(_TYPE, chosen)), strict=True)),
                             {w.name: w.team for w in chosen if w.team is not None})


_NAME, _TYPE = attrgetter("name"), attrgetter("type")
_TYPE_VALUE = MappingProxyType({t: t.value for t in WorkloadType})


def budget_violation(plan_: Plan) -> str | None:
    """The spec's rule: a plan over monthly_budget_usd is an error that states both figures."""
    budget = plan_.budget_usd_per_month
    if budget is not None and plan_.over_budget:
        return (f"the optimal plan costs ${plan_.total_usd_per_month:,.2f}/month ({plan_.cost_model}), over the "
                f"monthly budget of ${budget:,.2f} (policies.monthly_budget_usd)")
    return None


def unplaced_failure(plan_: Plan, *, allow_unplaced: bool = False, fail_on_unplaced: bool = False) -> str | None:
    """Whether unplaced work fails the plan: fixed-tier work by default (it must always run), any
    work with fail_on_unplaced, none with allow_unplaced."""
    if fail_on_unplaced:
        failing = list(plan_.unplaced)
    elif allow_unplaced:
        return None
    else:
        failing = [u for u in plan_.unplaced if u.tier == "fixed"]
    if not failing:
        return None
    names = sorted({u.workload for u in failing})
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    replicas = sum(u.replicas for u in failing)
    what = "workload(s)" if fail_on_unplaced else "fixed-tier workload(s)"
    return f"{len(names)} {what} left with {replicas} replica(s) unplaced: {shown}"
