"""Each pool's GPUs in use, machines and cash, from the placements (the plan's `pools`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS
from hybridctl.core.plan.model import Placement, PoolUsage
from hybridctl.core.pricing.rates import (
    catalog_price_note,
    committed_pool_usd_per_month,
    is_always_on,
    machine_hours_usd_per_month,
    machines_usd_per_month,
    whole_machines,
)
from hybridctl.core.week.machines import gpus_per_replica
from hybridctl.core.week.machines import own_machines as count_own_machines
from hybridctl.core.week.usage import machine_weeks, peak_gpus

if TYPE_CHECKING:
    from hybridctl.core.placement.eligibility import PoolInfo


def pool_usage(pools: Sequence[PoolInfo], placements: Iterable[Placement],
               segments: Sequence[float] = ()) -> tuple[PoolUsage, ...]:
    """Each pool's GPUs in use, machines and cash, from the placements.

    A committed pool costs its declared capacity whatever is placed. A pay-per-use pool runs
    ceil(always-on GPUs / GPUs per node) machines all month, and each other replica's own whole
    machines while it runs. In a timed plan (`segments`: the hours of each segment of its week) a
    pay-per-use pool is paid the machine-hours it runs in each segment instead: the replicas that
    run a segment whole share ceil(their GPUs / GPUs per node) machines for its hours, any other
    replica runs its own machines for its hours there (what the planner's objective counts); its
    machines are the most a segment runs, its always-on machines the fewest (weekusage.machine_weeks).
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
        if segments:  # a timed plan's machines and cash are its week's (below)
            continue
        if is_always_on(pl.hours_per_month):
            always_on_gpus[pl.pool] += pl.gpus
        else:
            machines = count_own_machines(pl.replicas, gpus_per_replica(pl), info.gpus_per_node)
            own_machines[pl.pool] += machines
            own_usd[pl.pool] += machines_usd_per_month(info, machines, pl.hours_per_month)
    usage: list[PoolUsage] = []
    instances = catalog().instances
    weeks = machine_weeks(placements, segments, {n: i.gpus_per_node for n, i in by_name.items() if not i.committed}) \
        if segments else {}
    if segments:  # a timed plan's pools hold at most their capacity in each segment: the peak is what is used
        used = defaultdict(int, peak_gpus(placements, segments))
    for p in pools:
        if p.committed:
            declared = p.pool.gpus if p.pool.gpus is not None else (p.pool.max_gpus or 0)
            machines = whole_machines(declared, p.gpus_per_node)
            shared, usd = 0, committed_pool_usd_per_month(p)
        elif segments:  # the week's machines (weekusage.machine_weeks), as its cash counts them
            week = weeks.get(p.name)
            machines, shared = (week.peak, week.always_on) if week else (0, 0)
            usd = machine_hours_usd_per_month(p, week.machine_hours) if week else 0.0
        else:
            shared = whole_machines(always_on_gpus[p.name], p.gpus_per_node)
            machines = shared + own_machines[p.name]
            usd = machines_usd_per_month(p, shared, DEFAULT_REALTIME_HOURS) + own_usd[p.name]
        usage.append(PoolUsage(p.site.name, p.name, p.pool.gpu, p.pool.capacity_type.value, p.capacity_gpus,
                               used.get(p.name, 0), round(p.usd_per_gpu_hour, 4), p.committed, p.gpus_per_node,
                               machines, shared, round(usd, 2), round(amortized[p.name], 2),
                               catalog_price_note(p.pool, p.site, instances)))
    return tuple(usage)
