"""Why a replica landed where it did, and why one found no pool."""

from __future__ import annotations

from collections.abc import Mapping

from hybridctl.core.inventory.models import CostModel, Inventory, Sensitivity
from hybridctl.core.inventory.schedule import HOURS_PER_MONTH, HOURS_PER_WEEK
from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo
from hybridctl.core.placement.tiers import TIER_ORDER, Tier
from hybridctl.core.pricing.rates import (
    egress_rates,
    egress_usd_by_site,
    machines_usd_per_month,
    rate_text,
    replica_hours,
    replica_usd_per_month,
    whole_machines,
)
from hybridctl.core.week.machines import machine_sized, own_machines


def _constraints(demand: Demand, pool: PoolInfo) -> list[str]:
    w = demand.workload
    notes: list[str] = []
    if demand.pinned_site:
        notes.append("federated: trains where its data lives")
    if any(d.sensitivity is Sensitivity.RESTRICTED for d in demand.checked_datasets):
        notes.append("restricted data stays on premises")
    zones = sorted({z for d in demand.checked_datasets for z in (d.residency or [])})
    if zones:
        notes.append(f"residency {'/'.join(zones)}")
    if w.latency is not None:
        measured = pool.site.latency_ms.get(w.latency.region)
        notes.append(f"latency to {w.latency.region} unmeasured at {pool.site.name}" if measured is None else
                     f"{measured:g} ms ≤ {w.latency.p95_ms:g} ms to {w.latency.region}")
    if w.sites is not None:
        notes.append("allowed sites only")
    return notes


def has_room(demand: Demand, pool: PoolInfo, used: Mapping[int, int], machines: Mapping[int, int]) -> bool:
    """Room for one more replica: GPUs in a committed pool, whole machines in a pay-per-use one."""
    if pool.committed:
        return pool.capacity_gpus - used.get(pool.index, 0) >= demand.gpu_count
    quota = pool.capacity_gpus // pool.gpus_per_node
    return quota - machines.get(pool.index, 0) >= whole_machines(demand.gpu_count, pool.gpus_per_node)


# pool index -> workload -> GPUs it holds there, as placed by the solver
Holders = Mapping[int, Mapping[str, int]]
HOLDERS_NAMED = 3  # the biggest holders of a pool named in a reason, the rest counted


def _held_by(pool: PoolInfo, holders: Holders) -> str:
    """Who holds a pool's GPUs: "er-triage 2, billing-coder 1", and the work kept where it runs."""
    held = sorted(holders.get(pool.index, {}).items(), key=lambda item: (-item[1], item[0]))
    named = [f"{name} ({gpus})" for name, gpus in held[:HOLDERS_NAMED]]
    if len(held) > HOLDERS_NAMED:
        named.append(f"{len(held) - HOLDERS_NAMED} more workloads ({sum(g for _, g in held[HOLDERS_NAMED:])})")
    if pool.held_gpus:
        named.append(f"work kept where it runs ({pool.held_gpus})")
    return ", ".join(named) if named else "no workload"


def why_not_there(demand: Demand, pool: PoolInfo, used: Mapping[int, int], machines: Mapping[int, int],
                  holders: Holders) -> str:
    """Why one more replica does not go to a pool without room for it: too small for one replica even
    empty, full, or with room left that is too little; and who holds what is taken."""
    need = demand.gpu_count
    if pool.committed:
        capacity = pool.capacity_gpus + pool.held_gpus
        free = pool.capacity_gpus - used.get(pool.index, 0)
        if capacity < need:
            return f"{pool.name} is too small: {capacity} GPUs in all, one replica needs {need}"
        if free <= 0:
            return f"{pool.name} is full: its {capacity} GPUs are held by {_held_by(pool, holders)}"
        return (f"{pool.name} has {free} of its {capacity} GPUs free, one replica needs {need}; the {capacity - free} "
                f"others are held by {_held_by(pool, holders)}")
    per_node = pool.gpus_per_node
    quota = (pool.capacity_gpus + pool.held_gpus) // per_node
    machines_needed = whole_machines(need, per_node)
    if quota < machines_needed:
        return (f"{pool.name} is too small: a quota of {quota} machine{'s' * (quota != 1)} of {per_node} GPUs, "
                f"one replica needs {machines_needed}")
    in_use = machines.get(pool.index, 0) + pool.held_gpus // per_node
    free_machines = quota - in_use
    if free_machines <= 0:
        return (f"{pool.name} is full: all {quota} machines of its quota are in use, their GPUs held by "
                f"{_held_by(pool, holders)}")
    return (f"{pool.name} has {free_machines} of its {quota} machines free, one replica needs {machines_needed}; "
            f"the GPUs in use are held by {_held_by(pool, holders)}")


def placement_reason(demand: Demand, pool: PoolInfo, index: EligibilityIndex, used: Mapping[int, int],
                     inventory: Inventory, machines: Mapping[int, int] | None = None,
                     holders: Holders | None = None, used_by_tier: Mapping[int, Mapping[str, int]] | None = None,
                     tier_of: Mapping[str, str] | None = None) -> str:
    """`used_by_tier` and `tier_of` (workload -> tier), where given, leave out of what a cheaper pool holds the
    work that never moves this replica (spec, "Tier priority"): opportunistic work runs in what the fixed and
    burst tiers leave, so it is never why one of theirs runs elsewhere (a burst run may be: it must run too)."""
    eligible = [index.pools[p] for p in index.eligible(demand)]
    cheaper = [p for p in eligible if p.usd_per_gpu_hour < pool.usd_per_gpu_hour - 1e-9]
    if demand.tier is not Tier.OPPORTUNISTIC and used_by_tier is not None and tier_of is not None:
        given = frozenset({Tier.OPPORTUNISTIC.value})
        used, machines = _room_ahead(cheaper, used, used_by_tier, machines or {}, given)
        holders = {p.index: {name: gpus for name, gpus in (holders or {}).get(p.index, {}).items()
                             if tier_of.get(name) not in given} for p in cheaper}
    price = f"${rate_text(pool.usd_per_gpu_hour)}/GPU-h"
    cash = inventory.policies.cost_model is CostModel.CASH
    if cash and pool.committed and cheaper:
        rank = f"committed capacity, paid for whether used or not ({price} amortized)"
    elif not cheaper:
        rank = f"cheapest of {len(eligible)} eligible pool{'s' * (len(eligible) != 1)} ({price})"
    else:
        blocked = [p for p in cheaper if not has_room(demand, p, used, machines or {})]
        if len(blocked) == len(cheaper):
            # each cheaper pool in the words of what the solver saw there, the cheapest first
            blocked.sort(key=lambda p: (p.usd_per_gpu_hour, p.name))
            told = [why_not_there(demand, p, used, machines or {}, holders or {}) for p in blocked[:2]]
            if len(blocked) > 2:
                told.append(f"{len(blocked) - 2} more cheaper pool{'s' * (len(blocked) != 3)} without room")
            rank = "; ".join([price, *told])
        else:
            local = {d.site for d in demand.remote_datasets}
            why = ("keeps its data local (no egress)" if pool.site.name in local
                   else "spreads replicas across failure domains" if demand.workload.replicas > 1 else
                   "lower total cost with data movement, ceiling and stability counted")
            rank = f"{price}; {why}"
    return "; ".join([rank, *_constraints(demand, pool)])


def _lower_tiers(demand: Demand) -> frozenset[str]:
    rank = TIER_ORDER.index(demand.tier)
    return frozenset(t.value for t in TIER_ORDER[rank + 1:])


def _gang_note(demand: Demand, pools: list[PoolInfo], lower: frozenset[str],
               gang_machines: Mapping[int, tuple[int, Mapping[str, float]]]) -> tuple[set[int], str]:
    """The committed pools whose whole machines a machine-sized replica does not find (week/machines.py: beside
    the smaller whole-segment replicas, the machines other machine-sized replicas of its tier or above hold over
    the segment with the least room), and the words that say so."""
    w = demand.workload
    window = w.schedule.window_hours if w.schedule is not None else HOURS_PER_WEEK
    share = min(1.0, demand.hours * HOURS_PER_WEEK / HOURS_PER_MONTH / window)  # of its window, on average
    blocked: set[int] = set()
    told: list[str] = []
    for p in pools:
        if not p.committed or p.index not in gang_machines or not machine_sized(demand.gpu_count, p.gpus_per_node):
            continue
        left, by_tier = gang_machines[p.index]
        held = sum(m for tier, m in by_tier.items() if tier not in lower)
        need = whole_machines(demand.gpu_count, p.gpus_per_node)
        if left - held < need * share - 1e-9:
            blocked.add(p.index)
            told.append(f"{p.name} leaves {left} machine{'s' * (left != 1)} beside its smaller whole-segment "
                        f"replicas, {held:.2f} held by other machine-sized ones")
    if not told:
        return blocked, ""
    return blocked, (f"; on committed pools a replica of {demand.gpu_count} GPUs runs on whole machines of its own "
                     f"({need * share:.2f} on average over its window): " + "; ".join(told[:HOLDERS_NAMED]))


def _room_ahead(pools: list[PoolInfo], used: Mapping[int, int], used_by_tier: Mapping[int, Mapping[str, int]],
                machines: Mapping[int, int], given: frozenset[str]) -> tuple[dict[int, int], dict[int, int]]:
    """Each pool's GPUs and machines in use, less what the `given` tiers hold there (which gives way)."""
    given_way = {p.index: sum(g for t, g in used_by_tier.get(p.index, {}).items() if t in given) for p in pools}
    return ({p.index: used.get(p.index, 0) - given_way[p.index] for p in pools},
            {p.index: machines.get(p.index, 0) - given_way[p.index] // p.gpus_per_node for p in pools})


def unplaced_reason(demand: Demand, missing: int, index: EligibilityIndex, used: Mapping[int, int],
                    used_by_tier: Mapping[int, Mapping[str, int]], machines: Mapping[int, int] | None = None,
                    gang_machines: Mapping[int, tuple[int, Mapping[str, float]]] | None = None) -> str:
    eligible, exclusion = index.explain(demand)
    types = " or ".join(demand.gpu_types)
    if exclusion is not None:
        return f"no eligible pool: {exclusion.detail}"
    pools = [index.pools[p] for p in eligible]
    zones = sorted({p.site.jurisdiction for p in pools})
    # a failover's planner sees what its pools have left: the work kept where it runs holds the rest
    held = sum(p.held_gpus for p in pools)
    capacity = sum(p.capacity_gpus for p in pools) + held
    # what lower tiers hold gives way to this replica (spec, "Tier priority"): it is never the reason
    lower = _lower_tiers(demand)
    used_ahead, machines_ahead = _room_ahead(pools, used, used_by_tier, machines or {}, lower)
    taken = sum(used_ahead.values()) + held
    gangs_blocked, gang_note = _gang_note(demand, pools, lower, gang_machines or {})
    free = [p for p in pools if has_room(demand, p, used_ahead, machines_ahead) and p.index not in gangs_blocked]
    need = f"needs {missing} × {demand.gpu_count} {types} in {'/'.join(zones)}"
    if free:
        ceiling = demand.workload.max_usd_per_month
        cheapest = min(replica_usd_per_month(demand, p) for p in pools)
        # the replicas placed plus this one cost at least this much: over the ceiling, it is the ceiling
        if ceiling is not None and (demand.replicas - missing + 1) * cheapest > ceiling + 0.005:
            return (f"{need}; capacity is free but the cost ceiling max_usd_per_month ${ceiling:,.0f} is binding "
                    f"(one replica costs at least ${cheapest:,.0f}/month)")
        domains = sorted({p.domain for p in free})
        if min(demand.spread, demand.replicas) > 1 and len(domains) < min(demand.spread, demand.replicas):
            return (f"{need}; free capacity is only in failure domain{'s' * (len(domains) != 1)} "
                    f"{', '.join(domains)}, and the workload must spread its replicas across "
                    f"{min(demand.spread, demand.replicas)} domains")
        if ceiling is not None:
            return (f"{need}; capacity is free but the cost ceiling max_usd_per_month ${ceiling:,.0f} is binding "
                    f"(one replica costs at least ${cheapest:,.0f}/month)")
        return f"{need}; capacity is free, but placing it would break another constraint of the plan"
    by_tier: dict[str, int] = {}
    for p in pools:
        for tier, gpus in used_by_tier.get(p.index, {}).items():
            if tier not in lower:
                by_tier[tier] = by_tier.get(tier, 0) + gpus
    breakdown = ", ".join([*(f"{gpus} by {tier}-tier workloads" for tier, gpus in sorted(by_tier.items())),
                           *([f"{held} by work kept where it runs"] if held else [])])
    rented = [p for p in pools if not p.committed]
    machine_note = (f"; pay-per-use pools count whole machines ({sum(machines_ahead[p.index] for p in rented)} of "
                    f"{sum(p.capacity_gpus // p.gpus_per_node for p in rented)} in use)") if rented and machines else ""
    listed = f" ({', '.join(p.name for p in pools)})" if len(pools) <= HOLDERS_NAMED else ""
    named = f"its {len(pools)} eligible {types} pool{'s' * (len(pools) != 1)}{listed}"
    if capacity == 0:  # capacity the event took: the replan says which
        return f"{need}; {named} {'have' if len(pools) != 1 else 'has'} no GPUs left"
    return (f"{need}; {named} {'hold' if len(pools) != 1 else 'holds'} {capacity} GPUs, "
            f"of which {taken} are taken" + (f" ({breakdown})" if breakdown else "") + machine_note + gang_note)


def budget_reason(demand: Demand, shed: int, index: EligibilityIndex, inventory: Inventory,
                  used: Mapping[int, int], machines: Mapping[int, int]) -> str:
    """Why `shed` replicas that a plan without the budget places are left out (policies.budget_action: shed),
    and the cash they would have cost: a replica's own machines for its hours (nothing on a committed pool)
    plus its data movement, at the cheapest pool it may use, among those with room first."""
    eligible = [index.pools[p] for p in index.eligible(demand)]
    egress = egress_usd_by_site(demand, index.pools, tuple(index.eligible(demand)), egress_rates(inventory.sites))

    def cash(pool: PoolInfo) -> float:
        own = 0.0 if pool.committed else machines_usd_per_month(
            pool, own_machines(1, demand.gpu_count, pool.gpus_per_node), replica_hours(demand, pool))
        return own + egress.get(pool.site.name, 0.0)

    roomy = [p for p in eligible if has_room(demand, p, used, machines)]
    cheapest = min(roomy or eligible, key=lambda p: (cash(p), p.name))
    each = cash(cheapest)
    budget = inventory.policies.monthly_budget_usd or 0.0
    parts = "its own machines" if not cheapest.committed else "committed capacity"
    if egress.get(cheapest.site.name):
        parts += f" + data movement ${egress[cheapest.site.name]:,.2f}"
    types = " or ".join(demand.gpu_types)
    among = "with room" if roomy else "it may use"
    return (f"budget: {shed} × {demand.gpu_count} {types} left out to keep within the monthly budget of "
            f"${budget:,.2f} (policies.budget_action: shed); they would have cost ${shed * each:,.2f}/month of cash "
            f"(${each:,.2f} a replica at {cheapest.name}, the cheapest pool {among}: {parts})")
