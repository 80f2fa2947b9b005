"""The heat map of a timed plan's week for the HTML report: pools (rows) × the week's segments (columns).

Each cell says in text what the plan holds in that pool and segment (GPUs of capacity, and a committed
pool's idle GPU-hours or a pay-per-use pool's machines), so the map reads without its colours; the
shade (classes heat-0 … heat-8 in templates/report.html.j2) is the share of the pool's GPUs held.
The figures are core/week/usage.py's, the ones the plan file carries. Hours are UTC hours of the
plan's week. An untimed plan has no heat map.
"""

from __future__ import annotations

from dataclasses import dataclass

from hybridctl.core.plan.model import Plan
from hybridctl.core.week.clock import week_clock
from hybridctl.core.week.usage import pool_weeks

HEAT_LEVELS = 8  # shades above 0: heat-1 … heat-8


def figure(value: float) -> str:
    """A GPU or machine count as shown: whole numbers bare, others to one decimal (1.7)."""
    rounded = round(value, 1)
    return f"{rounded:,.0f}" if rounded == int(rounded) else f"{rounded:,.1f}"


@dataclass(frozen=True)
class HeatColumn:
    index: int
    start: str  # `Mon 08:00`
    end: str
    hours: float


@dataclass(frozen=True)
class HeatCell:
    gpus: float  # GPUs held on average over the segment (pool_weeks)
    machines: float
    idle_gpu_hours: float  # committed pools; 0 elsewhere
    share: float  # gpus / capacity
    level: int  # 0 … HEAT_LEVELS

    def text(self, committed: bool, capacity: int) -> str:
        line = f"{figure(self.gpus)} / {capacity} GPUs"
        if committed:
            return f"{line}, idle {figure(self.idle_gpu_hours)} GPU-h"
        return f"{line}, {figure(self.machines)} machine{'' if self.machines == 1 else 's'}"


@dataclass(frozen=True)
class HeatRow:
    site: str
    pool: str
    gpu: str
    committed: bool
    capacity_gpus: int
    cells: tuple[HeatCell, ...]
    idle_gpu_hours: float  # over the week


@dataclass(frozen=True)
class HeatMap:
    week: str
    columns: tuple[HeatColumn, ...]
    rows: tuple[HeatRow, ...]

    @property
    def idle_gpu_hours(self) -> float:
        return sum(r.idle_gpu_hours for r in self.rows)


def _level(share: float, gpus: float) -> int:
    if gpus <= 0:
        return 0
    # any use at all shows: the lightest shade, not the empty one
    return max(1, min(HEAT_LEVELS, round(share * HEAT_LEVELS)))


def heat_map(plan: Plan) -> HeatMap | None:
    """The plan's week per pool and segment; None for an untimed plan."""
    weeks = pool_weeks(plan)
    if not weeks:
        return None
    columns = tuple(HeatColumn(k, week_clock(s.start_hour), week_clock(s.end_hour), s.hours)
                    for k, s in enumerate(plan.segments))
    usage = {u.pool: u for u in plan.pools}
    rows = []
    for week in weeks:
        pool = usage[week.pool]
        cells = []
        for gpus, machines, idle in zip(week.gpus, week.machines, week.idle_gpu_hours, strict=True):
            share = gpus / pool.capacity_gpus if pool.capacity_gpus > 0 else 0.0
            cells.append(HeatCell(gpus, machines, idle, share, _level(share, gpus)))
        rows.append(HeatRow(pool.site, pool.pool, pool.gpu, pool.committed, pool.capacity_gpus, tuple(cells),
                            sum(week.idle_gpu_hours)))
    return HeatMap(plan.week, columns, tuple(rows))
