"""The MILP as sparse arrays a solver can take directly: its columns' kinds, the model, and the
builder that collects column and row blocks (formulation.py and patterns.py add them)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import IntEnum

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


class Col(IntEnum):
    PLACE = 0
    UNPLACED = 1
    SITE = 2
    DOMAIN = 3
    MOVED = 4
    MACHINES = 5
    PATTERN = 6
    HOURS = 7  # a deferrable column's replica-hours in one segment of the week (timed_rows.py)
    GANG = 8  # whether gangs of one size run in a pool's segment beside its whole-segment replicas (timed_rows.py)
    # a committed pool's machines left for machine-sized replicas in a segment (timed_rows.py): raised with the
    # placements like MACHINES, and it ties integer machines to deferrable hours, as gangs do
    GANG_MACHINES = 9


@dataclass(frozen=True)
class Model:
    cost: FloatArray
    lower: FloatArray
    upper: FloatArray
    integer: npt.NDArray[np.bool_]
    kind: npt.NDArray[np.int8]  # a Col per column
    unit: IntArray  # the unit each column belongs to
    ref: IntArray  # pool index (PLACE, MOVED, MACHINES), site id (SITE), domain id (DOMAIN), -1 (UNPLACED)
    rows_lower: FloatArray
    rows_upper: FloatArray
    starts: npt.NDArray[np.int32]  # column-wise sparse matrix
    index: npt.NDArray[np.int32]
    value: FloatArray
    demand_rows: int  # rows 0..units-1 are each unit's replica balance
    # The cash the component pays whatever is placed (its committed pools), left out of `cost`: the
    # solver adds it as an objective offset, so that a relative gap means a share of the real bill.
    offset: float = 0.0
    # unit -> (paying site ids, patterns: one row per PATTERN column's ref) for twins counted exactly
    patterns: dict[int, tuple[IntArray, IntArray]] = field(default_factory=dict)
    # What each column adds to the month's total under the cost model, `offset` aside: its cost without the
    # penalty on unplaced replicas, the stability term and the tie-break (a budget row's coefficients,
    # solver/budget.py); None where the formulation gives none
    spend: FloatArray | None = None

    @property
    def columns(self) -> int:
        return int(self.cost.size)

    @property
    def rows(self) -> int:
        return int(self.rows_lower.size)


class Builder:
    """Collects column and row blocks, then packs them into one column-wise matrix."""

    def __init__(self) -> None:
        self.columns = 0
        self.rows = 0
        self.col_parts: list[tuple[FloatArray, FloatArray, bool, Col, IntArray, IntArray]] = []
        self.row_parts: list[tuple[FloatArray, FloatArray]] = []
        self.entries: list[tuple[IntArray, IntArray, FloatArray]] = []

    def add_columns(self, cost: FloatArray, upper: FloatArray, integer: bool, kind: Col, unit: IntArray,
                    ref: IntArray) -> IntArray:
        first = self.columns
        self.columns += int(cost.size)
        self.col_parts.append((cost, upper, integer, kind, unit, ref))
        return np.arange(first, self.columns, dtype=np.int64)

    def add_rows(self, lower: FloatArray, upper: FloatArray) -> int:
        first = self.rows
        self.rows += int(lower.size)
        self.row_parts.append((lower, upper))
        return first

    def add_entries(self, rows: IntArray, cols: IntArray, values: FloatArray) -> None:
        # one value for every entry is the common case (a timed model adds 6,000 small blocks): np.full is a
        # tenth of np.broadcast_to's cost there
        block = np.full(rows.shape, float(values.flat[0])) if values.size == 1 \
            else np.broadcast_to(values, rows.shape).astype(np.float64)
        self.entries.append((rows, cols, block))

    def build(self, demand_rows: int, offset: float = 0.0,
              patterns: dict[int, tuple[IntArray, IntArray]] | None = None) -> Model:
        sizes = [part[0].size for part in self.col_parts]
        cost = _floats([c[0] for c in self.col_parts])
        integer = np.repeat([c[2] for c in self.col_parts], sizes).astype(np.bool_)
        kind = np.repeat([int(c[3]) for c in self.col_parts], sizes).astype(np.int8)
        rows = _ints([e[0] for e in self.entries])
        cols = _ints([e[1] for e in self.entries])
        order = np.lexsort((rows, cols))
        starts = np.zeros(self.columns + 1, dtype=np.int32)
        np.cumsum(np.bincount(cols, minlength=self.columns), out=starts[1:])
        return Model(cost, np.zeros(self.columns), _floats([c[1] for c in self.col_parts]), integer, kind,
                     _ints([c[4] for c in self.col_parts]), _ints([c[5] for c in self.col_parts]),
                     _floats([r[0] for r in self.row_parts]), _floats([r[1] for r in self.row_parts]),
                     starts, rows[order].astype(np.int32), _floats([e[2] for e in self.entries])[order], demand_rows,
                     offset, patterns or {})


def _floats(parts: list[FloatArray]) -> FloatArray:
    return np.concatenate(parts).astype(np.float64) if parts else np.zeros(0, dtype=np.float64)


def _ints(parts: list[IntArray]) -> IntArray:
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def with_row(model: Model, cols: IntArray, coefs: FloatArray, lower: float, upper: float) -> Model:
    """The model with one more row over distinct `cols` (its index is the largest, so each column's
    entries stay sorted by row when it goes last)."""
    lengths = np.diff(model.starts).astype(np.int64)
    added = np.zeros(model.columns, dtype=np.int64)
    added[cols] = 1
    starts = np.zeros(model.columns + 1, dtype=np.int32)
    np.cumsum(lengths + added, out=starts[1:])
    index = np.empty(int(starts[-1]), dtype=np.int32)
    value = np.empty(int(starts[-1]), dtype=np.float64)
    shift = np.repeat(starts[:-1].astype(np.int64) - model.starts[:-1].astype(np.int64), lengths)
    old = np.arange(model.index.size, dtype=np.int64) + shift
    index[old] = model.index
    value[old] = model.value
    last = starts[cols + 1].astype(np.int64) - 1
    index[last] = model.rows
    value[last] = coefs
    return replace(model, rows_lower=np.append(model.rows_lower, lower), rows_upper=np.append(model.rows_upper, upper),
                   starts=starts, index=index, value=value)


def with_block(model: Model, cost: FloatArray, upper: FloatArray, kind: Col,
               entries: tuple[IntArray, IntArray, FloatArray], rows_lower: FloatArray, rows_upper: FloatArray, *,
               integer: bool, owner: tuple[IntArray, IntArray] | None = None) -> Model:
    """The model with columns (`cost`, `upper`, of `kind`; integer or continuous) and rows appended at once;
    `entries` (rows, columns, values) name rows and columns of the result, old or new (with_row's copy per row
    would cost a copy of the matrix each). `owner`: the new columns' (unit, ref), else they belong to no unit."""
    rows, cols, values = entries
    added = int(cost.size)
    entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts).astype(np.int64))
    all_cols = np.concatenate([entry_col, cols.astype(np.int64)])
    all_rows = np.concatenate([model.index.astype(np.int64), rows.astype(np.int64)])
    order = np.lexsort((all_rows, all_cols))
    starts = np.zeros(model.columns + added + 1, dtype=np.int32)
    np.cumsum(np.bincount(all_cols, minlength=model.columns + added), out=starts[1:])
    unit, ref = owner if owner is not None else (np.full(added, model.demand_rows, dtype=np.int64),
                                                 np.full(added, -1, dtype=np.int64))
    return replace(model, cost=np.concatenate([model.cost, cost]), lower=np.concatenate([model.lower, np.zeros(added)]),
                   upper=np.concatenate([model.upper, upper]),
                   integer=np.concatenate([model.integer, np.full(added, integer, dtype=np.bool_)]),
                   kind=np.concatenate([model.kind, np.full(added, int(kind), dtype=np.int8)]),
                   unit=np.concatenate([model.unit, unit]), ref=np.concatenate([model.ref, ref]),
                   rows_lower=np.concatenate([model.rows_lower, rows_lower]),
                   rows_upper=np.concatenate([model.rows_upper, rows_upper]),
                   starts=starts, index=all_rows[order].astype(np.int32),
                   value=np.concatenate([model.value, values.astype(np.float64)])[order])
