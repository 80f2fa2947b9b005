"""validate's capacity warning for an inventory with a `schedule` (spec, "Time"), counted the way the plan
counts capacity: GPU-hours over the week's segments, and whole machines for machine-sized gangs on
committed pools (revision 4, week/machines.py). Without a schedule a plan holds every replica's GPUs all
month (revision 2), and feasibility.py compares GPUs.

For each set of GPU types that some demand is limited to (Hall's condition, as feasibility.py), and for
each stretch of the week a deferrable workload may run in (its segments; and the whole week):
- GPU-hours: the whole-segment replicas' GPUs x the stretch's hours, plus the GPU-hours of every deferrable
  replica whose windows lie inside it, must fit the pools' GPUs x those hours;
- machines, where those pools share one GPUs per node n: the machine-sized replicas (gpu.count >= n) hold
  their machines for their hours, which must fit, segment by segment, in the machines left beside the
  smaller whole-segment replicas: floor((capacity - their GPUs) / n) (machines.machines_for_gangs).
Both are necessary: a plan that places everything meets them, so the warning never cries wolf; and the
19-hour jobs that do not share one free machine are named here as in the plan.

The windows are read at REFERENCE_WEEK: validate has no week of its own (a plan is for the week it names,
where daylight saving may move a window by an hour in UTC).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from hybridctl.core.placement.eligibility import Demand, PoolInfo
from hybridctl.core.week.machines import machine_sized, machines_for_gangs, whole_machines
from hybridctl.core.week.segments import IsoWeek, Week, WorkloadWeek

REFERENCE_WEEK = IsoWeek(2026, 2)

_TOLERANCE = 1e-6
_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


@dataclass(frozen=True)
class Shortfall:
    """A stretch of the week where the demand of a set of GPU types exceeds what its pools hold."""

    types: tuple[str, ...]
    where: str  # "the week", or the stretch's segments in UTC
    need: float
    capacity: float
    machines_of: int  # 0: counted in GPU-hours; else machine-hours of machines of this many GPUs


def week_shortfalls(demands: Iterable[Demand], pools: Sequence[PoolInfo], week: Week) -> list[Shortfall]:
    """Every type set's stretches of the week that cannot hold its demand, first by type set."""
    lengths = [s.hours for s in week.segments]
    # a fleet's demands are a few kinds: GPU types, a replica's size and when it runs, replicas summed
    by_types: dict[tuple[str, ...], dict[tuple[int, WorkloadWeek], int]] = defaultdict(lambda: defaultdict(int))
    timing_of: dict[tuple[object, ...], WorkloadWeek] = {}
    for demand in demands:
        timing = week.workloads[demand.workload.name]
        alike = timing_of.setdefault((timing.segments, timing.deferrable, timing.weekly_hours), timing)
        by_types[tuple(sorted(demand.gpu_types))][(demand.gpu_count, alike)] += demand.replicas
    found: list[Shortfall] = []
    for types in sorted(by_types):
        wanted: dict[tuple[int, WorkloadWeek], int] = defaultdict(int)
        for other, kinds in by_types.items():
            if set(other) <= set(types):
                for kind, replicas in kinds.items():
                    wanted[kind] += replicas
        chosen = [p for p in pools if p.pool.gpu in types]
        shortfall = _shortfall(types, wanted, chosen, lengths, week)
        if shortfall is not None:
            found.append(shortfall)
    return found


def _shortfall(types: tuple[str, ...], demands: Mapping[tuple[int, WorkloadWeek], int], pools: list[PoolInfo],
               lengths: list[float], week: Week) -> Shortfall | None:
    """`demands`: (a replica's GPUs, when it runs) -> replicas."""
    capacity = sum(p.capacity_gpus for p in pools)
    nodes = {p.gpus_per_node for p in pools if p.committed}
    node = nodes.pop() if len(nodes) == 1 and all(p.committed for p in pools) else 0
    n = len(lengths)
    whole_gpus = [0.0] * n  # per segment: GPUs of the replicas that run it whole
    smaller_gpus = [0] * n  # of those, the replicas smaller than a machine
    whole_machines_held = [0.0] * n  # and the machines of the machine-sized ones
    spans: dict[tuple[int, ...], list[tuple[float, float]]] = defaultdict(list)  # segments -> (GPU-h, machine-h)
    every = tuple(range(n))
    for (count, timing), replicas in demands.items():
        gpus = replicas * count
        sized = node > 0 and machine_sized(count, node)
        machines = replicas * whole_machines(count, node) if sized else 0
        if timing.deferrable:
            spans[timing.segments].append((gpus * timing.weekly_hours, machines * timing.weekly_hours))
            continue
        for s in timing.segments:
            whole_gpus[s] += gpus
            if sized:
                whole_machines_held[s] += machines
            else:
                smaller_gpus[s] += gpus
    spans.setdefault(every, [])
    for s in range(n):  # a segment on its own: its whole-segment replicas
        spans.setdefault((s,), [])
    for segments in sorted(spans, key=lambda segs: (len(segs), segs)):
        inside = [parts for other, parts in spans.items() if set(other) <= set(segments)]
        hours = sum(lengths[s] for s in segments)
        need = sum(lengths[s] * whole_gpus[s] for s in segments) + sum(g for parts in inside for g, _ in parts)
        if need > capacity * hours + _TOLERANCE:
            return Shortfall(types, _where(segments, week, every), need, capacity * hours, 0)
        gang_hours = sum(m for parts in inside for _, m in parts)
        if node and gang_hours > 0:
            need = sum(lengths[s] * whole_machines_held[s] for s in segments) + gang_hours
            room = sum(lengths[s] * machines_for_gangs(capacity, node, smaller_gpus[s]) for s in segments)
            if need > room + _TOLERANCE:
                return Shortfall(types, _where(segments, week, every), need, room, node)
    return None


def _where(segments: tuple[int, ...], week: Week, every: tuple[int, ...]) -> str:
    if segments == every:
        return "the week"

    def at(hour: float) -> str:
        day, minutes = divmod(round(hour * 60), 24 * 60)
        return f"{_DAYS[day % 7]} {minutes // 60:02d}:{minutes % 60:02d}"

    stretches: list[tuple[float, float]] = []
    for s in segments:
        start, end = week.segments[s].start_hour, week.segments[s].end_hour
        if stretches and abs(stretches[-1][1] - start) < _TOLERANCE:
            stretches[-1] = (stretches[-1][0], end)
        else:
            stretches.append((start, end))
    told = ", ".join(f"{at(a)}-{at(b)}" for a, b in stretches[:3])
    more = f" and {len(stretches) - 3} more" if len(stretches) > 3 else ""
    return f"{told}{more} UTC"
