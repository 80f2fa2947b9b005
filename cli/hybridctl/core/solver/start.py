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

import math

import numpy as np
import numpy.typing as npt

from hybridctl.core.solver.milp import Col, Model

FloatArray = npt.NDArray[np.float64]
_TOL = 1e-9


class _Rows:
    """Row activities of the start, and the one raisable column (m or y) a row may have. The hot
    loop reads a few entries per column: Python lists beat numpy's per-call cost there."""

    def __init__(self, model: Model, values: FloatArray) -> None:
        self.model = model
        lengths = np.diff(model.starts)
        entry_col = np.repeat(np.arange(model.columns), lengths)
        activity = np.bincount(model.index, weights=model.value * values[entry_col], minlength=model.rows)
        raisable = np.isin(model.kind[entry_col], (int(Col.MACHINES), int(Col.GANG_MACHINES), int(Col.SITE))) \
            & (model.value < 0)
        aux = np.full(model.rows, -1, dtype=np.int64)
        aux_coef = np.zeros(model.rows)
        aux[model.index[raisable]] = entry_col[raisable]
        aux_coef[model.index[raisable]] = model.value[raisable]
        self.aux_array = aux
        self.activity: list[float] = activity.tolist()
        self.aux: list[int] = aux.tolist()
        self.aux_coef: list[float] = aux_coef.tolist()
        self.upper: list[float] = model.rows_upper.tolist()
        self.lower: list[float] = model.rows_lower.tolist()
        self.col_upper: list[float] = model.upper.tolist()
        self.starts: list[int] = model.starts.tolist()
        self.index: list[int] = model.index.tolist()
        self.value: list[float] = model.value.tolist()
        self.demand_rows = model.demand_rows

    def entries(self, col: int) -> tuple[list[int], list[float]]:
        lo, hi = self.starts[col], self.starts[col + 1]
        return self.index[lo:hi], self.value[lo:hi]

    def room(self, col: int, room: float) -> float:
        """`room` cut to what the column's rows with no raisable column can take."""
        for r, c in zip(*self.entries(col), strict=True):
            if c > 0 and r >= self.demand_rows and self.aux[r] < 0 and self.upper[r] < math.inf:
                room = min(room, math.floor((self.upper[r] - self.activity[r]) / c + _TOL))
        return room

    def raises(self, col: int, count: float, values: list[float]) -> dict[int, float] | None:
        """The raisable columns `count` more of `col` needs, or None if some row cannot take them."""
        rows, coefs = self.entries(col)
        needed: dict[int, float] = {}
        added: dict[int, float] = {}
        for r, c in zip(rows, coefs, strict=True):
            if r < self.demand_rows:  # a demand row is kept by lowering the unplaced column
                continue
            added[r] = c * count
            level, top = self.activity[r] + c * count, self.upper[r]
            if level <= top + _TOL:
                continue
            aux = self.aux[r]
            if aux < 0:
                return None
            raise_by = float(math.ceil((level - top) / -self.aux_coef[r] - _TOL))
            if values[aux] + raise_by > self.col_upper[aux] + _TOL:
                return None
            needed[aux] = max(needed.get(aux, 0.0), raise_by)
        for aux, raise_by in needed.items():  # the raised column's own rows (a pool's quota, a ceiling)
            for r, c in zip(*self.entries(aux), strict=True):
                if c > 0 and self.activity[r] + added.get(r, 0.0) + c * raise_by > self.upper[r] + _TOL:
                    return None
        return needed

    def apply(self, col: int, count: float, values: list[float]) -> None:
        for r, c in zip(*self.entries(col), strict=True):
            self.activity[r] += c * count
        values[col] += count


def greedy_start(model: Model, values: FloatArray) -> FloatArray:
    """`values` (every unit wholly unplaced, e.g. from _nothing_placed) with as many replicas placed
    as fit, cheapest first: a feasible solution of the model."""
    rows = _Rows(model, values)
    start: list[float] = values.tolist()
    place = np.flatnonzero(model.kind == Col.PLACE)
    unplaced = np.flatnonzero(model.kind == Col.UNPLACED)
    unplaced_of = np.full(int(model.unit.max(initial=-1)) + 1, -1, dtype=np.int64)
    unplaced_of[model.unit[unplaced]] = unplaced
    # effective cost: the column's own plus its share of the m or y it would raise
    entry_col = np.repeat(np.arange(model.columns), np.diff(model.starts))
    aux = rows.aux_array[model.index]
    linked = (aux >= 0) & (model.value > 0) & (model.kind[entry_col] == Col.PLACE)
    share = model.cost[aux[linked]] * model.value[linked] / -np.asarray(rows.aux_coef)[model.index[linked]]
    effective = model.cost + np.bincount(entry_col[linked], weights=share, minlength=model.columns)
    # units by penalty per replica (fixed work first), each unit's columns cheapest first
    order = place[np.lexsort((place, effective[place], model.unit[place], -model.cost[unplaced_of[model.unit[place]]]))]
    owners = model.unit[order]
    firsts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
    ends = np.r_[firsts[1:], order.size]
    domains = np.flatnonzero(model.kind == Col.DOMAIN)
    lower = model.lower.tolist()
    for first, end in zip(firsts.tolist(), ends.tolist(), strict=True):
        s = int(unplaced_of[owners[first]])
        for col in order[first:end].tolist():
            if start[s] - lower[s] < 1:
                break
            count, needed = _most(rows, col, s, min(start[s] - lower[s], rows.col_upper[col] - start[col]), start)
            if count >= 1 and needed is not None:
                for aux_col, raise_by in needed.items():
                    rows.apply(aux_col, raise_by, start)
                rows.apply(col, count, start)
                rows.apply(s, -count, start)
    _count_domains(rows, start, domains)
    for z in np.flatnonzero(model.kind == Col.MOVED).tolist():  # z >= before - x: moved exactly what left
        need = max((rows.lower[r] - (rows.activity[r] - start[z]) for r in rows.entries(z)[0]), default=0.0)
        rows.apply(z, max(0.0, need) - start[z], start)
    return np.array(start, dtype=np.float64)


def _most(rows: _Rows, col: int, s: int, room: float, start: list[float]) -> tuple[float, dict[int, float] | None]:
    """The most replicas (up to `room`) column `col` takes with every row kept: the rows with no
    raisable column bound it directly; the rest by trying all of it, then by bisection (each row
    only gets tighter with more replicas)."""
    def fits(count: float) -> dict[int, float] | None:
        needed = rows.raises(col, count, start)
        return needed if needed is not None and _unplaced_may_drop(rows, s, count) else None

    best: tuple[float, dict[int, float] | None] = (0.0, None)
    room = rows.room(col, room)
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


def _unplaced_may_drop(rows: _Rows, s: int, count: float) -> bool:
    """Lowering the unplaced column keeps its >= rows: a spread of 3 or more needs its domains
    counted before its last replica is placed, and they are counted at the end, so such a unit
    keeps one replica unplaced in the start (the MIP places it)."""
    return all(rows.activity[r] - c * count >= rows.lower[r] - _TOL
               for r, c in zip(*rows.entries(s), strict=True) if r >= rows.demand_rows and rows.lower[r] > -math.inf)


def _count_domains(rows: _Rows, start: list[float], domains: npt.NDArray[np.int64]) -> None:
    """v[d] = 1 where the unit has a replica in domain d (v <= replicas there)."""
    for v in domains.tolist():
        if all(rows.activity[r] + c >= rows.lower[r] - _TOL for r, c in zip(*rows.entries(v), strict=True) if c < 0):
            rows.apply(v, 1.0, start)
