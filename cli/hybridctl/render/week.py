"""The week strip of a timed plan: each pool in use over the plan's week, three hours a cell.

    week 2026-W48 (UTC, 11 segments)  Mon     Tue     Wed     Thu     Fri     Sat     Sun
    own      16 GPUs                  ▄▆▆▆▄▄▆▆▆▄▄▆▆▆▄▄▆▆▆▄▄▆▆▆▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄▄
A cell's shade is the share of the pool's GPUs held in those hours (GPU-hours / (capacity x 3 h)).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from hybridctl.core.plan.model import Plan
from hybridctl.core.week.clock import DAYS
from hybridctl.core.week.usage import pool_weeks

_SHADES = " ▁▂▃▄▅▆▇█"
_CELL_HOURS = 3
_CELLS = 168 // _CELL_HOURS


def week_strip_lines(plan: Plan) -> list[str]:
    """The strip as lines of text (no markup); [] for an untimed plan."""
    if not plan.segments:
        return []
    capacity = {u.pool: u.capacity_gpus for u in plan.pools}
    rows: list[tuple[str, str]] = []
    for week in pool_weeks(plan):
        if not any(week.gpus):
            continue
        cells = []
        for cell in range(_CELLS):
            start, end = cell * _CELL_HOURS, (cell + 1) * _CELL_HOURS
            gpu_hours = sum(g * max(0.0, min(end, s.end_hour) - max(start, s.start_hour))
                            for g, s in zip(week.gpus, plan.segments, strict=True))
            share = gpu_hours / max(capacity.get(week.pool, 0) * _CELL_HOURS, 1e-9)
            # a share under 1/16 still shows (▁): a blank cell read as nothing held beside the `·` that means it
            cells.append(_SHADES[min(len(_SHADES) - 1, max(1, round(share * (len(_SHADES) - 1))))] if gpu_hours > 0
                         else "·")
        rows.append((f"{week.pool} {capacity.get(week.pool, 0)} GPUs", "".join(cells)))
    if not rows:
        return []
    head = f"week {plan.week} (UTC, {len(plan.segments)} segments)"
    width = max(len(head), *(len(label) for label, _ in rows)) + 2
    days = "".join(day.ljust(24 // _CELL_HOURS) for day in DAYS)
    return [head.ljust(width) + days, *(label.ljust(width) + cells for label, cells in rows)]


def render_week_strip(console: Console, plan: Plan) -> None:
    for line in week_strip_lines(plan):
        console.print(escape(line), highlight=False, soft_wrap=True)
