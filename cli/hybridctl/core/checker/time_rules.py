"""The checker's statement of the time rules (inventory revision 3, "Time"), kept apart from the planner's
on purpose: it reads the windows from the inventory, cuts the week itself, and judges each rule on the
plan's own figures (segments, and each placement's hours per segment).

- the plan's segments are the week cut at every window edge of every workload, at the plan's week;
- a replica runs only inside its windows;
- a replica that runs its whole windows runs every hour of them; a deferrable one gets exactly its
  hours (H = hours_per_month x 168 / 730, within what its windows hold), at most L_s in a segment;
- in every segment, for every pool: committed, GPUs of whole-segment replicas + GPU-hours of the others
  / L_s <= capacity; pay-per-use, shared machines + the others' machines x hours / L_s <= the quota
  in machines;
- a gang runs in a segment only where its whole size fits beside the whole-segment replicas;
- committed pools (revision 4): a replica of at least GPUs per node holds whole machines of its own, and in
  every segment those replicas' machines (each one's x its hours / L_s) fit in the machines the smaller
  whole-segment replicas leave: floor((capacity - their GPUs) / GPUs per node). (An untimed plan holds every
  replica all month, where this is the GPU rule: machine-sized replicas fill their machines.)
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from datetime import date
from itertools import pairwise

from hybridctl.core.checker.rules import committed, per_node
from hybridctl.core.inventory.models import Inventory, Workload
from hybridctl.core.inventory.schedule import utc_intervals
from hybridctl.core.plan.model import Placement, Plan

_HOURS_TOLERANCE = 1e-3  # hours: plan files round hours to the microsecond's order
_WEEK_MINUTES = 7 * 24 * 60
# GPUs (or machines) a segment may seem over by: hours are written to the microhour, solved to 1e-7
_LOAD_TOLERANCE = 1e-3


def _week_monday(text: str) -> date | None:
    match = re.fullmatch(r"(\d{4})-W(\d{2})", text)
    if match is None:
        return None
    try:
        return date.fromisocalendar(int(match.group(1)), int(match.group(2)), 1)
    except ValueError:
        return None


def _windows(w: Workload, monday: date) -> list[tuple[int, int]]:
    """The workload's windows in UTC minutes of the week; windows that touch are one stretch (Saturday
    and Sunday all day: no edge at Sunday 00:00, where the same workloads may run on both sides)."""
    if w.schedule is None:
        return [(0, _WEEK_MINUTES)]
    joined: list[tuple[int, int]] = []
    for start, end in sorted(span for window in w.schedule.windows for span in utc_intervals(window, monday)):
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    return joined


def _inside(spans: list[tuple[int, int]], start_minute: float, end_minute: float) -> bool:
    """Whether [start, end) lies inside the windows (segments never straddle an edge, so its middle tells)."""
    middle = (start_minute + end_minute) / 2
    return any(a <= middle < b for a, b in spans)


def time_problems(inventory: Inventory, plan: Plan) -> list[str]:
    """Violations of the time rules; empty for a valid plan, and for an untimed one."""
    if not plan.segments and not plan.week:
        return []
    monday = _week_monday(plan.week)
    if monday is None:
        return [f"week: '{plan.week}' is not an ISO week"]
    workloads = {w.name: w for w in inventory.workloads}
    spans = {w.name: _windows(w, monday) for w in inventory.workloads}
    edges = sorted({0, _WEEK_MINUTES} | {e for s in spans.values() for span in s for e in span})
    expected = [(a / 60, b / 60) for a, b in pairwise(edges)]
    found = [(s.start_hour, s.end_hour) for s in plan.segments]
    if len(found) != len(expected) or any(abs(a - c) > _HOURS_TOLERANCE or abs(b - d) > _HOURS_TOLERANCE
                                          for (a, b), (c, d) in zip(found, expected, strict=True)):
        return [f"segments: the plan's {len(found)} segments are not the week {plan.week} cut at every window "
                f"edge ({len(expected)} segments)"]
    lengths = [b - a for a, b in expected]
    problems: list[str] = []
    whole_load: dict[tuple[str, int], float] = defaultdict(float)  # (pool, segment) -> GPUs of whole replicas
    whole_sizes: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)  # and their (size, replicas)
    shared: dict[tuple[str, int], list[tuple[Placement, float]]] = defaultdict(list)  # deferrable, their hours
    for pl in plan.placements:
        w = workloads.get(pl.workload)
        if w is None or pl.replicas <= 0:
            continue
        if len(pl.segment_hours) != len(expected):
            problems.append(f"{pl.workload} in {pl.pool}: no hours per segment of the week")
            continue
        inside = [_inside(spans[w.name], a * 60, b * 60) for a, b in expected]
        whole = _runs_whole(w, spans[w.name])
        for s, hours in enumerate(pl.segment_hours):
            if hours < -_HOURS_TOLERANCE or hours > lengths[s] + _HOURS_TOLERANCE:
                problems.append(f"{pl.workload} in {pl.pool}: {hours:g} h in segment {s + 1}, which lasts "
                                f"{lengths[s]:g} h")
            elif hours > _HOURS_TOLERANCE and not inside[s]:
                problems.append(f"{pl.workload} in {pl.pool}: runs {hours:g} h in segment {s + 1} "
                                f"({_clock(expected[s])}), outside its windows")
        if whole:
            short = [s for s in range(len(expected)) if inside[s] and pl.segment_hours[s] < lengths[s] - _HOURS_TOLERANCE]
            if short:
                problems.append(f"{pl.workload} in {pl.pool}: runs its whole windows, and not all of segment "
                                f"{short[0] + 1} ({_clock(expected[short[0]])})")
            for s in range(len(expected)):
                if inside[s]:
                    whole_load[(pl.pool, s)] += pl.gpus
                    whole_sizes[(pl.pool, s)].append((pl.gpus_per_replica or pl.gpus // pl.replicas, pl.replicas))
        else:
            need = min(pl.hours_per_month * 168 / 730, sum(b - a for a, b in spans[w.name]) / 60)
            got = sum(pl.segment_hours)
            if abs(got - need) > _HOURS_TOLERANCE * max(1.0, len(expected)):
                problems.append(f"{pl.workload} in {pl.pool}: {got:g} h a week placed, it needs {need:g} h "
                                "(hours_per_month x 168 / 730)")
            for s, hours in enumerate(pl.segment_hours):
                if hours > _HOURS_TOLERANCE:
                    shared[(pl.pool, s)].append((pl, hours))
    problems.extend(_capacity(inventory, lengths, whole_load, shared))
    problems.extend(_gang_machines(inventory, lengths, whole_sizes, shared))
    return problems


def _runs_whole(w: Workload, spans: list[tuple[int, int]]) -> bool:
    weekly = w.hours * 168 / 730
    window = w.schedule.window_hours if w.schedule is not None else 168.0
    return weekly >= window - 0.01


def _capacity(inventory: Inventory, lengths: list[float], whole_load: dict[tuple[str, int], float],
              shared: dict[tuple[str, int], list[tuple[Placement, float]]]) -> list[str]:
    problems: list[str] = []
    for site in inventory.sites:
        for pool in site.pools:
            node = per_node(site, pool)
            is_committed = committed(site, pool)
            limit = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
            limit_units = float(limit) if is_committed else float(limit // node)
            for s, length in enumerate(lengths):
                whole = whole_load.get((pool.name, s), 0.0)
                held = whole if is_committed else float(math.ceil(whole / node - 1e-9))
                others = shared.get((pool.name, s), [])
                load = held
                for pl, hours in others:
                    size = pl.gpus_per_replica or pl.gpus // pl.replicas
                    unit = size if is_committed else math.ceil(size / node)
                    load += pl.replicas * unit * hours / length
                    if held + unit > limit_units + 1e-9:
                        problems.append(f"gang: {pl.workload} runs in segment {s + 1} of pool {pool.name}, where "
                                        f"its {size} GPUs do not fit beside the {whole:g} GPUs that run the whole "
                                        "segment")
                if load > limit_units + _LOAD_TOLERANCE:
                    what = "GPUs" if is_committed else "machines"
                    problems.append(f"pool {pool.name}: segment {s + 1} holds {load:.2f} {what} "
                                    f"(GPU-hours / {length:g} h), capacity {limit_units:g}")
    return problems


def _gang_machines(inventory: Inventory, lengths: list[float], whole_sizes: dict[tuple[str, int], list[tuple[int, int]]],
                   shared: dict[tuple[str, int], list[tuple[Placement, float]]]) -> list[str]:
    """Whole machines for machine-sized replicas on committed pools, segment by segment."""
    problems: list[str] = []
    for site in inventory.sites:
        for pool in site.pools:
            if not committed(site, pool):
                continue
            node = per_node(site, pool)
            capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
            for s, length in enumerate(lengths):
                smaller = sum(size * n for size, n in whole_sizes.get((pool.name, s), []) if size < node)
                held = float(sum(n * math.ceil(size / node) for size, n in whole_sizes.get((pool.name, s), [])
                                 if size >= node))
                gangs = 0
                for pl, hours in shared.get((pool.name, s), []):
                    size = pl.gpus_per_replica or pl.gpus // pl.replicas
                    if size >= node:
                        held += pl.replicas * math.ceil(size / node) * hours / length
                        gangs += 1
                left = max(capacity - smaller, 0) // node
                if gangs and held > left + _LOAD_TOLERANCE:
                    problems.append(f"whole machines: pool {pool.name}'s machine-sized replicas hold {held:.2f} "
                                    f"machines of {node} GPUs in segment {s + 1} ({_clock((sum(lengths[:s]), sum(lengths[:s + 1])))}), "
                                    f"where the {smaller} GPUs of smaller whole-segment replicas leave {left}")
    return problems


def _clock(segment: tuple[float, float]) -> str:
    days = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

    def at(hour: float) -> str:
        day, rest = divmod(round(hour * 60), 24 * 60)
        return f"{days[day % 7]} {rest // 60:02d}:{rest % 60:02d}"

    return f"{at(segment[0])}-{at(segment[1])} UTC"
