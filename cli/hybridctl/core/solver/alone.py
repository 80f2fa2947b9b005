"""The fixed and burst tiers priced as if they were alone (spec, "Tier priority", revision 4): their cash must
be what it would be without the opportunistic workloads, and only then do opportunistic replicas fill what is
left (priority.py's stage between the burst tier and the opportunistic one).

Their cash alone is their columns' own costs (placements with their machines of their own, data movement,
failure domains, patterns, moves) plus the shared machines of a pay-per-use pool's segment that only they
share. Where opportunistic replicas share a segment's machines with them, the model's machine column m counts
everyone's GPUs; the others' machines alone are then a column of their own, m' >= their GPUs / GPUs per node
(the same link row, machines.shared_link, over their placements only), priced as m is in this stage and free
in every other. So an opportunistic replica may fill the spare GPUs of the machines the others need, or rent
machines of its own under the quota they leave, and is never counted in what the others pay. The committed
pools' constant is the same in every plan of the model and is left out.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hybridctl.core.solver.milp import Col, FloatArray, IntArray, Model, with_block

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Alone:
    model: Model  # the model with the others' own shared machines (m') where opportunistic replicas share
    cost: FloatArray  # per column of `model`: the fixed and burst tiers' cash alone
    # each m' row's placement entries (its index among the m', placement column, GPUs) and m's link coefficient
    rows: IntArray
    cols: IntArray
    gpus: FloatArray
    link: FloatArray

    def start(self, values: FloatArray) -> FloatArray:
        """`values` of the model this was made from, with the fewest whole m' that hold the others' GPUs."""
        added = self.link.size
        if not added:
            return values
        held = np.bincount(self.rows, weights=self.gpus * values[self.cols], minlength=added)
        return np.concatenate([values, np.ceil(held / -self.link - 1e-9).clip(min=0.0)])


def priced_alone(model: Model, others: BoolArray, opportunistic: BoolArray) -> Alone:
    """`others`, `opportunistic`: per column, whether it belongs to a fixed or burst unit, an opportunistic one."""
    kind = model.kind
    col_of = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts).astype(np.int64))
    # a machine column's only negative entry is its link row (formulation.py, timed_rows.py)
    link_entry = (kind[col_of] == Col.MACHINES) & (model.value < 0)
    link_rows, link_machine, link_coef = model.index[link_entry].astype(np.int64), col_of[link_entry], \
        model.value[link_entry]
    is_link = np.zeros(model.rows, dtype=np.bool_)
    is_link[link_rows] = True
    member = is_link[model.index] & (kind[col_of] == Col.PLACE)
    m_rows, m_cols, m_gpus = model.index[member].astype(np.int64), col_of[member], model.value[member]
    shared_by_others = np.zeros(model.rows, dtype=np.bool_)
    shared_by_others[m_rows[others[m_cols]]] = True
    shared_by_opportunistic = np.zeros(model.rows, dtype=np.bool_)
    shared_by_opportunistic[m_rows[opportunistic[m_cols]]] = True
    cost = np.where(others & (kind != Col.UNPLACED), model.cost, 0.0)
    theirs = shared_by_others[link_rows] & ~shared_by_opportunistic[link_rows]
    cost[link_machine[theirs]] = model.cost[link_machine[theirs]]
    mixed = shared_by_others[link_rows] & shared_by_opportunistic[link_rows]
    if not mixed.any():
        empty = np.zeros(0, dtype=np.int64)
        return Alone(model, cost, empty, empty, np.zeros(0), np.zeros(0))
    added = int(mixed.sum())
    machines = link_machine[mixed]
    position = np.full(model.rows, -1, dtype=np.int64)
    position[link_rows[mixed]] = np.arange(added, dtype=np.int64)
    keep = others[m_cols] & (position[m_rows] >= 0)
    rows, cols, gpus = position[m_rows[keep]], m_cols[keep], m_gpus[keep]
    new_cols = model.columns + np.arange(added, dtype=np.int64)
    entries = (np.concatenate([model.rows + rows, model.rows + np.arange(added, dtype=np.int64)]),
               np.concatenate([cols, new_cols]), np.concatenate([gpus, link_coef[mixed]]))
    extended = with_block(model, np.zeros(added), model.upper[machines], Col.MACHINES, entries,
                          np.full(added, -np.inf), np.zeros(added), integer=True,
                          owner=(model.unit[machines], model.ref[machines]))
    return Alone(extended, np.concatenate([cost, model.cost[machines]]), rows, cols, gpus, link_coef[mixed])
