"""A feasible plan without the solver: the greedy start.

When the solver runs out of time (a huge model, a loaded machine), the planner still owes the
user a plan that respects every rule, marked as not proven. This builds one from the model's
own rows, so it is feasible by construction: units in order of their penalty per replica
(fixed work first), each unit's replicas in its placement columns of least effective cost,
as many as every row allows. Two kinds of column exist only to be raised with placements: the
machines of a pay-per-use pool (m) and the sites that pay data movement (y); a placement that
needs one raises it, and its price counts in the effective cost. Twins counted by patterns
(patterns.py) keep the empty pattern, so they are placed only where data movement is free. The
same start is handed to the MIP, which can only improve on it.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from hybridctl.core.plan.milp import Col, Model

FloatArray = npt.NDArray[np.float64]
_TOL = 1e-9
COLUMNS_PER_UNIT = 64  # a unit's cheapest placements tried: a start need not search every pool


class _Rows:
    """Row activities of the start, and the one raisable column (m or y) a row may have."""

    def __init__(self, model: Model, values: FloatArray) -> None:
        self.model = model
        lengths = np.diff(model.starts)
        entry_col = np.repeat(np.arange(model.columns), lengths)
        self.activity: FloatArray = np.bincount(model.index, weights=model.value * values[entry_col],
                                                minlength=model.rows).astype(np.float64)
        raisable = np.isin(model.kind[entry_col], (int(Col.MACHINES), int(Col.SITE))) & (model.value < 0)
        self.aux = np.full(model.rows, -1, dtype=np.int64)
        self.aux_coef = np.zeros(model.rows)
        self.aux[model.index[raisable]] = entry_col[raisable]
        self.aux_coef[model.index[raisable]] = model.value[raisable]

    def entries(self, col: int) -> tuple[npt.NDArray[np.int32], FloatArray]:
        lo, hi = int(self.model.starts[col]), int(self.model.starts[col + 1])
        return self.model.index[lo:hi], self.model.value[lo:hi]

    def raises(self, col: int, count: float, values: FloatArray) -> dict[int, float] | None:
        """The raisable columns `count` more of `col` needs, or None if some row cannot take them."""
        rows, coefs = self.entries(col)
        balanced = rows >= self.model.demand_rows  # a demand row is kept by lowering the unplaced column
        rows, coefs = rows[balanced], coefs[balanced]
        after = self.activity[rows] + coefs * count
        needed: dict[int, float] = {}
        upper = self.model.rows_upper[rows]
        for r, level, top in zip(rows.tolist(), after.tolist(), upper.tolist(), strict=True):
            if level <= top + _TOL:
                continue
            aux = int(self.aux[r])
            if aux < 0:
                return None
            raise_by = float(np.ceil((level - top) / -self.aux_coef[r] - _TOL))
            if values[aux] + raise_by > self.model.upper[aux] + _TOL:
                return None
            needed[aux] = max(needed.get(aux, 0.0), raise_by)
        for aux, raise_by in needed.items():  # the raised column's own rows (a pool's quota, a ceiling)
            aux_rows, aux_coefs = self.entries(aux)
            positive = aux_coefs > 0
            level = self.activity[aux_rows] + np.where(aux_rows[:, None] == rows[None, :], coefs * count, 0.0).sum(1)
            if np.any(level[positive] + aux_coefs[positive] * raise_by > self.model.rows_upper[aux_rows][positive] + _TOL):
                return None
        return needed

    def apply(self, col: int, count: float, values: FloatArray) -> None:
        rows, coefs = self.entries(col)
        self.activity[rows] += coefs * count
        values[col] += count


def greedy_start(model: Model, values: FloatArray) -> FloatArray:
    """`values` (every unit wholly unplaced, e.g. from _nothing_placed) with as many replicas placed
    as fit, cheapest first: a feasible solution of the model."""
    start = values.copy()
    rows = _Rows(model, start)
    place = np.flatnonzero(model.kind == Col.PLACE)
    unplaced = np.flatnonzero(model.kind == Col.UNPLACED)
    unplaced_of = np.full(int(model.unit.max(initial=-1)) + 1, -1, dtype=np.int64)
    unplaced_of[model.unit[unplaced]] = unplaced
    # effective cost: the column's own plus its share of the m or y it would raise
    entry_col = np.repeat(np.arange(model.columns), np.diff(model.starts))
    aux = rows.aux[model.index]
    linked = (aux >= 0) & (model.value > 0) & (model.kind[entry_col] == Col.PLACE)
    share = model.cost[aux[linked]] * model.value[linked] / -rows.aux_coef[model.index[linked]]
    effective = model.cost + np.bincount(entry_col[linked], weights=share, minlength=model.columns)
    # units by penalty per replica (fixed work first), each unit's columns cheapest first
    order = place[np.lexsort((place, effective[place], model.unit[place], -model.cost[unplaced_of[model.unit[place]]]))]
    owners = model.unit[order]
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    ends = np.r_[firsts[1:], order.size]
    domains = np.flatnonzero(model.kind == Col.DOMAIN)
    for first, end in zip(firsts.tolist(), ends.tolist(), strict=True):
        s = int(unplaced_of[owners[first]])
        for col in order[first:min(end, first + COLUMNS_PER_UNIT)].tolist():
            room = min(start[s] - model.lower[s], model.upper[col] - start[col])
            if start[s] - model.lower[s] < 1:
                break
            count, needed = _most(rows, model, col, s, room, start)
            if count >= 1 and needed is not None:
                for aux_col, raise_by in needed.items():
                    rows.apply(aux_col, raise_by, start)
                rows.apply(col, count, start)
                rows.apply(s, -count, start)
    _count_domains(model, rows, start, domains)
    moved = np.flatnonzero(model.kind == Col.MOVED)
    for z in moved.tolist():  # z >= before - x: moved exactly what left
        r, _ = rows.entries(z)
        need = float(np.max(model.rows_lower[r] - (rows.activity[r] - start[z]), initial=0.0))
        rows.apply(z, max(0.0, need) - start[z], start)
    return start


def _most(rows: _Rows, model: Model, col: int, s: int, room: float,
          start: FloatArray) -> tuple[float, dict[int, float] | None]:
    """The most replicas (up to `room`) column `col` takes with every row kept: the rows with no
    raisable column bound it directly; the rest by trying all of it, then by bisection (each row
    only gets tighter with more replicas)."""
    def fits(count: float) -> dict[int, float] | None:
        needed = rows.raises(col, count, start)
        return needed if needed is not None and _unplaced_may_drop(model, rows, s, count) else None

    r, c = rows.entries(col)
    direct = (r >= model.demand_rows) & (rows.aux[r] < 0) & (c > 0)
    if direct.any():
        room = min(room, float(np.floor(np.min((model.rows_upper[r[direct]] - rows.activity[r[direct]]) / c[direct])
                                        + _TOL)))
    best: tuple[float, dict[int, float] | None] = (0.0, None)
    if room < 1:
        return best
    needed = fits(float(int(room)))
    if needed is not None:
        return float(int(room)), needed
    lo, hi = 1, int(room) - 1
    while lo <= hi:
        mid = (lo + hi) // 2
        needed = fits(float(mid))
        if needed is None:
            hi = mid - 1
        else:
            best, lo = (float(mid), needed), mid + 1
    return best


def _unplaced_may_drop(model: Model, rows: _Rows, s: int, count: float) -> bool:
    """Lowering the unplaced column keeps its >= rows: a spread of 3 or more needs its domains
    counted before its last replica is placed, and they are counted at the end, so such a unit
    keeps one replica unplaced in the start (the MIP places it)."""
    r, c = rows.entries(s)
    lower_rows = np.isfinite(model.rows_lower[r]) & (r >= model.demand_rows)
    if not lower_rows.any():
        return True
    return bool(np.all(rows.activity[r[lower_rows]] - c[lower_rows] * count >= model.rows_lower[r[lower_rows]] - _TOL))


def _count_domains(model: Model, rows: _Rows, start: FloatArray, domains: npt.NDArray[np.int64]) -> None:
    """v[d] = 1 where the unit has a replica in domain d (v <= replicas there)."""
    for v in domains.tolist():
        r, c = rows.entries(v)
        if np.all(rows.activity[r[c < 0]] + c[c < 0] >= model.rows_lower[r[c < 0]] - _TOL):
            rows.apply(v, 1.0, start)
