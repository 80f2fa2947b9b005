"""What the placement and unplaced reasons (explain.py) count of each pool: GPUs taken, by tier, and whole
machines in use. An untimed plan counts its placements over the month; a timed one its busiest segment, since work
that takes turns on the same GPUs (a nightly batch, a daytime service) is never all there at once: summed over the
week, a pool read "holds 8 GPUs, of which 12 are taken", and a rented pool "2 of 1 machines in use". A timed plan's
committed pools also count the whole machines of their machine-sized replicas (week/machines.py), in the segment
where those have the least room left."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hybridctl.core.placement.eligibility import Demand, PoolInfo
from hybridctl.core.plan.model import Placement
from hybridctl.core.pricing.rates import is_always_on, whole_machines
from hybridctl.core.week.machines import machine_sized, machines_for_gangs
from hybridctl.core.week.usage import machine_weeks


@dataclass(frozen=True)
class PoolTallies:
    used: dict[int, int]  # pool index -> GPUs taken
    used_by_tier: dict[int, dict[str, int]]  # pool index -> tier -> GPUs taken
    machines: dict[int, int]  # pay-per-use pool index -> whole machines in use
    # committed pool index -> (machines left for machine-sized replicas, tier -> machines they hold) in the
    # segment where they have the least room: timed plans only
    gang_machines: dict[int, tuple[int, dict[str, float]]] = field(default_factory=dict)


def pool_tallies(assigned: Sequence[tuple[Demand, int, int]], pools: Sequence[PoolInfo],
                 segment_hours: Mapping[tuple[str, int], tuple[float, ...]], lengths: Sequence[float]) -> PoolTallies:
    """`assigned`: (demand, pool index, replicas); `lengths`: the hours of a timed plan's segments (empty: untimed)."""
    return _busiest_segment(assigned, pools, segment_hours, lengths) if lengths else _month(assigned, pools)


def _month(assigned: Sequence[tuple[Demand, int, int]], pools: Sequence[PoolInfo]) -> PoolTallies:
    used: dict[int, int] = defaultdict(int)
    used_by_tier: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    machines: dict[int, int] = defaultdict(int)
    always_on_gpus: dict[int, int] = defaultdict(int)
    for demand, p, n in assigned:
        used[p] += n * demand.gpu_count
        used_by_tier[p][demand.tier.value] += n * demand.gpu_count
        if not pools[p].committed:
            if is_always_on(demand.hours):
                always_on_gpus[p] += n * demand.gpu_count
            else:
                machines[p] += n * whole_machines(demand.gpu_count, pools[p].gpus_per_node)
    for p, gpus in always_on_gpus.items():
        machines[p] += whole_machines(gpus, pools[p].gpus_per_node)
    return PoolTallies(used, used_by_tier, machines)


def _busiest_segment(assigned: Sequence[tuple[Demand, int, int]], pools: Sequence[PoolInfo],
                     segment_hours: Mapping[tuple[str, int], tuple[float, ...]],
                     lengths: Sequence[float]) -> PoolTallies:
    """GPUs in each pool's busiest segment, by tier (deferrable replicas by their GPU-hours there / its length, as
    the capacity rows count them), and the most machines a segment runs (weekusage.machine_weeks)."""
    held: dict[int, dict[str, list[float]]] = defaultdict(dict)
    rented: list[Placement] = []
    for demand, p, n in assigned:
        hours = segment_hours.get((demand.key, p), ())
        by_segment = held[p].setdefault(demand.tier.value, [0.0] * len(lengths))
        for s, h in enumerate(hours):
            by_segment[s] += n * demand.gpu_count * h / lengths[s]
        if not pools[p].committed:
            rented.append(Placement(demand.workload.name, demand.tier.value, pools[p].site.name, pools[p].name, n,
                                    n * demand.gpu_count, 0.0, gpus_per_replica=demand.gpu_count,
                                    segment_hours=hours))
    used: dict[int, int] = defaultdict(int)
    used_by_tier: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for p, tiers in held.items():
        totals = [sum(by_segment[s] for by_segment in tiers.values()) for s in range(len(lengths))]
        busiest = max(range(len(lengths)), key=totals.__getitem__)
        # whole GPUs: the total rounded up, shared by the tiers by their largest remainders (never over capacity)
        used[p] = math.ceil(totals[busiest] - 1e-6)
        exact = {tier: by_segment[busiest] for tier, by_segment in tiers.items()}
        whole = {tier: math.floor(v + 1e-6) for tier, v in exact.items()}
        for tier in sorted(exact, key=lambda t: whole[t] - exact[t])[:max(used[p] - sum(whole.values()), 0)]:
            whole[tier] += 1
        used_by_tier[p].update(whole)
    index = {pool.name: pool.index for pool in pools}
    weeks = machine_weeks(rented, lengths, {pools[p].name: pools[p].gpus_per_node for p in held if not pools[p].committed})
    machines: dict[int, int] = defaultdict(int, {index[name]: week.peak for name, week in weeks.items()})
    return PoolTallies(used, used_by_tier, machines, _gang_machines(assigned, pools, segment_hours, lengths))


def _gang_machines(assigned: Sequence[tuple[Demand, int, int]], pools: Sequence[PoolInfo],
                   segment_hours: Mapping[tuple[str, int], tuple[float, ...]],
                   lengths: Sequence[float]) -> dict[int, tuple[int, dict[str, float]]]:
    """Each committed pool's machines left for machine-sized replicas beside the smaller whole-segment ones, and
    the machines those hold by tier, in the segment with the least room that has any of them."""
    smaller: dict[int, list[int]] = defaultdict(lambda: [0] * len(lengths))
    held: dict[int, dict[str, list[float]]] = defaultdict(dict)
    for demand, p, n in assigned:
        pool = pools[p]
        if not pool.committed:
            continue
        hours = segment_hours.get((demand.key, p), ())
        sized = machine_sized(demand.gpu_count, pool.gpus_per_node)
        for s, h in enumerate(hours):
            if not sized and h >= lengths[s] - 1e-9:
                smaller[p][s] += n * demand.gpu_count
            elif sized and h > 0:
                by_segment = held[p].setdefault(demand.tier.value, [0.0] * len(lengths))
                by_segment[s] += n * whole_machines(demand.gpu_count, pool.gpus_per_node) * h / lengths[s]
    out: dict[int, tuple[int, dict[str, float]]] = {}
    for p, tiers in held.items():
        pool = pools[p]
        room = [(machines_for_gangs(pool.capacity_gpus, pool.gpus_per_node, smaller[p][s])
                 - sum(t[s] for t in tiers.values()), s) for s in range(len(lengths))
                if any(t[s] > 0 for t in tiers.values())]
        _, tightest = min(room)
        out[p] = (machines_for_gangs(pool.capacity_gpus, pool.gpus_per_node, smaller[p][tightest]),
                  {tier: t[tightest] for tier, t in tiers.items()})
    return out
