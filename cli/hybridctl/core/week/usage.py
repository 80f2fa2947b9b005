"""Each pool over the plan's week, from the placements' hours per segment: what the plan file, `plan
--format json` and the week strip show (inventory revision 3).

Per pool and segment: GPUs held (whole-segment replicas' GPUs + GPU-hours of the others / L_s), machines
(pay-per-use, by machines.py's rule: the shared machines of the replicas that run the whole segment, plus
each other replica's own machines x its share of the segment) and, for a committed pool, its idle GPU-hours (capacity x L_s
less the GPU-hours placed). A plan file carries them; reading one re-derives them and refuses a file
whose figures differ (serialize.py). Pools are keyed by name, as machines.py keys them.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.week.machines import segment_machines, whole_machines

_ROUND = 6


@dataclass(frozen=True)
class PoolWeek:
    pool: str
    gpus: tuple[float, ...]  # per segment
    machines: tuple[float, ...]  # per segment; a committed pool's machines are its capacity's
    idle_gpu_hours: tuple[float, ...]  # per segment; committed pools only (0 elsewhere)


def _by_pool(placement: Placement) -> str:
    return placement.pool


def _gpus_by_segment(placements: Iterable[Placement], lengths: Sequence[float],
                     key: Callable[[Placement], str] = _by_pool) -> dict[str, list[float]]:
    """Pool (or `key`) -> GPUs held in each segment: whole-segment replicas' GPUs + the GPU-hours of the others / L_s."""
    held: dict[str, list[float]] = defaultdict(lambda: [0.0] * len(lengths))
    for pl in placements:
        for s, hours in enumerate(pl.segment_hours):
            if hours > 0:
                held[key(pl)][s] += pl.gpus * hours / lengths[s]
    return held


def peak_gpus(placements: Iterable[Placement], lengths: Sequence[float],
              key: Callable[[Placement], str] = _by_pool) -> dict[str, int]:
    """Pool (or `key`: a showback line) -> the most GPUs it holds at once over the week: a timed plan's
    `used_gpus` (pricing/pools.py gives it, verify.py checks it) and its showback lines' GPUs. Summing the
    placements' GPUs would count a daytime service and a nightly batch on the same 16 GPUs as 32 of 16."""
    return {name: math.ceil(max(by_segment, default=0.0) - 1e-6)
            for name, by_segment in _gpus_by_segment(placements, lengths, key).items()}


@dataclass(frozen=True)
class MachineWeek:
    """A pay-per-use pool's machines over a timed plan's week, segment by segment by machines.py's rule."""

    machine_hours: float  # in a week: what the pool is paid for (pricing/pools.py), and what a plan file is checked by
    peak: int  # the most machines a segment may run at once (its own-machine replicas may all run together)
    always_on: int  # the machines every segment runs: the fewest shared ones of any segment


def machine_weeks(placements: Iterable[Placement], lengths: Sequence[float],
                  gpus_per_node: Mapping[str, int]) -> dict[str, MachineWeek]:
    """Each pay-per-use pool (those `gpus_per_node` names) with placements, over the week of `lengths`: the one
    count of a timed plan's machines, which its cash, its machine figures and its showback all read."""
    out: dict[str, MachineWeek] = {}
    for pool, tally in segment_machines(placements, lengths, gpus_per_node).items():
        shared = tally.shared
        out[pool] = MachineWeek(sum(m * length for m, length in zip(shared, lengths, strict=True))
                                + sum(tally.own_hours),
                                max(m + o for m, o in zip(shared, tally.own_running, strict=True)), min(shared))
    return out


def pool_weeks(plan: Plan) -> tuple[PoolWeek, ...]:
    """Every pool of the plan over its week, in the plan's pool order; () for an untimed plan."""
    if not plan.segments:
        return ()
    lengths = [s.hours for s in plan.segments]
    held = _gpus_by_segment(plan.placements, lengths)
    per_node = {u.pool: max(u.gpus_per_node, 1) for u in plan.pools}
    tallies = segment_machines(plan.placements, lengths, {u.pool: u.gpus_per_node for u in plan.pools
                                                          if not u.committed})
    out: list[PoolWeek] = []
    for usage in plan.pools:
        gpus = held.get(usage.pool, [0.0] * len(lengths))
        node = per_node[usage.pool]
        tally = tallies.get(usage.pool)
        if usage.committed:
            machines = [float(whole_machines(usage.capacity_gpus, node))] * len(lengths)
            idle = [max(usage.capacity_gpus - g, 0.0) * length for g, length in zip(gpus, lengths, strict=True)]
        elif tally is None:
            machines, idle = [0.0] * len(lengths), [0.0] * len(lengths)
        else:  # own machines count for their share of the segment
            machines = [m + h / length for m, h, length in zip(tally.shared, tally.own_hours, lengths, strict=True)]
            idle = [0.0] * len(lengths)
        out.append(PoolWeek(usage.pool, tuple(round(g, _ROUND) for g in gpus),
                            tuple(round(m, _ROUND) for m in machines), tuple(round(i, _ROUND) for i in idle)))
    return tuple(out)


def pool_weeks_document(plan: Plan) -> list[dict[str, object]]:
    return [{"pool": w.pool, "gpus": list(w.gpus), "machines": list(w.machines),
             "idle_committed_gpu_hours": list(w.idle_gpu_hours)} for w in pool_weeks(plan)]
