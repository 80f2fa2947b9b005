"""What can never work, caught when the inventory is written: each an error naming the binding constraint.

- a workload whose eligibility leaves no pool (the constraint that emptied its list, node shape included);
- a replica that fits no eligible pool by count (a committed pool's GPUs, a pay-per-use quota in whole machines);
- too few failure domains among its eligible pools for its spread;
- a cost ceiling below the whole workload's cheapest possible cost;
- under the cash cost model, a budget below the committed pools' cost, which is paid whatever runs.
Demand beyond the capacity of a set of GPU types is a warning: the plan lists what does not fit. With a
`schedule`, it is counted over the week as the plan counts it (week_capacity.py: GPU-hours per segment, and
whole machines for machine-sized gangs on committed pools).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from hybridctl.core.inventory.diagnostics import Diagnostics
from hybridctl.core.inventory.documents import Locator
from hybridctl.core.inventory.models import CostModel, Inventory
from hybridctl.core.inventory.week_capacity import REFERENCE_WEEK, Shortfall, week_shortfalls
from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo, demands
from hybridctl.core.pricing.rates import (
    committed_total_usd_per_month,
    egress_rates,
    egress_usd_by_site,
    replica_usd_per_month,
    whole_machines,
)
from hybridctl.core.week.segments import build_week
from hybridctl.errors import Location


def replica_fits(demand: Demand, pool: PoolInfo) -> bool:
    """One replica fits the pool's capacity: GPUs in a committed pool, whole machines in a pay-per-use one."""
    if pool.committed:
        return pool.capacity_gpus >= demand.gpu_count
    return pool.capacity_gpus // pool.gpus_per_node >= whole_machines(demand.gpu_count, pool.gpus_per_node)


def _capacity_lines(inventory: Inventory, locator: Locator) -> Callable[[PoolInfo], Location]:
    """Where a pool's capacity is written (its `gpus`, or a cloud pool's `max_gpus`): the line a diagnostic
    about room names too, since that is the line a change to the pool edits (the workload's may be far away)."""
    paths = {(site.name, pool.name): ("sites", s, "pools", p, "gpus" if pool.gpus is not None else "max_gpus")
             for s, site in enumerate(inventory.sites) for p, pool in enumerate(site.pools)}
    return lambda info: locator.location(paths[info.site.name, info.pool.name])


def check_feasibility(inventory: Inventory, locator: Locator, diagnostics: Diagnostics) -> None:
    index = EligibilityIndex(inventory)
    capacity_line = _capacity_lines(inventory, locator)
    workload_index = {w.name: i for i, w in enumerate(inventory.workloads)}
    demand_by_types: dict[tuple[str, ...], int] = defaultdict(int)
    fitting_demands: list[Demand] = []
    egress_rate = egress_rates(inventory.sites)
    fits_of: dict[tuple[int, int], list[PoolInfo]] = {}
    domains_of: dict[int, set[str]] = {}
    costs_of: dict[tuple[object, ...], tuple[float, float]] = {}
    for demand in demands(inventory):
        path = ("workloads", workload_index[demand.workload.name])
        eligible, exclusion = index.explain(demand)
        if exclusion is not None:
            diagnostics.error(f"no-eligible-pool:{exclusion.constraint}",
                              f"workload {demand.key}: no pool is eligible: {exclusion.detail}",
                              locator.location(path), _feasibility_hint(exclusion.constraint))
            continue
        # thousands of near-identical workloads share an eligible list: decide it once per list and size
        # keyed by the list's identity (the index hands one tuple to a whole signature): hashing a
        # hundred pools per demand cost more than the checks
        fit_key = (id(eligible), demand.gpu_count)
        fitting = fits_of.get(fit_key)
        if fitting is None:
            fitting = fits_of[fit_key] = [index.pools[p] for p in eligible if replica_fits(demand, index.pools[p])]
        if not fitting:
            largest = max((index.pools[p] for p in eligible), key=lambda p: p.capacity_gpus)
            diagnostics.error("replica-fits-no-pool", f"workload {demand.key}: a replica needs "
                              f"{demand.gpu_count} GPUs, and no eligible pool holds one (the largest, "
                              f"{largest.name}, holds {largest.capacity_gpus} GPUs"
                              + ("" if largest.committed else f" in machines of {largest.gpus_per_node}") + ")",
                              locator.location((*path, "gpu", "count")),
                              "lower gpu.count, or raise the capacity (gpus / max_gpus) of an eligible pool",
                              related=tuple(capacity_line(index.pools[p]) for p in eligible))
            continue
        demand_by_types[tuple(sorted(demand.gpu_types))] += demand.gpu_count * demand.replicas
        fitting_demands.append(demand)
        required = min(demand.spread, demand.replicas)
        if demand.replicas >= 2 and required >= 2:
            domains = domains_of.get(id(eligible))
            if domains is None:
                domains = domains_of[id(eligible)] = {index.pools[p].domain for p in eligible}
            if len(domains) < required:
                diagnostics.error("spread-unsatisfiable", f"workload {demand.key}: {demand.tier.value} tier with "
                                  f"{demand.replicas} replicas must span {required} failure domains, but its "
                                  f"eligible pools are in {len(domains)} ({', '.join(sorted(domains))})",
                                  locator.location(path), "allow pools in another failure domain (a pool's own "
                                  "failure_domain counts), or lower `spread` / policies.spread_fixed_across")
        ceiling = demand.workload.max_usd_per_month
        if ceiling is not None:
            # per replica and least data movement depend on a handful of facts that twins share
            cost_key = (fit_key, demand.hours, demand.reads(), demand.workload.data_passes_per_month)
            costs = costs_of.get(cost_key)
            if costs is None:
                costs = costs_of[cost_key] = cheapest_parts(demand, fitting, index, egress_rate)
            cheapest = demand.replicas * costs[0] + costs[1]
            if cheapest > ceiling + 0.005:
                diagnostics.error("ceiling-below-cost", f"workload {demand.key}: max_usd_per_month "
                                  f"${ceiling:,.2f} is below its cheapest possible cost, ${cheapest:,.2f} "
                                  f"({demand.replicas} × {demand.gpu_count} GPUs × {demand.hours:g} h at the "
                                  "cheapest eligible price, plus the least data movement)",
                                  locator.location((*path, "max_usd_per_month")),
                                  "raise max_usd_per_month, or lower replicas, gpu.count or hours_per_month")
    _check_budget(inventory, locator, diagnostics, index.pools)
    def where() -> Location:  # read only for a warning: at 100,000 workloads, locating is seconds
        return locator.location(("workloads",)) if inventory.workloads else Location("<inventory>")

    week = build_week(inventory, REFERENCE_WEEK) if any(w.schedule is not None for w in inventory.workloads) else None
    if week is not None and week.timed:
        _warn_week_capacity(diagnostics, where, week_shortfalls(fitting_demands, index.pools, week),
                            _related(index, capacity_line))
    else:
        _warn_capacity(diagnostics, where, index, demand_by_types, _related(index, capacity_line))


def cheapest_parts(demand: Demand, pools: list[PoolInfo], index: EligibilityIndex,
                    egress_rate: dict[str, float]) -> tuple[float, float]:
    """The cheapest replica's amortized compute, and the least data movement."""
    per_replica = min(replica_usd_per_month(demand, p) for p in pools)
    eligible = tuple(p.index for p in pools)
    by_site = egress_usd_by_site(demand, index.pools, eligible, egress_rate)
    least_data = min((by_site.get(p.site.name, 0.0) for p in pools), default=0.0)
    return per_replica, least_data


def _check_budget(inventory: Inventory, locator: Locator, diagnostics: Diagnostics, pools: list[PoolInfo]) -> None:
    budget = inventory.policies.monthly_budget_usd
    if budget is None or inventory.policies.cost_model is not CostModel.CASH:
        return
    committed = committed_total_usd_per_month(pools)
    if committed > budget + 0.005:
        diagnostics.error("budget-below-committed", f"policies.monthly_budget_usd ${budget:,.2f} is below the "
                          f"committed pools' cost, ${committed:,.2f} a month, which is paid whatever runs",
                          locator.location(("policies", "monthly_budget_usd")),
                          "raise the budget (under cost_model: cash it counts owned and reserved capacity), "
                          "or set policies.cost_model: amortized")


def _feasibility_hint(constraint: str) -> str:
    return {
        "sites": "widen the workload's `sites` allow-list",
        "teams": "set the workload's `team` to one a site lists in `teams`, or add that team to a site's `teams`",
        "gpu-type": "add a GPU type to gpu.types, or a pool with one of them",
        "node-shape": "use a pool whose machines hold a whole replica, or set gpu.multi_node: true with a "
                      "gpu.count that is a whole number of machines",
        "capacity-type": "change the tier, set preemptible: true with checkpoint_minutes, or "
                         "policies.allow_on_demand_for_opportunistic",
        "sensitivity": "add an onprem pool (or an edge site with max_sensitivity high enough) with a matching "
                       "GPU type",
        "residency": "add a pool in an allowed jurisdiction, or widen the dataset's residency",
        "latency": "relax latency.p95_ms, or add a pool closer to that region",
    }.get(constraint, "relax the constraint")


def _related(index: EligibilityIndex, capacity_line: Callable[[PoolInfo], Location]
             ) -> Callable[[tuple[str, ...]], tuple[Location, ...]]:
    """A GPU type set's pools' capacity lines, for a warning about that set's room."""
    return lambda types: tuple(capacity_line(p) for p in index.pools if p.pool.gpu in types)


def _warn_week_capacity(diagnostics: Diagnostics, where: Callable[[], Location], shortfalls: list[Shortfall],
                        related: Callable[[tuple[str, ...]], tuple[Location, ...]]) -> None:
    for short in shortfalls:
        label = " or ".join(short.types)
        if short.machines_of:
            message = (f"machine-sized replicas of {label} need {short.need:,.2f} machine-hours in {short.where}, "
                       f"and the {label} pools' machines of {short.machines_of} GPUs left beside the smaller "
                       f"replicas that run the whole segments give {short.capacity:,.2f} (committed pools give a "
                       "gang whole machines); some workloads will stay unplaced")
        else:
            message = (f"demand for {label} ({short.need:,.2f} GPU-hours in {short.where}) exceeds the capacity "
                       f"of {label} pools ({short.capacity:,.2f} GPU-hours); some workloads will stay unplaced")
        diagnostics.warning("demand-exceeds-capacity", message, where(),
                            "add capacity, or accept that the plan lists them as unplaced", related=related(short.types))


def _warn_capacity(diagnostics: Diagnostics, where: Callable[[], Location], index: EligibilityIndex,
                   demand_by_types: dict[tuple[str, ...], int],
                   related: Callable[[tuple[str, ...]], tuple[Location, ...]]) -> None:
    capacity_by_gpu: dict[str, int] = defaultdict(int)
    for pool in index.pools:
        capacity_by_gpu[pool.pool.gpu] += pool.capacity_gpus
    # Demand that can only use a set of types must fit in those types' pools (Hall's condition on type sets).
    for types in sorted(demand_by_types):
        wanted = sum(gpus for other, gpus in demand_by_types.items() if set(other) <= set(types))
        capacity = sum(capacity_by_gpu[t] for t in types)
        if wanted > capacity:
            label = " or ".join(types)
            diagnostics.warning("demand-exceeds-capacity", f"demand for {label} ({wanted:,} GPUs) exceeds the "
                                f"capacity of {label} pools ({capacity:,} GPUs); some workloads will stay unplaced",
                                where(), "add capacity, or accept that the plan lists them as unplaced",
                                related=related(types))
