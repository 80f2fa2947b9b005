"""The placement MILP of one component, built as sparse arrays a solver can take directly.

Columns: x[u,p] replicas of unit u in pool p (integer); s[u] replicas left unplaced (integer,
priced by a penalty so that everything that fits is placed); y[u,site] how many of u's
workloads have a replica at a site that pays data movement (binary for a single workload);
v[u,domain] whether u uses a failure domain (binary, only for spreads of 3 or more); z[u,p]
replicas moved away from a previous placement (continuous, priced by the move threshold);
m[p] always-on machines of a pay-per-use pool (integer, one per such pool: a few hundred at
most, so the whole-machine rule adds almost nothing to the model's size); t[u,c] merged twins of
3 or more replicas that follow pattern c of replicas per paying site (patterns.py: exact where
the per-site count y is only a relaxation).

Costs under `cost_model: cash` (the default): a committed pool is a constant (left out of the
model), so its replicas cost only the amortized tie-break; always-on replicas in a pay-per-use
pool cost nothing by themselves and the machines m[p] they share are priced; any other replica
in a pay-per-use pool pays its own whole machines. Under `amortized`, every replica costs
gpu.count × hours × usd_per_gpu_hour and m[p] is free. Either way a pay-per-use pool's quota
counts whole machines, and cost ceilings compare the amortized compute plus data movement.
Every price in the model comes from pricing/arrays.py (and a unit's data movement from
pricing/rates.py, through units.py); this module only places them in columns and rows.

Everything is built with numpy over all units at once: at 10,000 workloads a Python loop
per column costs more than the solver.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import numpy.typing as npt

from hybridctl.core.placement.patterns import pattern_rows, wants_patterns
from hybridctl.core.placement.segment_classes import segment_classes
from hybridctl.core.placement.timed_rows import column_times, time_sharing_slots, timed_capacity_rows
from hybridctl.core.placement.units import TIER_WEIGHT, PoolTable, Unit
from hybridctl.core.pricing.arrays import (
    always_on,
    column_costs,
    committed_constant,
    machine_usd_per_month,
)
from hybridctl.core.solver.milp import Builder, Col, FloatArray, IntArray, Model
from hybridctl.core.week.machines import shared_link, whole_machines
from hybridctl.core.week.segments import Week


def penalty_per_replica(unit: Unit, max_price: float) -> float:
    """Dearer than any placement with its data movement (whole machines counted), and dearer for
    higher tiers, so that everything that fits is placed and capacity goes to fixed work first.
    Kept as small as that allows: huge penalties beside small costs slow the MIP down."""
    gpus = max(unit.penalty_gpus, unit.gpu_count)
    return gpus * unit.hours * unit.rework_max * (2.0 * max_price + 1.0) * TIER_WEIGHT[unit.tier] + unit.max_egress


def _groups(keys: IntArray) -> tuple[IntArray, IntArray]:
    """Distinct keys in order, and for each entry the group it falls in."""
    distinct, inverse = np.unique(keys, return_inverse=True)
    return distinct.astype(np.int64), inverse.astype(np.int64).reshape(-1)


def formulate(units: list[Unit], table: PoolTable, ceilings: dict[str, float],
              move_threshold_usd: float, *, cash: bool = True, week: Week | None = None) -> Model:
    b = Builder()
    n_units = len(units)
    gpus = np.array([u.gpu_count for u in units], dtype=np.float64)
    hours = np.array([u.hours for u in units], dtype=np.float64)
    replicas = np.array([u.replicas for u in units], dtype=np.float64)
    member_replicas = np.array([u.member_replicas for u in units], dtype=np.float64)
    members = np.array([len(u.members) for u in units], dtype=np.float64)
    spread = np.array([u.spread for u in units], dtype=np.int64)
    lengths = np.array([len(u.eligible) for u in units], dtype=np.int64)
    xu = np.repeat(np.arange(n_units, dtype=np.int64), lengths)
    xp = np.concatenate([u.pools for u in units]) if units else np.zeros(0, dtype=np.int64)
    egress = np.concatenate([u.egress for u in units]) if units else np.zeros(0)
    x_site = table.site[xp]
    # a preemptible replica on spot runs its hours times its rework factor (pricing): 1 elsewhere
    column_hours = hours[xu]
    if any(u.rework is not None for u in units):
        column_hours = column_hours * np.concatenate(
            [u.rework if u.rework is not None else np.ones(len(u.eligible)) for u in units])
    # a timed week (timed_rows.py): replicas that run their segments whole share a pay-per-use pool's machines
    classes = segment_classes(units, week) if week is not None and week.timed else None
    times = column_times(units, xu, classes.of_unit) if classes is not None else None
    costs = column_costs(gpus[xu], column_hours, xp, table, cash, shared=None if times is None else times.whole)
    # a pool fits at most capacity // gpus replicas (pay-per-use: in whole machines): a tighter
    # bound than the unit's replicas
    per_node = table.per_node[xp].astype(np.float64)
    pay_per_use = ~table.committed[xp]
    shared = pay_per_use & (always_on(hours[xu]) if times is None else times.whole)
    machines_each = whole_machines(gpus[xu], per_node)  # a replica's own machines (week/machines.py)
    quota_machines = np.floor(table.capacity[xp] / per_node)
    slots = np.where(~pay_per_use, np.floor(table.capacity[xp] / gpus[xu]),
                     np.where(shared, np.floor(quota_machines * per_node / gpus[xu]),
                              np.floor(quota_machines / machines_each)))
    if times is not None and classes is not None:
        slots = time_sharing_slots(times, classes.lengths, slots, np.where(pay_per_use, machines_each, gpus[xu]),
                                   np.where(pay_per_use, quota_machines, table.capacity[xp].astype(np.float64)))
    x_upper = np.minimum(replicas[xu], slots)

    # data movement, per (unit, site): paid once per workload with a replica there. Where one
    # workload can have at most one replica at the site, every replica pays: fold it into x.
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    patterned = np.zeros(n_units, dtype=np.bool_)  # twins counted by patterns (patterns.py), not by y
    for u, unit in enumerate(units):
        if len(unit.members) > 1 and unit.member_replicas >= 3 and unit.pays_egress:
            cols = slice(int(offsets[u]), int(offsets[u + 1]))
            patterned[u] = wants_patterns(unit, int(np.unique(x_site[cols][egress[cols] > 0]).size))
    paid = np.flatnonzero((egress > 0) & ~patterned[xu])
    n_sites = max(len(table.site_names), 1)
    site_groups, site_of = _groups(xu[paid] * n_sites + x_site[paid])
    group_unit = site_groups // n_sites
    site_slots = np.bincount(site_of, weights=slots[paid], minlength=site_groups.size)
    link = np.minimum(member_replicas[group_unit], site_slots)
    folded = link[site_of] <= 1
    x_cost = costs.objective.copy()
    x_cost[paid[folded]] += egress[paid[folded]]
    x_ceiling = costs.amortized.copy()  # what cost ceilings compare: amortized compute and data
    x_ceiling[paid[folded]] += egress[paid[folded]]

    x = b.add_columns(x_cost, x_upper, True, Col.PLACE, xu, xp)
    penalty = np.array([penalty_per_replica(u, table.max_price) for u in units], dtype=np.float64)
    s = b.add_columns(penalty, replicas, True, Col.UNPLACED, np.arange(n_units, dtype=np.int64),
                      np.full(n_units, -1, dtype=np.int64))
    unplaced_floor = _ceiling_floor(units, ceilings, x_ceiling, x_upper, lengths, replicas)
    demand = b.add_rows(replicas, replicas)
    b.add_entries(demand + xu, x, np.ones(1))
    b.add_entries(demand + np.arange(n_units, dtype=np.int64), s, np.ones(1))

    # y: one column and one row per (unit, site) that pays and is not folded
    open_groups = np.flatnonzero(link > 1)
    if open_groups.size:
        first_col = np.full(site_groups.size, -1, dtype=np.int64)
        first_col[site_of[::-1]] = paid[::-1]  # any column of the group gives its site's egress
        y_unit = group_unit[open_groups]
        y_cost = egress[first_col[open_groups]]
        y = b.add_columns(y_cost, members[y_unit], True, Col.SITE, y_unit, site_groups[open_groups] % n_sites)
        row_of_group = np.full(site_groups.size, -1, dtype=np.int64)
        first = b.add_rows(np.full(open_groups.size, -np.inf), np.zeros(open_groups.size))
        row_of_group[open_groups] = first + np.arange(open_groups.size)
        linked = row_of_group[site_of] >= 0
        b.add_entries(row_of_group[site_of[linked]], x[paid[linked]], np.ones(1))
        b.add_entries(row_of_group[open_groups], y, -link[open_groups])
    else:
        y = np.zeros(0, dtype=np.int64)
        y_unit = np.zeros(0, dtype=np.int64)
        y_cost = np.zeros(0)

    patterns = pattern_rows(b, np.flatnonzero(patterned), offsets, x, x_site, egress, members, member_replicas)
    _spread_rows(b, table, x, s, xu, xp, spread, members, member_replicas)
    _previous_rows(b, units, x, lengths, move_threshold_usd)

    if times is not None and classes is not None:
        timed_capacity_rows(b, x, xu, xp, gpus[xu], x_upper, table, pay_per_use, machines_each, times, classes.lengths,
                            n_units, cash)
    else:
        _capacity_rows(b, x, xp, gpus[xu], table, pay_per_use, shared, machines_each, n_units, cash)

    groups = sorted({u.ceiling_group for u in units if u.ceiling_group is not None})
    if groups:
        group_id = {g: i for i, g in enumerate(groups)}
        unit_group = np.array([group_id.get(u.ceiling_group or "", -1) if u.ceiling_group else -1
                               for u in units], dtype=np.int64)
        first = b.add_rows(np.full(len(groups), -np.inf), np.array([ceilings[g] for g in groups]))
        capped = unit_group[xu] >= 0
        b.add_entries(first + unit_group[xu[capped]], x[capped], x_ceiling[capped])
        capped_y = unit_group[y_unit] >= 0
        b.add_entries(first + unit_group[y_unit[capped_y]], y[capped_y], y_cost[capped_y])
    committed = np.unique(xp[~pay_per_use])
    offset = committed_constant(table, committed, cash)
    model = b.build(n_units, offset, patterns)
    model.lower[s] = unplaced_floor
    # the month's total counts every column's price (machines, data movement) but these, which are no money
    spend = model.cost.copy()
    spend[x] = costs.spend
    spend[x[paid[folded]]] += egress[paid[folded]]
    spend[s] = 0.0
    spend[model.kind == Col.MOVED] = 0.0
    return replace(model, spend=spend)


def _ceiling_floor(units: list[Unit], ceilings: dict[str, float], x_cost: FloatArray, x_upper: FloatArray,
                   lengths: IntArray, replicas: FloatArray) -> FloatArray:
    """Replicas a cost ceiling leaves unplaced for certain: more than k replicas cannot fit when the
    k + 1 cheapest already cost more than the ceiling. As a bound on the unplaced column this is
    exact for integers, and it keeps the LP from placing 1.2 replicas where only one fits."""
    floor = np.zeros(len(units))
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for u, unit in enumerate(units):
        if unit.ceiling_group is None:
            continue
        cols = slice(int(offsets[u]), int(offsets[u + 1]))
        order = np.argsort(x_cost[cols], kind="stable")
        cheapest = np.repeat(x_cost[cols][order], x_upper[cols][order].astype(np.int64))[: unit.replicas]
        fits = int(np.count_nonzero(np.cumsum(cheapest) <= ceilings[unit.ceiling_group] + 1e-6))
        floor[u] = replicas[u] - fits
    return floor


def _spread_rows(b: Builder, table: PoolTable, x: IntArray, s: IntArray, xu: IntArray, xp: IntArray,
                 spread: IntArray, members: FloatArray, member_replicas: FloatArray) -> None:
    """No failure domain may hold more than R - (k - 1) of a workload's replicas (n(R - 1) for n
    merged twins with k = 2): for k = 2 this alone is exact; k >= 3 also counts domains used,
    which the spec asks of a workload only when all its replicas are placed."""
    spread_cols = np.flatnonzero(spread[xu] > 1)
    if not spread_cols.size:
        return
    n_domains = max(len(table.domain_names), 1)
    domain_groups, domain_of = _groups(xu[spread_cols] * n_domains + table.domain[xp[spread_cols]])
    group_unit = domain_groups // n_domains
    cap = members[group_unit] * (member_replicas[group_unit] - spread[group_unit] + 1)
    first = b.add_rows(np.full(domain_groups.size, -np.inf), cap)
    b.add_entries(first + domain_of, x[spread_cols], np.ones(1))
    wide = np.flatnonzero(spread[group_unit] > 2)
    if not wide.size:
        return
    v_unit = group_unit[wide]
    v = b.add_columns(np.zeros(wide.size), np.ones(wide.size), True, Col.DOMAIN, v_unit,
                      domain_groups[wide] % n_domains)
    # v[d] <= replicas in d: a domain counts only when it is used
    row_of_group = np.full(domain_groups.size, -1, dtype=np.int64)
    first = b.add_rows(np.zeros(wide.size), np.full(wide.size, np.inf))
    row_of_group[wide] = first + np.arange(wide.size)
    counted = row_of_group[domain_of] >= 0
    b.add_entries(row_of_group[domain_of[counted]], x[spread_cols[counted]], np.ones(1))
    b.add_entries(row_of_group[wide], v, -np.ones(1))
    # sum(v) + k * unplaced >= k: k domains, unless a replica is left unplaced
    wide_units, unit_of_v = _groups(v_unit)
    first = b.add_rows(spread[wide_units].astype(np.float64), np.full(wide_units.size, np.inf))
    b.add_entries(first + unit_of_v, v, np.ones(1))
    b.add_entries(first + np.arange(wide_units.size, dtype=np.int64), s[wide_units],
                  spread[wide_units].astype(np.float64))


def _previous_rows(b: Builder, units: list[Unit], x: IntArray, lengths: IntArray, move_threshold_usd: float) -> None:
    """z[u,p] >= before - x[u,p]: replicas moved away from where the previous plan had them."""
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    cols: list[int] = []
    owners: list[int] = []
    pools: list[int] = []
    before: list[float] = []
    for u, unit in enumerate(units):
        if not unit.previous:
            continue
        position = {p: i for i, p in enumerate(unit.eligible)}
        for p, n in sorted(unit.previous.items()):
            cols.append(int(x[offsets[u] + position[p]]))
            owners.append(u)
            pools.append(p)
            before.append(float(n))
    if not cols:
        return
    count = len(cols)
    z = b.add_columns(np.full(count, move_threshold_usd), np.array(before), False, Col.MOVED,
                      np.array(owners, dtype=np.int64), np.array(pools, dtype=np.int64))
    first = b.add_rows(np.array(before), np.full(count, np.inf))
    rows = first + np.arange(count, dtype=np.int64)
    b.add_entries(rows, np.array(cols, dtype=np.int64), np.ones(1))
    b.add_entries(rows, z, np.ones(1))


def _capacity_rows(b: Builder, x: IntArray, xp: IntArray, gpus: FloatArray, table: PoolTable,
                   pay_per_use: npt.NDArray[np.bool_], shared: npt.NDArray[np.bool_], machines_each: FloatArray,
                   n_units: int, cash: bool) -> None:
    """A committed pool counts GPUs. A pay-per-use pool counts whole machines: its always-on
    machines m[p] (which must hold the always-on replicas' GPUs) plus every other replica's own."""
    committed = np.flatnonzero(~pay_per_use)
    if committed.size:
        pools, pool_of = _groups(xp[committed])
        first = b.add_rows(np.full(pools.size, -np.inf), table.capacity[pools].astype(np.float64))
        b.add_entries(first + pool_of, x[committed], gpus[committed])
        _rounding_rows(b, x[committed], xp[committed], gpus[committed], table)
    rented = np.flatnonzero(pay_per_use)
    if not rented.size:
        return
    pools, pool_of = _groups(xp[rented])
    quota = np.floor(table.capacity[pools] / table.per_node[pools])
    capacity_row = b.add_rows(np.full(pools.size, -np.inf), quota.astype(np.float64))
    own = ~shared[rented]
    b.add_entries(capacity_row + pool_of[own], x[rented[own]], machines_each[rented[own]])
    sharing = np.flatnonzero(shared[rented])
    if not sharing.size:
        return
    machine_pools, machine_of = _groups(pool_of[sharing])  # indices into `pools`
    m = b.add_columns(machine_usd_per_month(table, pools[machine_pools], cash), quota[machine_pools], True,
                      Col.MACHINES, np.full(machine_pools.size, n_units, dtype=np.int64), pools[machine_pools])
    b.add_entries(capacity_row + machine_pools, m, np.ones(1))
    # the always-on replicas' GPUs fit in the machines: sum(g x) - per_node m <= 0, m whole (week/machines.py)
    link = b.add_rows(np.full(machine_pools.size, -np.inf), np.zeros(machine_pools.size))
    b.add_entries(link + machine_of, x[rented[sharing]], gpus[rented[sharing]])
    b.add_entries(link + np.arange(machine_pools.size, dtype=np.int64), m,
                  shared_link(table.per_node[pools[machine_pools]].astype(np.float64)))


def _rounding_rows(b: Builder, x: IntArray, xp: IntArray, gpus: FloatArray, table: PoolTable) -> None:
    """Capacity rows divided by a replica size and rounded down (Chvátal-Gomory): sum over units
    of floor(g/k) x <= floor(capacity/k). Valid for whole replicas, and they stop the LP bound
    from filling a pool with fractions of 8-GPU replicas, which is most of its gap."""
    for k in sorted({int(g) for g in np.unique(gpus).tolist() if g > 1}):
        weight = np.floor(gpus / k)
        keep = np.flatnonzero(weight > 0)
        if not keep.size:
            continue
        pools, pool_of = _groups(xp[keep])
        cap = np.floor(table.capacity[pools] / k)
        # only where rounding bites: the pool also hosts smaller replicas or is not a multiple of k
        first = b.add_rows(np.full(pools.size, -np.inf), cap.astype(np.float64))
        b.add_entries(first + pool_of, x[keep], weight[keep])
