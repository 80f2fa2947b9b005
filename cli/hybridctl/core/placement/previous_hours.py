"""A previous plan kept (spec, "Plans are reproducible"): an unchanged inventory gets its plan back, and a change
moves only what it must, deferrable replicas keeping their hours per segment unless it forces them to move.

The stability term (formulation.py) prices replicas moved away from their pools, but a deferrable replica's
hours within its windows (timed_rows.py) cost nothing: any spread the capacity allows is as cheap as any other,
and the solver picked another one each time (the enterprise example's own plan came back with 16 of its 26
placements re-timed and two pools at other peaks). Three things keep them:
- the segments are alike for a component only where every deferrable replica of the previous plan ran at one
  rate too (segment_classes.py), so that the previous hours are an answer of the class model;
- previous_start makes the previous plan an answer of the model, the solver's start (solve.py): with the same
  inputs it is still optimal, the solver replaces it only with a strictly cheaper answer, and it is the
  answer wherever the solver finds none cheaper, whatever its work allowed;
- keep_hours then solves the hours alone again, everything else held where the solver put it, for the fewest
  replica-hours away from the previous plan's: an LP (the gang switches held, on wherever a gang fits), exact
  where the work bound lets the first solve stop within its gap, and free of cost (hours cost nothing there).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import overload

import numpy as np

from hybridctl.core.placement.segment_classes import SegmentClasses
from hybridctl.core.placement.timed_plan import replica_weekly_hours
from hybridctl.core.placement.units import Unit
from hybridctl.core.plan.model import Plan, PlanSegment
from hybridctl.core.solver import highs_run
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Col, FloatArray, Model, with_block
from hybridctl.core.solver.start import greedy_start
from hybridctl.core.solver.timed_start import feasible_timed_start, nothing_placed
from hybridctl.core.week.segments import Week

_TOL = 1e-6
# the share of its bound by which the previous plan's start keeps inside every row (solver tolerances are 1e-7)
START_MARGIN = 1e-6


def previous_hours(previous: Plan | None, week: Week | None) -> dict[str, dict[str, tuple[float, ...]]]:
    """demand key -> pool -> hours each replica ran in each segment of `week`, from the previous plan's placements.
    A previous plan cut otherwise (a window edited, another week's daylight saving) has its hours laid on the
    week's segments where they ran by the clock."""
    if previous is None or week is None or not previous.segments:
        return {}
    cut = [PlanSegment(s.start_hour, s.end_hour) for s in week.segments]
    found: dict[str, dict[str, tuple[float, ...]]] = defaultdict(dict)
    for placement in previous.placements:
        if len(placement.segment_hours) == len(previous.segments):
            hours = placement.segment_hours if tuple(previous.segments) == tuple(cut) else \
                _laid_on(placement.segment_hours, previous.segments, cut)
            found[placement.demand or placement.workload][placement.pool] = hours
    return found


def _laid_on(hours: tuple[float, ...], was: tuple[PlanSegment, ...], now: list[PlanSegment]) -> tuple[float, ...]:
    """Hours per segment of `was`, spread evenly over each, summed over the segments of `now` they overlap."""
    out = [0.0] * len(now)
    for h, old in zip(hours, was, strict=True):
        if h <= 0 or old.hours <= 0:
            continue
        for k, new in enumerate(now):
            overlap = min(old.end_hour, new.end_hour) - max(old.start_hour, new.start_hour)
            if overlap > 0:
                out[k] += h * overlap / old.hours
    return tuple(out)


def _class_hours(unit: Unit, p: int, classes: SegmentClasses, c: int) -> float | None:
    """The replica-hours the unit's replicas in pool p ran in class c in the previous plan (None: it had none there)."""
    hours = unit.previous_hours.get(p)
    if hours is None:
        return None
    return unit.previous.get(p, 0) * float(sum(hours[s] for s in classes.segments[c]))


def _hours_columns(model: Model, classes: SegmentClasses | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The hours columns, and of each its placement column and class (timed_rows.py's ref)."""
    cols = np.flatnonzero(model.kind == Col.HOURS)
    if classes is None or not cols.size:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    x_col, c = np.divmod(model.ref[cols], classes.count)
    return cols, x_col, c


@dataclass(frozen=True)
class PreviousStart:
    values: FloatArray  # the previous plan as an answer of the model
    hours_kept: bool  # its hours are keep_hours' own (held inside the rows by no margin): nothing to bring back


def previous_start(model: Model, units: list[Unit], classes: SegmentClasses | None,
                   effort: Effort) -> PreviousStart | None:
    """The previous plan as an answer of the model, or None without one: each unit's replicas where they were
    (a unit whose pools no longer take them starts unplaced), its hours as they ran, the machines, sites, domains
    and gang switches they need; the work it did not place, placed greedily as far as it fits."""
    if not any(u.previous for u in units):
        return None
    values = nothing_placed(model, model.lower.copy(), np.ones(model.columns, dtype=np.bool_))
    column_of = _previous_columns(model, units)
    unplaced = {int(model.unit[col]): int(col) for col in np.flatnonzero(model.kind == Col.UNPLACED)}
    moved = {(int(model.unit[col]), int(model.ref[col])): int(col) for col in np.flatnonzero(model.kind == Col.MOVED)}
    hours, x_of_hours, class_of = _hours_columns(model, classes)
    hours_of: dict[int, list[tuple[int, int]]] = defaultdict(list)  # placement column -> (hours column, class)
    for h, x, c in zip(hours.tolist(), x_of_hours.tolist(), class_of.tolist(), strict=True):
        hours_of[x].append((h, c))
    kept = np.zeros(model.demand_rows, dtype=np.bool_)
    for u, unit in enumerate(units):
        if not unit.previous:
            continue
        s = unplaced[u]
        columns = {p: column_of[(u, p)] for p in unit.previous}
        if not _placed_as_before(model, values, unit, float(model.upper[s] - model.lower[s]), columns, hours_of,
                                 classes):
            continue
        values[s] -= sum(unit.previous.values())
        for p, n in unit.previous.items():
            values[moved[(u, p)]] = n - values[columns[p]]
        kept[u] = True
    _settle(model, values)
    # the hours as the model counts them: a plan file's are rounded, and a row at its capacity breaks by a hair, which
    # a later stage's rows (priority.py) may not forgive: then the start keeps a margin inside every row, or is none
    timed = keep_hours(model, values, units, classes, effort)
    exact = _breach(model, timed) <= 0
    if not exact:
        inside = keep_hours(model, values, units, classes, effort, margin=START_MARGIN)
        if inside is None:  # some row is full to its bound where the hours breach it: no start
            return None
        timed = inside
    real = model.unit < model.demand_rows
    free = real & ~kept[np.where(real, model.unit, 0)]
    repaired = feasible_timed_start(model, timed, free)
    if repaired is None:
        return None
    return PreviousStart(greedy_start(model, repaired[0]), exact)


def _previous_columns(model: Model, units: list[Unit]) -> dict[tuple[int, int], int]:
    """(unit, pool) -> its placement column, for the pools the previous plan used (found by sorting, not by a
    dictionary of a fleet's every column)."""
    place = np.flatnonzero(model.kind == Col.PLACE)
    width = int(model.ref[place].max(initial=0)) + 1
    keys = model.unit[place].astype(np.int64) * width + model.ref[place]
    order = np.argsort(keys, kind="stable")
    wanted = [(u, p) for u, unit in enumerate(units) for p in unit.previous]
    asked = np.array([u * width + p for u, p in wanted], dtype=np.int64)
    found = place[order[np.searchsorted(keys[order], asked)]] if asked.size else np.zeros(0, dtype=np.int64)
    return {pair: int(col) for pair, col in zip(wanted, found.tolist(), strict=True)}


def _placed_as_before(model: Model, values: FloatArray, unit: Unit, room: float, columns: dict[int, int],
                      hours_of: dict[int, list[tuple[int, int]]], classes: SegmentClasses | None) -> bool:
    """Set the unit's placements (`columns`: pool -> its placement column) and hours of the previous plan in
    `values`, unless the model cannot take them as they were (`room`: the replicas it may place): then nothing."""
    if sum(unit.previous.values()) > room + _TOL:
        return False
    settings: dict[int, float] = {}
    for p, n in unit.previous.items():
        col = columns[p]
        if n > model.upper[col] + _TOL:
            return False
        settings[col] = float(n)
        timed = hours_of.get(col)
        if not timed:
            continue
        assert classes is not None
        given = [_class_hours(unit, p, classes, c) for _, c in timed]
        total = sum(h or 0.0 for h in given)
        if any(h is None for h in given) or total <= 0:  # it ran otherwise before (untimed, or not deferrable)
            return False
        # a plan file's hours are rounded: a shortfall of the model's "at least H" goes where a class has room
        values_of = [min(ran or 0.0, float(classes.lengths[c]) * n) for (_, c), ran in zip(timed, given, strict=True)]
        spare = [float(classes.lengths[c]) * n - v for (_, c), v in zip(timed, values_of, strict=True)]
        short = replica_weekly_hours(unit, p) * n * (1 + 1e-9) - sum(values_of)
        if short > sum(spare):
            return False
        if short > 0:
            values_of = [v + short * r / sum(spare) for v, r in zip(values_of, spare, strict=True)]
        for (h, _), value in zip(timed, values_of, strict=True):
            settings[h] = value
    for col, value in settings.items():
        values[col] = value
    return True


def _settle(model: Model, values: FloatArray) -> None:
    """The columns that follow `values`' placements: the data-movement sites y and machines m, the fewest whole
    ones that hold them, and the failure domains v, 1 where the unit has a replica."""
    entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts))
    for kind in (Col.SITE, Col.MACHINES, Col.DOMAIN):
        cols = np.flatnonzero(model.kind == kind)
        if not cols.size:
            continue
        values[cols] = 0.0
        activity = np.bincount(model.index, weights=model.value * values[entry_col], minlength=model.rows)
        linked = np.isin(entry_col, cols) & (model.value < 0)
        rows, coef, owner = model.index[linked], -model.value[linked], entry_col[linked]
        if kind is Col.DOMAIN:  # x in d - v >= 0: on where a replica is there
            least = np.where(activity[rows] >= 1 - _TOL, 1.0, 0.0)
        else:  # sum x - link y <= 0, sum g x - per_node m <= 0
            least = np.ceil((activity[rows] - model.rows_upper[rows]) / coef - _TOL)
        found = np.zeros(model.columns)
        np.maximum.at(found, owner, least)
        values[cols] = np.clip(found[cols], 0.0, model.upper[cols])


@overload
def keep_hours(model: Model, values: FloatArray, units: list[Unit], classes: SegmentClasses | None,
               effort: Effort) -> FloatArray: ...


@overload
def keep_hours(model: Model, values: FloatArray, units: list[Unit], classes: SegmentClasses | None,
               effort: Effort, *, margin: float) -> FloatArray | None: ...


def keep_hours(model: Model, values: FloatArray, units: list[Unit], classes: SegmentClasses | None,
               effort: Effort, *, margin: float = 0.0) -> FloatArray | None:
    """`values` with the deferrable replicas' hours chosen again, all else held, for the fewest replica-hours away
    from the previous plan's (hours in a class where a replica did not run count whole). The hours and gang
    switches cost nothing in the model: the cost stays what it was. With a `margin`, every row is kept that share
    of its bound inside it (a capacity, a quota), or None when none such is found."""
    hours, x_of_hours, class_of = _hours_columns(model, classes)
    if not hours.size or not any(u.previous_hours for u in units):
        return values
    assert classes is not None
    ran = np.full(hours.size, np.nan)  # NaN: the replica had no hours in that pool, none to keep
    for i, (u, x, c) in enumerate(zip(model.unit[hours].tolist(), x_of_hours.tolist(), class_of.tolist(),
                                      strict=True)):
        found = _class_hours(units[u], int(model.ref[x]), classes, c)
        if found is not None:
            ran[i] = found
    cost = np.zeros(model.columns)
    cost[hours[ran == 0]] = 1.0  # where it ran nothing, its hours are what it moved
    # elsewhere away = |h - ran|, a column of its own: h - away <= ran and h + away >= ran
    far = np.flatnonzero(ran > 0)
    n = far.size
    away = model.columns + np.arange(n, dtype=np.int64)
    below, above = model.rows + 2 * np.arange(n, dtype=np.int64), model.rows + 2 * np.arange(n, dtype=np.int64) + 1
    extended = with_block(
        model, np.ones(n), np.full(n, np.inf), Col.HOURS,
        (np.concatenate([below, below, above, above]), np.concatenate([hours[far], away, hours[far], away]),
         np.concatenate([np.ones(n), -np.ones(n), np.ones(n), np.ones(n)])),
        np.ravel(np.column_stack([np.full(n, -np.inf), ran[far]])), np.ravel(np.column_stack([ran[far], np.full(n, np.inf)])),
        integer=False)  # continuous, as hours are
    extended = replace(extended, cost=np.concatenate([cost, np.ones(n)]), offset=0.0)
    values = _open_gangs(model, values)
    start = np.append(values, np.abs(values[hours[far]] - ran[far]))
    free = np.concatenate([hours, away])
    if margin:
        extended = _inside(extended, start, free, margin)
    # the gang switches held, on wherever a gang fits: an LP, which ends at its optimum
    run = highs_run.run(extended, free, start, integer=False, effort=effort, gap=0.0)
    if run.values is None or (not margin and run.objective > float(extended.cost @ start) + _TOL):
        return None if margin else values
    kept = values.copy()
    kept[hours] = np.maximum(run.values[hours], 0.0)
    return kept


def _breach(model: Model, values: FloatArray) -> float:
    """How far `values` leave a row beyond a solver's tolerance (1e-9 of its bound): 0 when none does."""
    entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts))
    activity = np.bincount(model.index, weights=model.value * values[entry_col], minlength=model.rows)
    with np.errstate(invalid="ignore"):
        over = np.where(np.isfinite(model.rows_upper), activity - model.rows_upper
                        - 1e-9 * np.maximum(1.0, np.abs(model.rows_upper)), 0.0)
        under = np.where(np.isfinite(model.rows_lower), model.rows_lower - activity
                         - 1e-9 * np.maximum(1.0, np.abs(model.rows_lower)), 0.0)
    return float(max(over.max(initial=0.0), under.max(initial=0.0), 0.0))


def _open_gangs(model: Model, values: FloatArray) -> FloatArray:
    """`values` with every gang switch on wherever its gang fits beside the whole-segment replicas (whole + k g <=
    limit): a switch costs nothing and on it only lets hours run, so the hours are free to go back."""
    gangs = np.flatnonzero(model.kind == Col.GANG)
    if not gangs.size:
        return values
    opened = values.copy()
    opened[gangs] = 0.0
    entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts))
    activity = np.bincount(model.index, weights=model.value * opened[entry_col], minlength=model.rows)
    fit = np.isin(entry_col, gangs) & (model.value > 0)
    rows = model.index[fit]
    fits = np.ones(model.columns, dtype=np.bool_)
    np.logical_and.at(fits, entry_col[fit], activity[rows] + model.value[fit] <= model.rows_upper[rows] + _TOL)
    opened[gangs] = np.where(fits[gangs], 1.0, 0.0)
    return opened


def _inside(model: Model, values: FloatArray, free: np.ndarray, margin: float) -> Model:
    """The model with the rows of a capacity or a quota (a bound of 0 is a placement's own hours or a gang's
    switch, kept as it is) drawn `margin` of their bound inside it, by no more than half the room the columns
    held at `values` leave them."""
    held = values.copy()
    held[free] = 0.0
    entry_col = np.repeat(np.arange(model.columns, dtype=np.int64), np.diff(model.starts))
    fixed = np.bincount(model.index, weights=model.value * held[entry_col], minlength=model.rows)
    ranged = model.rows_lower < model.rows_upper
    with np.errstate(invalid="ignore"):
        top = np.where(np.isfinite(model.rows_upper) & ranged,
                       np.minimum(margin * np.abs(model.rows_upper), np.maximum(model.rows_upper - fixed, 0.0) / 2), 0.0)
        bottom = np.where(np.isfinite(model.rows_lower) & ranged,
                          np.minimum(margin * np.abs(model.rows_lower), np.maximum(fixed - model.rows_lower, 0.0) / 2),
                          0.0)
    return replace(model, rows_lower=model.rows_lower + bottom, rows_upper=model.rows_upper - top)
