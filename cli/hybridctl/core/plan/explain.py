"""Why a replica landed where it did, and why one found no pool."""

from __future__ import annotations

from collections.abc import Mapping

from hybridctl.core.inventory.models import CostModel, Inventory, Sensitivity
from hybridctl.core.plan.eligibility import Demand, EligibilityIndex, PoolInfo
from hybridctl.core.plan.pricing.rates import replica_usd_per_month, whole_machines


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
        notes.append(f"{pool.site.latency_ms.get(w.latency.region, 0):g} ms ≤ {w.latency.p95_ms:g} ms to "
                     f"{w.latency.region}")
    if w.sites is not None:
        notes.append("allowed sites only")
    return notes


def has_room(demand: Demand, pool: PoolInfo, used: Mapping[int, int], machines: Mapping[int, int]) -> bool:
    """Room for one more replica: GPUs in a committed pool, whole machines in a pay-per-use one."""
    if pool.committed:
        return pool.capacity_gpus - used.get(pool.index, 0) >= demand.gpu_count
    quota = pool.capacity_gpus // pool.gpus_per_node
    return quota - machines.get(pool.index, 0) >= whole_machines(demand.gpu_count, pool.gpus_per_node)


def placement_reason(demand: Demand, pool: PoolInfo, index: EligibilityIndex, used: Mapping[int, int],
                     inventory: Inventory, machines: Mapping[int, int] | None = None) -> str:
    eligible = [index.pools[p] for p in index.eligible(demand)]
    cheaper = [p for p in eligible if p.usd_per_gpu_hour < pool.usd_per_gpu_hour - 1e-9]
    price = f"${pool.usd_per_gpu_hour:.2f}/GPU-h"
    cash = inventory.policies.cost_model is CostModel.CASH
    if cash and pool.committed and cheaper:
        rank = f"committed capacity, paid for whether used or not ({price} amortized)"
    elif not cheaper:
        rank = f"cheapest of {len(eligible)} eligible pool{'s' * (len(eligible) != 1)} ({price})"
    else:
        full = [p for p in cheaper if not has_room(demand, p, used, machines or {})]
        if len(full) == len(cheaper):
            rank = f"{price}; the {len(cheaper)} cheaper eligible pool{'s are' if len(cheaper) > 1 else ' is'} full"
        else:
            local = {d.site for d in demand.remote_datasets}
            why = ("keeps its data local (no egress)" if pool.site.name in local
                   else "spreads replicas across failure domains" if demand.workload.replicas > 1 else
                   "lower total cost with data movement, ceiling and stability counted")
            rank = f"{price}; {why}"
    return "; ".join([rank, *_constraints(demand, pool)])


def unplaced_reason(demand: Demand, missing: int, index: EligibilityIndex, used: Mapping[int, int],
                    used_by_tier: Mapping[int, Mapping[str, int]], machines: Mapping[int, int] | None = None) -> str:
    eligible, exclusion = index.explain(demand)
    types = " or ".join(demand.gpu_types)
    if exclusion is not None:
        return f"no eligible pool: {exclusion.detail}"
    pools = [index.pools[p] for p in eligible]
    zones = sorted({p.site.jurisdiction for p in pools})
    capacity = sum(p.capacity_gpus for p in pools)
    taken = sum(used.get(p.index, 0) for p in pools)
    free = [p for p in pools if has_room(demand, p, used, machines or {})]
    need = f"needs {missing} × {demand.gpu_count} {types} in {'/'.join(zones)}"
    if free:
        if demand.tier.value == "fixed" and demand.replicas >= 2:
            domains = sorted({p.domain for p in free})
            return (f"{need}; free capacity is only in failure domain{'s' * (len(domains) != 1)} "
                    f"{', '.join(domains)}, and a fixed-tier workload must spread its replicas across domains")
        ceiling = demand.workload.max_usd_per_month
        if ceiling is not None:
            cheapest = min(replica_usd_per_month(demand, p) for p in pools)
            return (f"{need}; capacity is free but the cost ceiling max_usd_per_month ${ceiling:,.0f} is binding "
                    f"(one replica costs at least ${cheapest:,.0f}/month)")
        return f"{need}; capacity is free, but placing it would break another constraint of the plan"
    by_tier: dict[str, int] = {}
    for p in pools:
        for tier, gpus in used_by_tier.get(p.index, {}).items():
            by_tier[tier] = by_tier.get(tier, 0) + gpus
    breakdown = ", ".join(f"{gpus} by {tier}-tier workloads" for tier, gpus in sorted(by_tier.items()))
    rented = [p for p in pools if not p.committed]
    machine_note = (f"; pay-per-use pools count whole machines ({sum(machines.get(p.index, 0) for p in rented)} of "
                    f"{sum(p.capacity_gpus // p.gpus_per_node for p in rented)} in use)") if rented and machines else ""
    return (f"{need}; its {len(pools)} eligible {types} pool{'s' * (len(pools) != 1)} hold {capacity} GPUs, "
            f"of which {taken} are taken" + (f" ({breakdown})" if breakdown else "") + machine_note)
