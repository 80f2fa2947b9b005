"""Each pool's GPUs in use, machines and cash, from the placements (the plan's `pools`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS
from hybridctl.core.plan.model import Placement, PoolUsage, runs_whole_segment
from hybridctl.core.plan.pricing.rates import (
    catalog_price_note,
    committed_pool_usd_per_month,
    is_always_on,
    machine_hours_usd_per_month,
    machines_usd_per_month,
    whole_machines,
)
from hybridctl.core.plan.weekusage import peak_gpus

if TYPE_CHECKING:
    from hybridctl.core.plan.eligibility import PoolInfo


def pool_usage(pools: Sequence[PoolInfo], placements: Iterable[Placement],
               segments: Sequence[float] = ()) -> tuple[PoolUsage, ...]:
    """Each pool's GPUs in use, machines and cash, from the placements.

    A committed pool costs its declared capacity whatever is placed. A pay-per-use pool runs
    ceil(always-on GPUs / GPUs per node) machines all month, and each other replica's own whole
    machines while it runs. In a timed plan (`segments`: the hours of each segment of its week) a
    pay-per-use pool is paid the machine-hours it runs in each segment instead: the replicas that
    run a segment whole share ceil(their GPUs / GPUs per node) machines for its hours, any other
    replica runs its own machines for its hours there (what the planner's objective counts).
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
            machines = pl.replicas * whole_machines(per_replica, info.gpus_per_node)
            own_machines[pl.pool] += machines
            own_usd[pl.pool] += machines_usd_per_month(info, machines, pl.hours_per_month)
    usage: list[PoolUsage] = []
    instances = catalog().instances
    timed = _timed_usd(by_name, placements, segments) if segments else {}
    if segments:  # a timed plan's pools hold at most their capacity in each segment: the peak is what is used
        used = defaultdict(int, peak_gpus(placements, segments))
    for p in pools:
        if p.committed:
            declared = p.pool.gpus if p.pool.gpus is not None else (p.pool.max_gpus or 0)
            machines = whole_machines(declared, p.gpus_per_node)
            shared, usd = 0, committed_pool_usd_per_month(p)
        else:
            shared = whole_machines(always_on_gpus[p.name], p.gpus_per_node)
            machines = shared + own_machines[p.name]
            usd = machines_usd_per_month(p, shared, DEFAULT_REALTIME_HOURS) + own_usd[p.name] if not segments \
                else timed.get(p.name, 0.0)
        usage.append(PoolUsage(p.site.name, p.name, p.pool.gpu, p.pool.capacity_type.value, p.capacity_gpus,
                               used.get(p.name, 0), round(p.usd_per_gpu_hour, 4), p.committed, p.gpus_per_node,
                               machines, shared, round(usd, 2), round(amortized[p.name], 2),
                               catalog_price_note(p.pool, p.site, instances)))
    return tuple(usage)


def _timed_usd(by_name: dict[str, PoolInfo], placements: Iterable[Placement],
               segments: Sequence[float]) -> dict[str, float]:
    """Pay-per-use pool -> its cash in a timed plan: per segment, the shared machines of the replicas that
    run it whole and every other replica's own machines, for the hours they run there."""
    whole: dict[tuple[str, int], int] = defaultdict(int)  # (pool, segment) -> GPUs run the whole segment
    own_hours: dict[str, float] = defaultdict(float)  # pool -> a week's machine-hours of the other replicas
    for pl in placements:
        info = by_name.get(pl.pool)
        if info is None or info.committed or not pl.replicas:
            continue
        own = pl.replicas * whole_machines(pl.gpus_per_replica or pl.gpus // pl.replicas, info.gpus_per_node)
        for s, hours in enumerate(pl.segment_hours):
            if runs_whole_segment(hours, segments[s]):
                whole[(pl.pool, s)] += pl.gpus
            elif hours > 0:
                own_hours[pl.pool] += own * hours
    machine_hours = dict(own_hours)
    for (name, s), gpus in whole.items():
        machine_hours[name] = machine_hours.get(name, 0.0) + whole_machines(gpus, by_name[name].gpus_per_node) * segments[s]
    return {name: machine_hours_usd_per_month(by_name[name], hours) for name, hours in machine_hours.items()}
