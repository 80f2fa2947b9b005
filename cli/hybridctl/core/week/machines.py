"""A pay-per-use pool's machines in a segment of the plan's week: the spec's rule ("Time", machines over
time), stated once.

In each segment the replicas that run it whole share ceil(their GPUs / GPUs per node) machines
(`shared_machines`); any other replica with hours there runs machines of its own while it runs,
replicas x ceil(GPUs per replica / GPUs per node) (`own_machines`). An untimed plan is the one-segment
case: its always-on replicas share, the others run their own (pricing/rates.py).

Who counts by it: the plan's pool weeks and machine figures (usage.py: machine_weeks, pool_weeks, and the
cash, the checker and the reasons through them), scheduled scaling (deploy/scaling_schedule.segment_needs),
the planner's objective of a timed answer (placement/timed_plan.timed_objective) and the solver's rows
(placement/timed_rows.py, formulation.py). The rows work on numpy arrays: a replica's own machines are
`whole_machines` of the array of replica sizes (the same operators), and a segment's shared machines are an
integer column m in the row sum(GPUs x) + `shared_link(GPUs per node)` m <= 0, i.e. m >= their GPUs / GPUs
per node, which for the least integer m (the objective pays for each) is `shared_machines`.

Committed pools (revision 4, "whole machines for gangs on committed pools"): a replica of at least GPUs per
node GPUs (`machine_sized`) runs on whole machines of its own, and in each segment the machines those replicas
hold (machines x hours / L_s) fit in `machines_for_gangs`: the machines left free beside the smaller replicas
that run the whole segment. Counted by the solver's rows (placement/timed_rows.py), the unplaced reason
(placement/explain.py) and validate's capacity warning (inventory/feasibility.py); the checker states it apart.

Pools are keyed by name (unique in an inventory), as a plan's placements name them.

No numpy here: a plan file is read and totalled without it (usage.py is on that path).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from hybridctl.core.plan.model import Placement, runs_whole_segment

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    BoolArray = npt.NDArray[np.bool_]

_Count = TypeVar("_Count", int, float)


@overload
def whole_machines(gpus: _Count, gpus_per_node: _Count) -> _Count: ...
@overload
def whole_machines(gpus: FloatArray, gpus_per_node: FloatArray | float) -> FloatArray: ...
def whole_machines(gpus: Any, gpus_per_node: Any) -> Any:
    """The machines of `gpus_per_node` GPUs that hold `gpus` GPUs: rounded up. Also over numpy arrays (the
    solver's columns), by the same operators."""
    return -(-gpus // gpus_per_node)


@overload
def shared_link(gpus_per_node: float) -> float: ...
@overload
def shared_link(gpus_per_node: FloatArray) -> FloatArray: ...
def shared_link(gpus_per_node: Any) -> Any:
    """The shared machines' coefficient in the solver's row that holds the whole-segment replicas' GPUs,
    sum(GPUs x) + coefficient x m <= 0: an integer m of at least their GPUs / GPUs per node, rounded up by
    being whole (formulation.py, timed_rows.py)."""
    return -gpus_per_node


def shared_machines(whole_gpus: int, gpus_per_node: int) -> int:
    """The machines the replicas that run a segment whole share: their GPUs, in whole machines."""
    return whole_machines(whole_gpus, max(gpus_per_node, 1))


def own_machines(replicas: int, gpus_per_replica: int, gpus_per_node: int) -> int:
    """The machines any other replicas run while they run: each its own whole machines."""
    return replicas * whole_machines(gpus_per_replica, max(gpus_per_node, 1))


@overload
def machine_sized(gpus_per_replica: int, gpus_per_node: int) -> bool: ...
@overload
def machine_sized(gpus_per_replica: FloatArray, gpus_per_node: float) -> BoolArray: ...
def machine_sized(gpus_per_replica: Any, gpus_per_node: Any) -> Any:
    """A replica that fills whole machines (a gang of one machine or more): on a committed pool it holds them.
    Also over numpy arrays (the solver's columns)."""
    return gpus_per_replica >= gpus_per_node


def machines_for_gangs(capacity_gpus: int, gpus_per_node: int, smaller_whole_gpus: int) -> int:
    """A committed pool's machines left for machine-sized replicas in a segment: its floor(capacity / GPUs per
    node) machines less the ceil(GPUs / GPUs per node) the smaller whole-segment replicas are packed into. Written
    floor((capacity - their GPUs) / GPUs per node), which is the same when the capacity is whole machines, and
    lets the smaller replicas use the GPUs beyond whole machines first when it is not (12 GPUs of 8 per node: one
    machine, and 4 GPUs that a 4-GPU service may use without taking the machine from a gang)."""
    return max(capacity_gpus - smaller_whole_gpus, 0) // max(gpus_per_node, 1)


def gpus_per_replica(pl: Placement) -> int:
    """A placement's replica size (a plan of format 2 may leave it out: its GPUs over its replicas)."""
    return pl.gpus_per_replica or (pl.gpus // pl.replicas if pl.replicas else 0)


@dataclass(frozen=True)
class SegmentMachines:
    """One pay-per-use pool in each segment of the week."""

    shared: list[int]  # machines the replicas that run the segment whole share
    own_running: list[int]  # own machines of the other replicas with hours there
    own_hours: list[float]  # and their machine-hours there


def segment_machines(placements: Iterable[Placement], lengths: Sequence[float],
                     gpus_per_node: Mapping[str, int]) -> dict[str, SegmentMachines]:
    """Pool name -> its machines in each segment of the week of `lengths`, for the pools `gpus_per_node`
    names (the pay-per-use ones) that hold placements."""
    n = len(lengths)
    whole_gpus: dict[str, list[int]] = {}
    own: dict[str, tuple[list[int], list[float]]] = {}
    for pl in placements:
        node = gpus_per_node.get(pl.pool)
        if node is None or not pl.replicas:
            continue
        if pl.pool not in whole_gpus:
            whole_gpus[pl.pool] = [0] * n
            own[pl.pool] = ([0] * n, [0.0] * n)
        whole, (running, hours_of) = whole_gpus[pl.pool], own[pl.pool]
        machines = own_machines(pl.replicas, gpus_per_replica(pl), node)
        for s, hours in enumerate(pl.segment_hours):
            if runs_whole_segment(hours, lengths[s]):
                whole[s] += pl.gpus
            elif hours > 0:
                running[s] += machines
                hours_of[s] += machines * hours
    return {pool: SegmentMachines([shared_machines(g, gpus_per_node[pool]) for g in gpus], *own[pool])
            for pool, gpus in whole_gpus.items()}
