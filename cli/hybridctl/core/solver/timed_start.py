"""A start that meets every row of a timed model, for solve.py's LP-guided route (inventory revision 3).

The route keeps the units the LP places integrally and frees the others, which it leaves unplaced in the
start. In a model without time that start always meets every row: taking replicas away only frees
capacity. A timed model ties units together twice more (timed_rows.py): a pool's shared machines of a segment
must be whole, and a gang switch is 0 or 1, while the LP may have 2.4 machines beside a deferrable
replica's hours, or half a switch. So the start's switches and machines are settled first (each machine
column the least that holds its whole-segment replicas, each switch on only where its gang fits beside
them), then any row still broken has a kept unit on it that adds to the breach left unplaced (freed),
and so on: every round frees at least one unit, and with every unit freed every row holds (nothing placed
is an answer of the model), so it ends with a start that meets every row. solve.py's restricted MIP then
starts from it, over the free units, the switches, the machines and every hours column; on the bench's
fleets it frees a few units beside the LP's fractional ones.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hybridctl.core.solver.milp import Col, FloatArray, Model

BoolArray = npt.NDArray[np.bool_]
_TOL = 1e-6


def nothing_placed(model: Model, values: FloatArray, columns: BoolArray) -> FloatArray:
    """`values` with the units owning `columns` left wholly unplaced: always feasible, since
    removing replicas only frees capacity, and a unit with an unplaced replica need not spread."""
    start = values.copy()
    machines = np.isin(model.kind, (int(Col.MACHINES), int(Col.GANG_MACHINES)))
    start[columns & ~machines] = 0.0  # machines stay: the kept units may need them
    keep = columns & ((model.kind == Col.UNPLACED) | (model.kind == Col.MOVED))
    start[keep] = model.upper[keep]  # all replicas unplaced; every previous replica counted as moved
    empty = columns & (model.kind == Col.PATTERN) & (model.ref == 0)
    start[empty] = model.upper[empty]  # every twin follows the empty pattern (patterns.py)
    return start


class _Rows:
    """The model's matrix by row, and each entry's column."""

    def __init__(self, model: Model) -> None:
        self.entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts))
        self.model = model

    def activity(self, values: FloatArray) -> FloatArray:
        m = self.model
        activity: FloatArray = np.bincount(m.index, weights=m.value * values[self.entry_col],
                                           minlength=m.rows).astype(np.float64)
        return activity


def feasible_timed_start(model: Model, start: FloatArray, free: BoolArray,
                         max_rounds: int = 200) -> tuple[FloatArray, BoolArray] | None:
    """`start` (kept units as the LP places them, hours included; free units unplaced) and `free`, made to
    meet every row by settling machines and gang switches and freeing kept units; None if some row stays
    broken with no kept unit on it (the caller then solves the MIP whole)."""
    rows = _Rows(model)
    values, free = start.copy(), free.copy()
    real = model.unit < model.demand_rows  # machine and gang columns belong to no unit
    for _ in range(max_rounds):
        _settle(model, rows, values)
        activity = rows.activity(values)
        scale = np.maximum(1.0, np.abs(np.where(np.isfinite(model.rows_upper), model.rows_upper, 0.0)))
        over = activity > model.rows_upper + _TOL * scale
        under = activity < model.rows_lower - _TOL * np.maximum(1.0, np.abs(np.where(
            np.isfinite(model.rows_lower), model.rows_lower, 0.0)))
        if not (over.any() or under.any()):
            return values, free
        contribution = model.value * values[rows.entry_col]
        culprit = (over[model.index] & (contribution > _TOL)) | (under[model.index] & (contribution < -_TOL))
        cols = rows.entry_col[culprit]
        cols = cols[real[cols] & ~free[cols]]
        if not cols.size:
            return None
        chosen = np.zeros(model.demand_rows, dtype=np.bool_)
        chosen[model.unit[cols]] = True
        newly = real & chosen[np.where(real, model.unit, 0)]
        free |= newly
        values = nothing_placed(model, values, newly)
    return None


def _settle(model: Model, rows: _Rows, values: FloatArray) -> None:
    """Machines: the least whole number their rows allow (their coefficient is negative where they hold
    GPUs); then gang switches: on where the gang fits (their coefficient is positive in the fit row)."""
    for kind, on_fit in ((Col.MACHINES, False), (Col.GANG_MACHINES, False), (Col.GANG, True)):
        cols = np.flatnonzero(model.kind == kind)
        if not cols.size:
            continue
        values[cols] = 0.0
        activity = rows.activity(values)
        entries = np.isin(rows.entry_col, cols)
        ent_col, ent_row, ent_val = rows.entry_col[entries], model.index[entries], model.value[entries]
        if not on_fit:  # sum(gpus x) - per_node m <= 0: m >= (activity - upper) / per_node
            holds = ent_val < 0
            need = (activity[ent_row[holds]] - model.rows_upper[ent_row[holds]]) / -ent_val[holds]
            least = np.zeros(model.columns)
            np.maximum.at(least, ent_col[holds], need)
            values[cols] = np.minimum(np.ceil(least[cols] - _TOL), model.upper[cols])
        else:  # whole + k g <= limit: on only where k fits; off, the gated hours must be 0 (a kept unit freed)
            fits_row = ent_val > 0
            room = model.rows_upper[ent_row[fits_row]] - activity[ent_row[fits_row]] - ent_val[fits_row]
            fits = np.ones(model.columns, dtype=np.bool_)
            np.logical_and.at(fits, ent_col[fits_row], room >= -_TOL)
            values[cols] = np.where(fits[cols], 1.0, 0.0)
