"""Capacity over the week (inventory revision 3, "Time"): the rows that replace formulation.py's
capacity rows when the plan's week is timed (more than one segment, or deferrable work).

In every segment s (L_s hours) of every pool:
- committed: GPUs of the replicas that run the whole segment + GPU-hours of deferrable replicas in
  s / L_s <= capacity;
- pay-per-use, by week/machines.py's rule: shared machines m[p,s] (integer) hold the whole-segment
  replicas' GPUs (the link row with machines.shared_link: m >= their GPUs / GPUs per node, whole) and
  are paid per machine-hour (m x L_s x 730 / 168); each deferrable replica pays its own machines for
  its hours (`machines_each`, formulation.py: machines.whole_machines of its GPUs; its placement
  column's price, pricing/arrays.py, as in revision 2); the quota counts m[p,s] + each deferrable
  replica's machines x its hours in s / L_s.
A deferrable placement column c gets h[c,s] replica-hours in each of its segments (continuous),
h[c,s] <= L_s x[c] and sum_s h[c,s] >= H x[c] (the solver never takes more than it needs: hours
only cost capacity). One segment alone: h = H x, substituted. The gang rule, where it can bind:
a binary g[p,s,k] says gangs of k GPUs run in s, and then k fits beside the whole-segment replicas.
Whole machines for gangs on committed pools (revision 4, week/machines.py): where a deferrable replica of at
least GPUs per node may run in a committed pool's segment, the machines the machine-sized replicas hold there
(each one's machines x x, or x its hours / L_s) are at most f[p,s], an integer column (Col.GANG_MACHINES, free) with
smaller whole-segment GPUs + GPUs per node x f <= capacity: f is at most machines.machines_for_gangs. Elsewhere
the GPU row implies the rule (whole-segment gangs fill their machines: a whole number of them fits where their
GPUs do), so the rows stay out of the model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.placement.units import PoolTable, Unit
from hybridctl.core.pricing.arrays import segment_machine_usd_per_month
from hybridctl.core.solver.milp import Builder, Col, FloatArray, IntArray
from hybridctl.core.week.machines import machine_sized, machines_for_gangs, shared_link, whole_machines

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class ColumnTimes:
    """Per placement column: whether it runs its segments whole, its segments, and a deferrable
    replica's weekly hours (with its pool's rework)."""

    whole: BoolArray
    segments: list[tuple[int, ...]]
    weekly_hours: FloatArray


def column_times(units: list[Unit], xu: IntArray, of_unit: tuple[tuple[int, ...], ...]) -> ColumnTimes:
    """`of_unit`: the segments (segment_classes.py: classes of alike segments) each unit may run in."""
    whole = np.array([u.timing is None or not u.timing.deferrable for u in units], dtype=np.bool_)[xu]
    per_unit = of_unit
    hours = []
    for u in units:
        base = u.timing.weekly_hours if u.timing is not None else 168.0
        rework = u.rework if u.rework is not None else np.ones(len(u.eligible))
        window = u.timing.window_hours if u.timing is not None else 168.0
        hours.append(np.minimum(base * rework, window))
    return ColumnTimes(whole, [per_unit[int(u)] for u in xu.tolist()],
                       np.concatenate(hours) if hours else np.zeros(0))


def time_sharing_slots(times: ColumnTimes, lengths: FloatArray, slots: FloatArray,
                       gpus: FloatArray, capacity: FloatArray) -> FloatArray:
    """Replicas a column may hold: a deferrable one time-shares its windows, so as many as the GPU-hours
    of its windows allow (a gang must still fit the pool at all: slots > 0)."""
    window = np.array([float(lengths[list(segs)].sum()) for segs in times.segments], dtype=np.float64)
    shared = np.floor(capacity * window / (gpus * np.maximum(times.weekly_hours, 1e-9)) + 1e-9)
    return np.where(times.whole | (slots < 1), slots, np.maximum(slots, shared))


def timed_capacity_rows(b: Builder, x: IntArray, xu: IntArray, xp: IntArray, gpus: FloatArray, x_upper: FloatArray,
                        table: PoolTable, pay_per_use: BoolArray, machines_each: FloatArray,
                        times: ColumnTimes, lengths: FloatArray, n_units: int, cash: bool) -> None:
    """`lengths`: the hours of each segment the model counts (segment_classes.py). An hours column belongs
    to its placement's unit (a unit left unplaced leaves its hours at 0: timed_start.py)."""
    # entries of a column in a segment: (segment, column index into x, coefficient on x or hours)
    hours_col: dict[tuple[int, int], int] = {}  # (column, segment) -> its hours column
    deferred = [c for c in range(x.size) if not times.whole[c] and len(times.segments[c]) > 1]
    if deferred:
        pairs = [(c, s) for c in deferred for s in times.segments[c]]
        owner = np.array([c for c, _ in pairs], dtype=np.int64)
        seg = np.array([s for _, s in pairs], dtype=np.int64)
        # ref: the placement column and the segment, as x column x segments + segment (segment_classes.column_segment_hours reads it)
        h = b.add_columns(np.zeros(len(pairs)), lengths[seg] * x_upper[owner], False, Col.HOURS, xu[owner],
                          x[owner] * lengths.size + seg)
        hours_col.update({pair: int(col) for pair, col in zip(pairs, h.tolist(), strict=True)})
        # h[c,s] <= L_s x[c]
        first = b.add_rows(np.full(len(pairs), -np.inf), np.zeros(len(pairs)))
        rows = first + np.arange(len(pairs), dtype=np.int64)
        b.add_entries(rows, h, np.ones(1))
        b.add_entries(rows, x[owner], -lengths[seg])
        # H x[c] - sum_s h[c,s] <= 0
        cols = np.array(deferred, dtype=np.int64)
        first = b.add_rows(np.full(cols.size, -np.inf), np.zeros(cols.size))
        row_of = {c: first + i for i, c in enumerate(deferred)}
        b.add_entries(first + np.arange(cols.size, dtype=np.int64), x[cols], times.weekly_hours[cols])
        b.add_entries(np.array([row_of[c] for c, _ in pairs], dtype=np.int64), h, -np.ones(1))
    # each column in each of its segments, grouped by (pool, segment) in the columns' order: a column runs
    # the segment whole, or is deferrable with hours there, or deferrable with one segment (no hours columns)
    counts = np.array([len(segs) for segs in times.segments], dtype=np.int64)
    column = np.repeat(np.arange(x.size, dtype=np.int64), counts)
    segment = np.fromiter((s for segs in times.segments for s in segs), dtype=np.int64, count=int(counts.sum()))
    kind = np.where(times.whole[column], 0, np.where(counts[column] > 1, 2, 1))
    order = np.lexsort((column, segment, xp[column]))
    key = xp[column[order]] * lengths.size + segment[order]
    cuts = np.flatnonzero(np.diff(key)) + 1
    for group in np.split(order, cuts) if order.size else []:
        cols, kinds = column[group], kind[group]
        p, s = int(xp[cols[0]]), int(segment[group[0]])
        _segment_rows(b, p, s, cols[kinds == 0].tolist(), cols[kinds == 1].tolist(), cols[kinds == 2].tolist(), x,
                      gpus, x_upper, table, pay_per_use, machines_each, times, lengths, hours_col, n_units, cash)


def _segment_rows(b: Builder, p: int, s: int, whole: list[int], deferrable_x: list[int], deferrable_h: list[int],
                  x: IntArray, gpus: FloatArray, x_upper: FloatArray, table: PoolTable, pay_per_use: BoolArray,
                  machines_each: FloatArray, times: ColumnTimes, lengths: FloatArray,
                  hours_col: dict[tuple[int, int], int], n_units: int, cash: bool) -> None:
    length = float(lengths[s])
    rented = bool(pay_per_use[whole[0] if whole else (deferrable_x or deferrable_h)[0]])
    per_node = float(table.per_node[p])
    limit = float(np.floor(table.capacity[p] / per_node)) if rented else float(table.capacity[p])
    size = machines_each if rented else gpus  # what one deferrable replica holds while it runs
    row = b.add_rows(np.full(1, -np.inf), np.full(1, limit))
    machines: IntArray | None = None
    if whole and rented:
        cost = segment_machine_usd_per_month(table, np.array([p], dtype=np.int64), np.full(1, length), cash)
        machines = b.add_columns(cost, np.full(1, limit), True, Col.MACHINES, np.full(1, n_units, dtype=np.int64),
                                 np.array([p], dtype=np.int64))
        b.add_entries(np.full(1, row, dtype=np.int64), machines, np.ones(1))
        link = b.add_rows(np.full(1, -np.inf), np.zeros(1))
        cols = np.array(whole, dtype=np.int64)
        b.add_entries(np.full(cols.size, link, dtype=np.int64), x[cols], gpus[cols])
        b.add_entries(np.full(1, link, dtype=np.int64), machines, np.full(1, shared_link(per_node)))
    elif whole:
        cols = np.array(whole, dtype=np.int64)
        b.add_entries(np.full(cols.size, row, dtype=np.int64), x[cols], gpus[cols])
    if deferrable_x:  # one segment only: its hours are H, all in s
        cols = np.array(deferrable_x, dtype=np.int64)
        b.add_entries(np.full(cols.size, row, dtype=np.int64), x[cols], size[cols] * times.weekly_hours[cols] / length)
    if deferrable_h:
        cols = np.array(deferrable_h, dtype=np.int64)
        hcols = np.array([hours_col[(c, s)] for c in deferrable_h], dtype=np.int64)
        b.add_entries(np.full(cols.size, row, dtype=np.int64), hcols, size[cols] / length)
    if not rented:
        _whole_machine_rows(b, p, whole, deferrable_x, deferrable_h, x, gpus, x_upper, table, machines_each, times,
                            length, hours_col, s, n_units)
    if whole and (deferrable_x or deferrable_h):
        _gang_rows(b, p, s, whole, deferrable_x + deferrable_h, set(deferrable_h), x, gpus, x_upper, size, limit,
                   per_node, machines, rented, length, hours_col, n_units)


def _whole_machine_rows(b: Builder, p: int, whole: list[int], deferrable_x: list[int], deferrable_h: list[int],
                        x: IntArray, gpus: FloatArray, x_upper: FloatArray, table: PoolTable, machines_each: FloatArray,
                        times: ColumnTimes, length: float, hours_col: dict[tuple[int, int], int], s: int,
                        n_units: int) -> None:
    """A committed pool's machine-sized replicas in segment s hold whole machines: their machines there fit in
    the machines the smaller whole-segment replicas leave (the module's note). Only where it can bind: a
    machine-sized deferrable replica may run there, and the most machine-sized replicas could hold beside the
    most the smaller ones could (each column at its upper bound) does not fit (the GPU row then holds it)."""
    per_node = float(table.per_node[p])
    capacity = float(table.capacity[p])

    def sized(cols: list[int]) -> IntArray:
        found = np.array(cols, dtype=np.int64)
        return found[machine_sized(gpus[found], per_node)] if found.size else found

    big_x, big_h = sized(deferrable_x), sized(deferrable_h)
    whole_cols = np.array(whole, dtype=np.int64)
    big_whole = sized(whole)
    smaller = whole_cols[~machine_sized(gpus[whole_cols], per_node)] if whole_cols.size else whole_cols
    most = float(machines_for_gangs(int(capacity), int(per_node), 0))
    # without smaller whole-segment replicas, the GPU row already keeps them to whole machines unless the
    # capacity has GPUs beyond them
    if not (big_x.size or big_h.size) or (not smaller.size and most * per_node == capacity):
        return
    hours = np.minimum(times.weekly_hours[big_h], length)
    most_held = float((machines_each[big_whole] * x_upper[big_whole]).sum()
                      + (machines_each[big_x] * x_upper[big_x] * times.weekly_hours[big_x] / length).sum()
                      + (machines_each[big_h] * x_upper[big_h] * hours / length).sum())
    most_smaller = min(float((gpus[smaller] * x_upper[smaller]).sum()), capacity)
    if most_held <= machines_for_gangs(int(capacity), int(per_node), int(np.ceil(most_smaller))) + 1e-9:
        return
    row = b.add_rows(np.full(1, -np.inf), np.full(1, 0.0 if smaller.size else most))
    at = np.full(1, row, dtype=np.int64)
    b.add_entries(np.repeat(at, big_whole.size), x[big_whole], machines_each[big_whole])
    b.add_entries(np.repeat(at, big_x.size), x[big_x], machines_each[big_x] * times.weekly_hours[big_x] / length)
    b.add_entries(np.repeat(at, big_h.size), np.array([hours_col[(c, s)] for c in big_h.tolist()], dtype=np.int64),
                  machines_each[big_h] / length)
    if not smaller.size:  # the machines the gangs hold <= floor(capacity / GPUs per node)
        return
    # they hold at most f, and the smaller whole-segment replicas beside f whole machines fit the capacity
    free = b.add_columns(np.zeros(1), np.full(1, most), True, Col.GANG_MACHINES, np.full(1, n_units, dtype=np.int64),
                         np.array([p], dtype=np.int64))
    b.add_entries(at, free, -np.ones(1))
    packed = b.add_rows(np.full(1, -np.inf), np.full(1, capacity))
    b.add_entries(np.full(smaller.size, packed, dtype=np.int64), x[smaller], gpus[smaller])
    b.add_entries(np.full(1, packed, dtype=np.int64), free, np.full(1, per_node))


def _gang_rows(b: Builder, p: int, s: int, whole: list[int], deferrable: list[int], timed: set[int], x: IntArray,
               gpus: FloatArray, x_upper: FloatArray, size: FloatArray, limit: float, per_node: float,
               machines: IntArray | None, rented: bool, length: float, hours_col: dict[tuple[int, int], int],
               n_units: int) -> None:
    """A deferrable replica runs in s only where its whole gang fits beside the whole-segment replicas.
    Left out where it cannot bind: the most the whole-segment replicas could hold plus the gang fits."""
    whole_cols = np.array(whole, dtype=np.int64)
    most_whole = float(sum((gpus[whole_cols] * x_upper[whole_cols]).tolist()))  # summed as ever, in order
    held = whole_machines(most_whole, per_node) if rented else most_whole
    deferrable_cols = np.array(deferrable, dtype=np.int64)
    sizes = size[deferrable_cols]
    for k in np.unique(sizes).tolist():
        if held + k <= limit + 1e-9:
            continue
        gang = b.add_columns(np.zeros(1), np.ones(1), True, Col.GANG, np.full(1, n_units, dtype=np.int64),
                             np.array([p], dtype=np.int64))
        # whole-segment replicas + k g <= limit
        row = b.add_rows(np.full(1, -np.inf), np.full(1, limit))
        if machines is not None:
            b.add_entries(np.full(1, row, dtype=np.int64), machines, np.ones(1))
        else:
            b.add_entries(np.full(whole_cols.size, row, dtype=np.int64), x[whole_cols], gpus[whole_cols])
        b.add_entries(np.full(1, row, dtype=np.int64), gang, np.full(1, k))
        # the gangs of size k run in s only when g = 1: a row per replica column, hours or x <= most x g
        # (added at once: a row at a time was a third of a 10,000-workload model's building)
        chosen = deferrable_cols[sizes == k]
        members = chosen.tolist()
        gated = b.add_rows(np.full(len(members), -np.inf), np.zeros(len(members))) \
            + np.arange(len(members), dtype=np.int64)
        has_hours = np.array([c in timed for c in members], dtype=np.bool_)
        cols = x[chosen]
        cols[has_hours] = [hours_col[(c, s)] for c in chosen[has_hours].tolist()]
        most = np.where(has_hours, length * x_upper[chosen], x_upper[chosen])
        b.add_entries(gated, cols, np.ones(1))
        b.add_entries(gated, np.repeat(gang, len(members)), -most)
