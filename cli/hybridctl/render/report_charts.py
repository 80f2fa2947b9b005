"""Chart geometry for the HTML report: static SVG laid out here, drawn by templates/report.html.j2.

No JavaScript and no charting library: the report must open offline, anywhere, years later,
and a bar is a rectangle. Every shape carries a <title> (the browser's own tooltip).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.showback import (
    IDLE_COMMITTED,
    CostDimension,
    committed_compute,
    placement_costs,
    showback,
)

SEGMENT_KINDS = ("committed", "pay_per_use", "data", "idle")
SEGMENT_LABELS = {"committed": "committed compute", "pay_per_use": "pay-per-use compute", "data": "data movement",
                  "idle": "idle committed"}
CHART_WIDTH = 1000.0
LABEL_WIDTH = 250.0
VALUE_WIDTH = 220.0
BAR_HEIGHT = 18.0
BAR_GAP = 8.0
TOP = 6.0


@dataclass(frozen=True)
class Segment:
    kind: str
    usd: float
    x: float
    width: float

    @property
    def label(self) -> str:
        return SEGMENT_LABELS[self.kind]


@dataclass(frozen=True)
class Bar:
    label: str
    total_usd: float
    y: float
    segments: tuple[Segment, ...]


@dataclass(frozen=True)
class StackedBars:
    key: str  # tier | site | team
    title: str
    bars: tuple[Bar, ...]
    width: float
    height: float
    label_width: float
    note: str = ""

    @property
    def kinds(self) -> tuple[str, ...]:
        present = {s.kind for b in self.bars for s in b.segments}
        return tuple(k for k in SEGMENT_KINDS if k in present)


def _layout(key: str, title: str, amounts: Mapping[str, Mapping[str, float]], note: str = "") -> StackedBars:
    """Horizontal stacked bars, dearest first, on one scale."""
    totals = {label: sum(parts.values()) for label, parts in amounts.items()}
    ordered = sorted(totals, key=lambda label: (-totals[label], label))
    plot = CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    scale = plot / max(totals.values()) if totals and max(totals.values()) > 0 else 0.0
    bars = []
    for i, label in enumerate(ordered):
        x = LABEL_WIDTH
        segments = []
        for kind in SEGMENT_KINDS:
            value = round(amounts[label].get(kind, 0.0), 2)
            if value <= 0:
                continue
            width = value * scale
            segments.append(Segment(kind, value, round(x, 2), round(max(width, 1.0), 2)))
            x += width
        bars.append(Bar(label, round(totals[label], 2), TOP + i * (BAR_HEIGHT + BAR_GAP), tuple(segments)))
    height = TOP * 2 + len(bars) * (BAR_HEIGHT + BAR_GAP)
    return StackedBars(key, title, tuple(bars), CHART_WIDTH, height, LABEL_WIDTH, note)


def cost_charts(plan: Plan) -> list[StackedBars]:
    """Cost by tier, site and team, from the showback (so each chart adds up to the total): compute
    split into committed and pay-per-use pools, data, and the idle committed cost on a bar of its own."""
    charts = []
    for dimension in (CostDimension.tier, CostDimension.site, CostDimension.team):
        in_committed = committed_compute(plan, dimension)
        amounts: dict[str, dict[str, float]] = {}
        for line in showback(plan, dimension):
            if line.key == IDLE_COMMITTED:
                amounts["idle committed"] = {"idle": line.total_usd_per_month}
                continue
            owned = min(in_committed.get(line.key, 0.0), line.compute_usd_per_month)
            amounts[line.key] = {"committed": owned, "pay_per_use": line.compute_usd_per_month - owned,
                                 "data": line.data_usd_per_month}
        note = ("Idle committed: what owned and reserved pools cost beyond the compute placed in them, paid "
                "all the same" + (" (in the total)." if plan.cost_model == "cash" else
                                  " (in the month's cash; this plan's total is amortized).")
                if "idle committed" in amounts else "")
        charts.append(_layout(dimension.value, f"Cost by {dimension.value}", amounts, note))
    return charts


@dataclass(frozen=True)
class PoolBar:
    site: str
    pool: str
    gpu: str
    capacity_type: str
    used_gpus: int
    capacity_gpus: int
    committed: bool
    machines: int
    gpus_per_node: int
    y: float
    used_width: float
    capacity_width: float

    @property
    def share(self) -> float:
        return self.used_gpus / self.capacity_gpus if self.capacity_gpus else 0.0


@dataclass(frozen=True)
class PoolChart:
    bars: tuple[PoolBar, ...]
    width: float
    height: float
    label_width: float


def pool_chart(plan: Plan) -> PoolChart:
    """Per pool: GPUs used against capacity (each bar is the pool's own capacity), and its machines."""
    plot = CHART_WIDTH - LABEL_WIDTH - VALUE_WIDTH
    bars = []
    for i, p in enumerate(sorted(plan.pools, key=lambda p: (p.site, p.pool))):
        share = min(p.used_gpus / p.capacity_gpus, 1.0) if p.capacity_gpus else 0.0
        bars.append(PoolBar(p.site, p.pool, p.gpu, p.capacity_type, p.used_gpus, p.capacity_gpus, p.committed,
                            p.machines, p.gpus_per_node, TOP + i * (BAR_HEIGHT + BAR_GAP),
                            round(plot * share, 2), plot))
    return PoolChart(tuple(bars), CHART_WIDTH, TOP * 2 + len(bars) * (BAR_HEIGHT + BAR_GAP), LABEL_WIDTH)


@dataclass(frozen=True)
class Cell:
    replicas: int
    gpus: int
    usd: float
    detail: str  # pools and the reasons, for the tooltip


@dataclass(frozen=True)
class PlacementMatrix:
    sites: tuple[str, ...]
    workloads: tuple[str, ...]
    cells: Mapping[tuple[str, str], Cell]  # (workload, site) -> what runs there
    unplaced: Mapping[str, str]  # workload -> reason
    costs: Mapping[str, float]  # workload -> its placements' showback per month (compute and machine rounding)
    data_usd_per_month: float = 0.0  # the rows that close the cost column to the total
    idle_committed_usd_per_month: float = 0.0
    total_usd_per_month: float = 0.0


def placement_matrix(plan: Plan) -> PlacementMatrix:
    """Replicas per workload and site; the cost column is showback's, so with the data movement and idle
    committed rows it adds up to the total to the cent."""
    shown = placement_costs(plan)
    grouped: dict[tuple[str, str], list[tuple[str, int, int, float, str]]] = defaultdict(list)
    for p, usd in zip(plan.placements, shown.placements, strict=True):
        name = p.demand or p.workload
        grouped[(name, p.site)].append((p.pool, p.replicas, p.gpus, usd, p.reason))
    cells = {key: Cell(sum(r for _, r, _, _, _ in rows), sum(g for _, _, g, _, _ in rows),
                       round(sum(u for _, _, _, u, _ in rows), 2),
                       "\n".join(f"{pool} ×{r}: {reason}" for pool, r, _, _, reason in rows))
             for key, rows in grouped.items()}
    sites = sorted({site for _, site in cells}, key=lambda s: (-sum(c.usd for (_, x), c in cells.items() if x == s), s))
    unplaced = {u.demand or u.workload: u.reason for u in plan.unplaced}
    workloads = sorted({w for w, _ in cells} | set(unplaced))
    costs: dict[str, float] = defaultdict(float)
    for (workload, _), cell in cells.items():
        costs[workload] += cell.usd
    return PlacementMatrix(tuple(sites), tuple(workloads), cells, unplaced,
                           {w: round(v, 2) for w, v in costs.items()}, shown.data_usd_per_month,
                           shown.idle_committed_usd_per_month, shown.total_usd_per_month)

