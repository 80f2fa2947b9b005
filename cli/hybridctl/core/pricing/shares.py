"""Each placement's share of what its pool costs: its compute at the pool's rate, plus, in a pay-per-use
pool under the cash cost model, the rounding of the machines it runs on (the spec's Showback).

A pay-per-use pool's rounding is its machines' cost (PoolUsage.usd_per_month, as pools.py priced it) less
the compute placed in it (amortized_usd_per_month). It is the GPU-hours on its machines that no replica
uses, so it is shared by where those idle GPU-hours are: the always-on replicas (in a timed plan, those
that run a segment whole) share the pool's shared machines and their idle GPUs, in proportion to the GPUs
each holds beyond whole machines (revision 4: gpu.count mod GPUs per node; a 2-GPU replica alone on an 8-GPU
machine carries the 6 idle GPUs, a 64-GPU gang that fills eight machines beside it carries none); any other
replica runs machines of its own and carries their idle GPUs alone (a 20-hour job that fills its machine
carries none). The pool's figures are split, never priced again, so the shares add up to the pool's cash
whatever priced it.

No numpy and no inventory models here: a plan file is priced without them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from hybridctl.core.plan.model import Placement, Plan, PoolUsage, runs_whole_segment
from hybridctl.core.week.machines import gpus_per_replica, own_machines, shared_machines

ALWAYS_ON_HOURS = 730.0  # rates.is_always_on: the hours of a replica that shares its pool's machines


@dataclass(frozen=True)
class IdleMachines:
    """Pay-per-use machines of one pool paid for GPUs that no replica uses."""

    pool: str
    gpu: str
    machines: int
    gpus_used: int  # on those machines
    gpus_per_node: int
    workloads: tuple[str, ...]  # who carries their idle GPUs (the replicas that leave them part-empty)
    idle_usd_per_month: float


def _spare_gpus(pl: Placement, gpus_per_node: int) -> int:
    """The GPUs of a placement's own machines (week/machines.py) that its replicas leave idle while they run."""
    per_replica = gpus_per_replica(pl)
    return own_machines(pl.replicas, per_replica, gpus_per_node) * gpus_per_node - pl.replicas * per_replica


def _own_idle_gpu_hours(pl: Placement, gpus_per_node: int) -> float:
    """The idle GPU-hours of a replica's own machines (whole machines while it runs)."""
    return _spare_gpus(pl, gpus_per_node) * pl.hours_per_month


def _always_on(pl: Placement) -> bool:
    return pl.hours_per_month == ALWAYS_ON_HOURS


def _shared_idle_split(sharing: Sequence[Placement], gpus_per_node: int) -> list[float]:
    """How the idle GPUs of shared machines split among the placements on them: by the GPUs each holds beyond
    whole machines (its replicas' gpu.count mod GPUs per node), the GPUs that leave a machine part-empty. Whole
    machines' replicas leave none, so where all of them fill whole machines no shared GPU is idle by the rule;
    should a plan still have some (a plan file's machines beyond the rule), they split by GPUs, revision 3's
    rule, and stay on those machines. Fractions of one, in the order given."""
    node = max(gpus_per_node, 1)
    beyond = [float(pl.replicas * (gpus_per_replica(pl) % node)) for pl in sharing]
    weights = beyond if sum(beyond) > 0 else [float(pl.gpus) for pl in sharing]
    total = sum(weights)
    return [w / total if total > 0 else 1.0 / len(sharing) for w in weights]


def _week_weights(pool: PoolUsage, placements: Sequence[Placement], lengths: Sequence[float]) -> list[float]:
    """A timed plan's rounding_weights, segment by segment (week/machines.py counts the same machines):
    the replicas that run a segment whole share the idle GPUs of its shared machines for its hours
    (_shared_idle_split); any other replica carries its own machines' idle GPUs for its hours there."""
    node = max(pool.gpus_per_node, 1)
    weights = [0.0] * len(placements)
    for s, length in enumerate(lengths):
        whole = [i for i, pl in enumerate(placements)
                 if s < len(pl.segment_hours) and runs_whole_segment(pl.segment_hours[s], length)]
        gpus = sum(placements[i].gpus for i in whole)
        idle = (shared_machines(gpus, node) * node - gpus) * length
        if idle <= 0:
            continue
        for i, part in zip(whole, _shared_idle_split([placements[i] for i in whole], node), strict=True):
            weights[i] += idle * part
    for i, pl in enumerate(placements):
        weights[i] += _spare_gpus(pl, node) * sum(h for h, length in zip(pl.segment_hours, lengths, strict=False)
                                  if h > 0 and not runs_whole_segment(h, length))
    return weights


def rounding_weights(pool: PoolUsage, placements: Sequence[Placement], lengths: Sequence[float] = ()) -> list[float]:
    """Per placement of a pay-per-use pool: the idle GPU-hours it carries on its machines (over the week of
    `lengths`, a timed plan's segments)."""
    if lengths:
        return _week_weights(pool, placements, lengths)
    shared = [pl for pl in placements if _always_on(pl)]
    shared_idle = max(0, pool.always_on_machines * pool.gpus_per_node - sum(pl.gpus for pl in shared)) * ALWAYS_ON_HOURS
    parts = iter(_shared_idle_split(shared, pool.gpus_per_node) if shared else [])
    return [shared_idle * next(parts) if _always_on(pl) else _own_idle_gpu_hours(pl, pool.gpus_per_node)
            for pl in placements]


def placement_shares(plan: Plan, rounding: bool | None = None) -> list[float]:
    """Per placement, in the plan's order: its compute plus its share of its pool's machine rounding.
    `rounding` (default: under the cash cost model; under `amortized` a placement's showback is its
    compute) says whether the rounding is shared; cash is cash under either model (incident.py).
    Unrounded: views round them together (cents.py)."""
    return [share for share, _ in placement_splits(plan, rounding)]


def placement_splits(plan: Plan, rounding: bool | None = None) -> list[tuple[float, float]]:
    """Per placement, in the plan's order: (its share, as placement_shares, and the part of it that pays for idle
    GPUs).

    A pay-per-use pool's cash is split by each placement's GPU-hours on its machines, those it uses and the idle
    ones it carries: the same split as its compute plus its rounding, but from the pool's one price of a GPU-hour
    instead of each placement's compute rounded to the cent (2 GPUs for an hour a week on a machine of 8 is
    8 x 730 / 168 x $4 = $139.05 a month; its compute rounded, $34.76, plus its idle GPUs made it $139.04)."""
    splits = [(pl.usd_per_month, 0.0) for pl in plan.placements]
    if not (plan.cost_model == "cash" if rounding is None else rounding):
        return splits
    on_pool: dict[str, list[int]] = defaultdict(list)
    for i, pl in enumerate(plan.placements):
        on_pool[pl.pool].append(i)
    lengths = [s.hours for s in plan.segments]
    for pool in plan.pools:
        at = on_pool.get(pool.pool)
        if pool.committed or not at:
            continue
        placed = [plan.placements[i] for i in at]
        used, idle = _machine_gpu_hours(pool, placed, lengths)
        rate = _usd_per_machine_gpu_hour(pool, used, idle)
        for i, u, w in zip(at, used, idle, strict=True):
            if rate is not None:
                splits[i] = (rate * (u + w), rate * w)
            else:  # nothing runs there: what the pool still costs is all idle
                splits[i] = (pool.usd_per_month / len(at), pool.usd_per_month / len(at))
    return splits


def _machine_gpu_hours(pool: PoolUsage, placements: Sequence[Placement],
                       lengths: Sequence[float]) -> tuple[list[float], list[float]]:
    """Per placement: the GPU-hours it uses on the pool's machines and the idle ones it carries (in a timed plan
    GPU-hours a week: the segments' hours, rework included, as the idle ones are counted)."""
    used = [pl.gpus * (sum(pl.segment_hours) if lengths else pl.hours_per_month) for pl in placements]
    return used, rounding_weights(pool, placements, lengths)


def _usd_per_machine_gpu_hour(pool: PoolUsage, used: Sequence[float], idle: Sequence[float]) -> float | None:
    """What a GPU-hour of the pool's machines costs in its cash, used or idle (None when the pool ran none)."""
    total = sum(used) + sum(idle)
    return pool.usd_per_month / total if total > 0 else None


def idle_machines(plan: Plan) -> list[IdleMachines]:
    """Pay-per-use machines with idle GPUs, dearest idle first: each pool's always-on machines, and each
    other placement's own machines."""
    if plan.cost_model != "cash":
        return []
    on_pool: dict[str, list[Placement]] = defaultdict(list)
    for pl in plan.placements:
        on_pool[pl.pool].append(pl)
    found: list[IdleMachines] = []
    lengths = [s.hours for s in plan.segments]
    for pool in plan.pools:
        placements = on_pool.get(pool.pool, [])
        if pool.committed or not placements:
            continue
        used_hours, weights = _machine_gpu_hours(pool, placements, lengths)
        rate = _usd_per_machine_gpu_hour(pool, used_hours, weights) or 0.0  # as the showback's idle parts
        if plan.segments:  # a timed pool's machines are the week's: one figure, the most a segment runs
            idle_usd = round(rate * sum(weights), 2)
            carriers = {pl.workload for pl, w in zip(placements, weights, strict=True) if w > 0}
            if idle_usd > 0:
                found.append(IdleMachines(pool.pool, pool.gpu, pool.machines, pool.used_gpus, pool.gpus_per_node,
                                          tuple(sorted(carriers)), idle_usd))
            continue
        shared = [pl for pl in placements if _always_on(pl)]
        used = sum(pl.gpus for pl in shared)
        if shared and pool.always_on_machines * pool.gpus_per_node > used:
            idle_hours = (pool.always_on_machines * pool.gpus_per_node - used) * ALWAYS_ON_HOURS
            carriers = {pl.workload for pl, part in zip(shared, _shared_idle_split(shared, pool.gpus_per_node),
                                                         strict=True) if part > 0}
            found.append(IdleMachines(pool.pool, pool.gpu, pool.always_on_machines, used, pool.gpus_per_node,
                                      tuple(sorted(carriers)), round(idle_hours * rate, 2)))
        for pl in placements:
            if not _always_on(pl) and (idle := _own_idle_gpu_hours(pl, pool.gpus_per_node)) > 0:
                machines = own_machines(pl.replicas, gpus_per_replica(pl), pool.gpus_per_node)
                found.append(IdleMachines(pool.pool, pool.gpu, machines, pl.gpus, pool.gpus_per_node,
                                          (pl.workload,), round(idle * rate, 2)))
    return sorted(found, key=lambda m: (-m.idle_usd_per_month, m.pool))
