"""Segments alike for one component's model (inventory revision 3, "Time"): the model counts classes
of segments, not segments.

Two segments of the week are alike for a component when the same of its units may run in both (every
window edge of the fleet cuts the week, but five weeknights are alike for a nightly batch and the
services beside it). In a class, the whole-segment replicas, the quotas and the capacity are the same
in every segment, so the model counts one segment of the class's length L_C = sum of its L_s:
- a deferrable column's hours h[c,C] <= L_C x[c], handed back to its segments in proportion to their
  lengths (h[c,s] = h[c,C] L_s / L_C), which gives every segment the class row's use
  (h[c,s] / L_s = h[c,C] / L_C) and keeps h[c,s] <= L_s x[c];
- a pay-per-use pool's shared machines m[p,C] are paid L_C hours: the least machines of every segment
  of the class are the same (the same whole-segment GPUs), and any answer of the segment model with
  more machines in one of them costs more and frees nothing that the class row does not free too;
- the gang rule holds in the class as in each of its segments (the same whole-segment replicas).
So the class model and the segment model have the same optimum, and every answer of the class model
is an answer of the segment model at the same cost (tests/core/placement/test_timed_fast_paths.py solves
both). A deferrable unit whose segments all fall in one class has its hours H there, substituted:
no hours columns at all. Planned against a previous plan, segments are alike only where every deferrable
replica it placed ran at one rate too (_previous_rates), so that the previous hours are an answer of the
class model (placement/previous_hours.py). On the bench's scheduled fleet (22 segments) a component has 5 classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hybridctl.core.placement.units import Unit
from hybridctl.core.solver.milp import Col, FloatArray, Model
from hybridctl.core.week.segments import Week


@dataclass(frozen=True)
class SegmentClasses:
    lengths: FloatArray  # hours of each class: the sum of its segments'
    segments: tuple[tuple[int, ...], ...]  # class -> the week's segments in it
    of_unit: tuple[tuple[int, ...], ...]  # unit -> the classes it may run in

    @property
    def count(self) -> int:
        return len(self.segments)


def segment_classes(units: list[Unit], week: Week) -> SegmentClasses:
    """The classes of the week's segments in which the same of these units may run (first segment order)."""
    n = len(week.segments)
    every = tuple(range(n))
    spans = [u.timing.segments if u.timing is not None else every for u in units]
    distinct = sorted(set(spans))
    member = np.zeros((len(distinct), n), dtype=np.bool_)
    for i, segs in enumerate(distinct):
        member[i, list(segs)] = True
    rates = _previous_rates(units, week)
    ids: dict[bytes, int] = {}
    class_of = [ids.setdefault(member[:, s].tobytes() + rates[:, s].tobytes(), len(ids)) for s in range(n)]
    segments: list[list[int]] = [[] for _ in ids]
    for s, c in enumerate(class_of):
        segments[c].append(s)
    lengths = np.array([sum(week.segments[s].hours for s in segs) for segs in segments], dtype=np.float64)
    of_span = {span: tuple(sorted({class_of[s] for s in span})) for span in distinct}
    return SegmentClasses(lengths, tuple(tuple(segs) for segs in segments), tuple(of_span[span] for span in spans))


def _previous_rates(units: list[Unit], week: Week) -> FloatArray:
    """Per deferrable unit and pool of the previous plan, the hours it ran per hour of each segment (rounded to
    what a plan file keeps, so that noise never splits a class; a split too many only costs a class). Segments
    alike but for these stay apart: handed back by length, a class's hours are the previous plan's again."""
    lengths = np.array([s.hours for s in week.segments], dtype=np.float64)
    rows = [np.asarray(hours, dtype=np.float64) for u in units for _, hours in sorted(u.previous_hours.items())
            if len(hours) == lengths.size]
    return np.round(np.array(rows) / lengths, 5) if rows else np.zeros((0, lengths.size))


def column_segment_hours(model: Model, values: FloatArray, units: list[Unit], week: Week,
                         classes: SegmentClasses) -> dict[int, dict[int, float]]:
    """Placement column -> week segment -> replica-hours of a deferrable column of more than one segment:
    its hours in each class handed to the class's segments by length. A deferrable column whose segments
    are one class has no hours columns: it runs in proportion to their lengths (timed_plan.segment_hours
    scales every column's hours to exactly H)."""
    found: dict[int, dict[int, float]] = {}
    for col in np.flatnonzero(model.kind == Col.HOURS).tolist():
        value = float(values[col])
        if value > 1e-9:
            x_col, c = divmod(int(model.ref[col]), classes.count)
            by_segment = found.setdefault(x_col, {})
            for s in classes.segments[c]:
                by_segment[s] = value * week.segments[s].hours / float(classes.lengths[c])
    for col in np.flatnonzero((model.kind == Col.PLACE) & (values > 0.5)).tolist():
        timing = units[int(model.unit[col])].timing
        if col not in found and timing is not None and timing.deferrable and len(timing.segments) > 1:
            found[col] = {s: float(values[col]) * week.segments[s].hours for s in timing.segments}
    return found
