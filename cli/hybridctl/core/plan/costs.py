"""Monthly costs by the spec: pools (committed constants, pay-per-use whole machines), and data
movement once per site that holds no copy."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Sequence

from hybridctl.core.eligibility import (
    Demand,
    PoolInfo,
    cheapest_holder,
    is_always_on,
    machines_per_replica,
    read_usd_per_gb,
)
from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS, Inventory
from hybridctl.core.jsontext import dumps_canonical_ascii
from hybridctl.core.plan.model import DataMovement, Placement, PoolUsage


def inventory_digest(inventory: Inventory) -> str:
    """A digest of what the inventory means, not how it is written: comments and layout don't count."""
    canonical = dumps_canonical_ascii(inventory.model_dump(mode="json"))  # json.dumps' bytes, sorted, compact
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def data_movements(inventory: Inventory, demands: Iterable[Demand], placements: Iterable[Placement]) -> list[DataMovement]:
    """Each dataset read by a workload from another site is paid once per site it has replicas at."""
    egress = {s.name: s.egress_usd_per_gb for s in inventory.sites}
    # each dataset is read from the cheapest holder; a site holding a copy reads it for free
    sites_of: dict[str, set[str]] = {}
    for placement in placements:
        if placement.replicas > 0:
            sites_of.setdefault(placement.demand or placement.workload, set()).add(placement.site)
    movements: list[DataMovement] = []
    for demand in demands:
        passes = demand.workload.data_passes_per_month
        for site in sorted(sites_of.get(demand.key, ())):
            for dataset in demand.remote_datasets:
                if site in dataset.holders:
                    continue
                gb = dataset.size_gb * passes
                if gb <= 0:
                    continue
                movements.append(DataMovement(demand.workload.name, dataset.name, cheapest_holder(dataset, egress),
                                              site, round(gb, 3), round(gb * read_usd_per_gb(dataset, site, egress), 2)))
    return sorted(movements, key=lambda m: (m.workload, m.dataset, m.to_site))


def pool_usage(pools: Sequence[PoolInfo], placements: Iterable[Placement]) -> tuple[PoolUsage, ...]:
    """Each pool's GPUs in use, machines and cash, from the placements.

    A committed pool costs its declared capacity whatever is placed. A pay-per-use pool runs
    ceil(always-on GPUs / GPUs per node) machines all month, and each other replica's own whole
    machines while it runs.
    """
    used: dict[str, int] = defaultdict(int)
    always_on_gpus: dict[str, int] = defaultdict(int)
    own_machines: dict[str, int] = defaultdict(int)
    own_usd: dict[str, float] = defaultdict(float)
    amortized: dict[str, float] = defaultdict(float)
    by_name = {p.name: p for p in pools}
    for pl in placements:
        info = by_name.get(pl.pool)
        if info is None:
            continue
        used[pl.pool] += pl.gpus
        amortized[pl.pool] += pl.usd_per_month
        per_replica = pl.gpus_per_replica or (pl.gpus // pl.replicas if pl.replicas else 0)
        if is_always_on(pl.hours_per_month):
            always_on_gpus[pl.pool] += pl.gpus
        else:
            machines = pl.replicas * machines_per_replica(per_replica, info.gpus_per_node)
            own_machines[pl.pool] += machines
            own_usd[pl.pool] += machines * info.gpus_per_node * pl.hours_per_month * info.usd_per_gpu_hour
    usage: list[PoolUsage] = []
    for p in pools:
        if p.committed:
            declared = p.pool.gpus if p.pool.gpus is not None else (p.pool.max_gpus or 0)
            machines = -(-declared // p.gpus_per_node)
            shared, usd = 0, p.committed_usd_per_month
        else:
            shared = -(-always_on_gpus[p.name] // p.gpus_per_node)
            machines = shared + own_machines[p.name]
            usd = shared * p.gpus_per_node * DEFAULT_REALTIME_HOURS * p.usd_per_gpu_hour + own_usd[p.name]
        usage.append(PoolUsage(p.site.name, p.name, p.pool.gpu, p.pool.capacity_type.value, p.capacity_gpus,
                               used.get(p.name, 0), round(p.usd_per_gpu_hour, 4), p.committed, p.gpus_per_node,
                               machines, shared, round(usd, 2), round(amortized[p.name], 2)))
    return tuple(usage)
