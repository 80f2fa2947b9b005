"""plan(): inventory (and optionally the previous plan) in, Plan out. Pure apart from the solver library."""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass

from hybridctl import __version__
from hybridctl.core.eligibility import Demand, EligibilityIndex, PoolInfo, demands, pool_infos
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.costs import data_movements, inventory_digest
from hybridctl.core.plan.explain import placement_reason, unplaced_reason
from hybridctl.core.plan.formulation import Col, formulate
from hybridctl.core.plan.model import Placement, Plan, PoolUsage, SolverReport, Unplaced
from hybridctl.core.plan.solve import solve
from hybridctl.core.plan.units import Unit, build_units, components
from hybridctl.core.tiers import classify_workload

DEFAULT_TIME_LIMIT_S = 30.0
DEFAULT_GAP = 1e-4
DEFAULT_MOVE_THRESHOLD_USD = 100.0

_STATUS_RANK = {"optimal": 0, "gap_limit": 1, "time_limit": 2}


@dataclass(frozen=True)
class PlanOptions:
    time_limit_s: float = DEFAULT_TIME_LIMIT_S
    gap: float = DEFAULT_GAP
    move_threshold_usd: float = DEFAULT_MOVE_THRESHOLD_USD


def previous_replicas(previous: Plan | None) -> dict[str, dict[str, int]]:
    """demand key -> pool -> replicas, from a previous plan, for the stability term."""
    kept: dict[str, dict[str, int]] = defaultdict(dict)
    for placement in previous.placements if previous else ():
        key = placement.demand or placement.workload
        kept[key][placement.pool] = kept[key].get(placement.pool, 0) + placement.replicas
    return kept


def _distribute(unit: Unit, counts: dict[int, int], pools: list[PoolInfo]) -> list[tuple[Demand, int, int]]:
    """Hand a merged unit's replicas back to its member demands: (demand, pool, replicas)."""
    if len(unit.members) == 1:
        return [(unit.members[0], p, n) for p, n in sorted(counts.items()) if n > 0]
    if unit.spread > 1:
        return _deal_round_robin(unit, counts, pools)
    remaining = dict(counts)
    order = sorted(remaining, key=lambda p: (pools[p].usd_per_gpu_hour, p))
    result: list[tuple[Demand, int, int]] = []
    for member in sorted(unit.members, key=lambda d: d.key):
        need = member.replicas
        for p in order:
            take = min(need, remaining[p])
            if take > 0:
                result.append((member, p, take))
                remaining[p] -= take
                need -= take
            if need == 0:
                break
    return result


def _deal_round_robin(unit: Unit, counts: dict[int, int], pools: list[PoolInfo]) -> list[tuple[Demand, int, int]]:
    """Deal merged twins' replicas, sorted by failure domain, one to each twin in turn.

    Twin i gets slots i, i+n, i+2n...: its replicas stand n apart in the sorted list, so they
    all fall in one domain only if that domain holds more than n(R-1) slots, which the
    formulation forbids. Twins left short (capacity ran out) are the last in the order.
    """
    slots = [p for p in sorted(counts, key=lambda p: (pools[p].domain, p)) for _ in range(counts[p])]
    members = sorted(unit.members, key=lambda d: d.key)
    taken: dict[tuple[int, int], int] = defaultdict(int)
    for position, p in enumerate(slots):
        taken[(position % len(members), p)] += 1
    return [(members[m], p, n) for (m, p), n in sorted(taken.items())]


def plan(inventory: Inventory, *, previous: Plan | None = None, options: PlanOptions | None = None,
         pools: list[PoolInfo] | None = None, planned_demands: list[Demand] | None = None) -> Plan:
    """A cost-optimal placement. `pools`/`planned_demands` let failover plan against changed capacity."""
    options = options or PlanOptions()
    started = time.perf_counter()
    pools = pools if pools is not None else pool_infos(inventory)
    index = EligibilityIndex(inventory, pools)
    all_demands = planned_demands if planned_demands is not None else demands(inventory)
    units = build_units(all_demands, index, inventory.policies.spread_fixed_across, previous_replicas(previous))
    ceilings = {w.name: w.max_usd_per_month for w in inventory.workloads if w.max_usd_per_month is not None}
    groups = components(units)
    total_columns = sum(len(units[i].eligible) + 1 for g in groups for i in g)

    counts: dict[int, dict[int, int]] = defaultdict(dict)  # unit -> pool -> replicas
    objective = bound = penalty = 0.0
    statuses: list[str] = []
    methods: set[str] = set()
    variables = 0
    for group in groups:
        comp_units = [units[i] for i in group]
        model = formulate(comp_units, pools, ceilings, options.move_threshold_usd)
        variables += len(model.cost)
        elapsed = time.perf_counter() - started
        share = (sum(len(u.eligible) + 1 for u in comp_units) / max(total_columns, 1))
        budget = max((options.time_limit_s - elapsed) * max(share, 0.05), 0.5)
        solution = solve(model, time_limit_s=budget, gap=options.gap)
        objective += solution.objective
        bound += solution.bound
        statuses.append(solution.status)
        methods.add(solution.method.split(" ")[0])
        for col, kind in enumerate(model.kind):
            value = int(solution.values[col])
            if value <= 0:
                continue
            u, p = model.owner[col]
            if kind is Col.PLACE:
                counts[group[u]][p] = value
            elif kind is Col.UNPLACED:
                penalty += model.cost[col] * value
    used: dict[int, int] = defaultdict(int)
    used_by_tier: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    assigned: list[tuple[Demand, int, int]] = []
    for u, unit in enumerate(units):
        for demand, p, n in _distribute(unit, counts.get(u, {}), pools):
            assigned.append((demand, p, n))
            used[p] += n * demand.gpu_count
            used_by_tier[p][demand.tier.value] += n * demand.gpu_count

    placements: list[Placement] = []
    placed_replicas: dict[str, int] = defaultdict(int)
    for demand, p, n in assigned:
        pool = pools[p]
        placed_replicas[demand.key] += n
        placements.append(Placement(
            workload=demand.workload.name, tier=demand.tier.value, site=pool.site.name, pool=pool.name,
            replicas=n, gpus=n * demand.gpu_count, usd_per_month=round(n * demand.usd_per_replica(pool), 2),
            reason=placement_reason(demand, pool, index, used, inventory),
            demand=demand.key, gpu_type=pool.pool.gpu, gpus_per_replica=demand.gpu_count))
    placements.sort(key=lambda pl: (pl.workload, pl.demand, pl.site, pl.pool))

    unplaced: list[Unplaced] = []
    for demand in all_demands:
        missing = demand.replicas - placed_replicas.get(demand.key, 0)
        if missing > 0:
            unplaced.append(Unplaced(demand.workload.name, unplaced_reason(demand, missing, index, used, used_by_tier),
                                     missing, demand.tier.value, demand.key))
    movements = data_movements(inventory, all_demands, placements)
    usage = tuple(PoolUsage(p.site.name, p.name, p.pool.gpu, p.pool.capacity_type.value, p.capacity_gpus,
                            used.get(p.index, 0), round(p.usd_per_gpu_hour, 4)) for p in pools)
    status = max(statuses, key=lambda s: _STATUS_RANK.get(s, 3)) if statuses else "no_demand"
    gap = max(0.0, (objective - bound) / abs(objective)) if objective else 0.0
    report = SolverReport(status, round(objective, 2), round(bound, 2), round(gap, 6),
                          round(time.perf_counter() - started, 3), "+".join(sorted(methods)) or "none",
                          len(groups), variables, round(penalty, 2))
    decisions = {w.name: classify_workload(w, inventory.policies).tier.value for w in inventory.workloads}
    return Plan(
        inventory_name=inventory.name,
        inventory_digest=inventory_digest(inventory),
        placements=tuple(placements),
        unplaced=tuple(sorted(unplaced, key=lambda x: (x.workload, x.demand))),
        data_movements=tuple(movements),
        pools=usage,
        solver=report,
        compute_usd_per_month=round(sum(p.usd_per_month for p in placements), 2),
        data_usd_per_month=round(sum(m.usd_per_month for m in movements), 2),
        budget_usd_per_month=inventory.policies.monthly_budget_usd,
        tiers=decisions,
        workload_types={w.name: w.type.value for w in inventory.workloads},
        tool_version=__version__,
    )


def budget_violation(plan_: Plan) -> str | None:
    """The spec's rule: a plan over monthly_budget_usd is an error that states both figures."""
    budget = plan_.budget_usd_per_month
    if budget is not None and plan_.total_usd_per_month > budget + 0.005:
        return (f"the optimal plan costs ${plan_.total_usd_per_month:,.2f}/month, over the monthly budget of "
                f"${budget:,.2f} (policies.monthly_budget_usd)")
    return None
