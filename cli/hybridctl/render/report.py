"""`hybridctl report`: one self-contained HTML file (templates/report.html.j2) a person would rather
look at than read: costs, pools, the placement, a drill's impact and the change against a previous plan.

Everything is inline (CSS and SVG); the file makes no request, so it opens offline and as an
e-mail attachment. Names from the inventory, plan and drill files are escaped by the template.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hybridctl import __version__
from hybridctl.core.failover.worst import gpus_text
from hybridctl.core.plan.diff import PlanDiff, diff_plans
from hybridctl.core.plan.jsonread import json_object
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.summary import objective_note, summarize
from hybridctl.core.pricing.showback import placement_costs
from hybridctl.errors import HybridctlError
from hybridctl.render.failover import split_text
from hybridctl.render.plan_summary import (
    change_line,
    idle_line,
    over_budget_text,
    signed_usd,
    total_line,
    usd,
)
from hybridctl.render.report_charts import cost_charts, placement_matrix, pool_chart
from hybridctl.render.report_finance import budget_text, finance_view, tiers_used
from hybridctl.render.report_week import figure, heat_map
from hybridctl.render.templates import render_html

DRILL_FORMAT_VERSION = 1
STATUS_MARKS = {"moved": "→", "degraded": "◐", "down": "✕", "started": "+"}
DRILL_HINT = "pass a file written by `hybridctl drill INVENTORY --json-out FILE`"


class DrillFileError(HybridctlError):
    pass


@dataclass(frozen=True)
class DrillCell:
    status: str
    mark: str
    detail: str


@dataclass(frozen=True)
class DrillRow:
    name: str
    description: str
    passed: bool
    usd_per_month_delta: float
    recovery_minutes: float
    rto_minutes: float | None  # the tightest RTO among the workloads the scenario touches
    rto_met: bool
    cells: Mapping[str, DrillCell]  # workload -> impact
    committed_lost_gpus: int = 0  # committed capacity the scenario loses, still paid (in the cash change)
    committed_lost_usd_per_month: float = 0.0
    over_budget_usd_per_month: float = 0.0  # cash above the monthly budget
    over_budget_allowed_usd_per_month: float | None = None  # the scenario file's allowance; None: a warning only
    fixed_down: int = 0  # fixed-tier workloads that lose service, not expected: the gate's failures
    worst_segment: str = ""  # a timed drill's: the segment of the week where most is lost ("—": none)
    # the cash change split (pricing/incident.py): extra spend, and the work stopped, each workload with its cash
    extra_usd_per_month: float = 0.0
    stopped_usd_per_month: float = 0.0
    work_stopped: tuple[tuple[str, float], ...] = ()

    @property
    def cash_split_text(self) -> str:
        """The delta as every incident view shows it: extra spend beside the work stopped, each named."""
        return split_text(self.extra_usd_per_month, self.stopped_usd_per_month, dict(self.work_stopped))

    @property
    def over_budget_text(self) -> str:
        if self.over_budget_usd_per_month < 0.005:
            return "—"
        over = f"${self.over_budget_usd_per_month:,.2f}"
        allowed = self.over_budget_allowed_usd_per_month
        if allowed is None:
            return f"{over} over (warning)"
        return f"{over} over ({'more than' if self.over_budget_usd_per_month > allowed + 0.005 else 'within'} " \
               f"${allowed:,.2f} allowed)"


@dataclass(frozen=True)
class DrillView:
    inventory: str
    passed: bool
    workloads: tuple[str, ...]  # the workloads some scenario touches
    rows: tuple[DrillRow, ...]
    timed: bool = False  # the drill's base plan has a week: its rows name their worst segment


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f} min"


def _impact_detail(impact: Mapping[str, Any]) -> str:
    parts = [f"{impact.get('workload')}: {impact.get('status')}"]
    outage, rto = _number(impact.get("outage_minutes")), _number(impact.get("rto_minutes"))
    if outage is not None or rto is not None:
        parts.append(f"outage {_minutes(outage)}, RTO {_minutes(rto)}")
    running, wanted = impact.get("replicas_running"), impact.get("replicas_wanted")
    if isinstance(running, int) and isinstance(wanted, int):
        parts.append(f"{running} of {wanted} replica(s) running")
    if isinstance(impact.get("fallback"), str):
        parts.append(f"fallback {impact['fallback']}")
    lost = _number(impact.get("work_lost_minutes_max"))
    if lost:
        parts.append(f"expected loss: up to {lost:,.0f} min of work since the last checkpoint")
    if impact.get("restarts_from_scratch"):
        parts.append("expected loss: restarts from scratch (no checkpoints)")
    delta = _number(impact.get("usd_per_month_delta"))
    if delta:
        parts.append(f"{signed_usd(delta)}/month")
    if impact.get("reason"):
        parts.append(str(impact["reason"]))
    return "\n".join(parts)


def _worst_segment(raw: object) -> str:
    """A scenario's `worst_segment` as the drill table shows it (`—`: none)."""
    if not isinstance(raw, dict):
        return "—"
    lost, usd = _number(raw.get("lost_gpus")) or 0.0, _number(raw.get("usd_per_hour_delta")) or 0.0
    parts = [f"{gpus_text(lost)} GPU{'s' * (lost != 1)} lost"] if lost > 0 else []
    if usd:
        parts.append(f"{'+' if usd > 0 else '−'}${abs(usd):,.2f}/h")
    return f"{raw.get('index')}/{raw.get('of')} {raw.get('clock')}: {', '.join(parts)}"


def drill_view(text: str, source: str) -> DrillView:
    """The scenario × workload impact matrix of a drill report (`drill --json-out`)."""
    # read as strictly as plan files: NaN (rendered "−$nan/month"), a key twice, control characters are refused
    raw = json_object(text, source, DrillFileError, "drill report", DRILL_HINT)
    if not isinstance(raw.get("scenarios"), list):
        raise DrillFileError(f"{source}: not a hybridctl drill report", hint=DRILL_HINT)
    if raw.get("format_version") != DRILL_FORMAT_VERSION:
        raise DrillFileError(f"{source}: drill format_version {raw.get('format_version')!r} is not supported "
                             f"(this hybridctl reads {DRILL_FORMAT_VERSION})", hint=DRILL_HINT)
    rows: list[DrillRow] = []
    touched: dict[str, None] = {}
    for scenario in raw["scenarios"]:
        if not isinstance(scenario, dict):
            raise DrillFileError(f"{source}: a scenario is not an object", hint=DRILL_HINT)
        cells: dict[str, DrillCell] = {}
        rtos: list[float] = []
        for impact in scenario.get("workloads") or ():
            if not isinstance(impact, dict) or impact.get("status") in (None, "unchanged"):
                continue
            name = str(impact.get("workload"))
            status = str(impact["status"])
            cells[name] = DrillCell(status, STATUS_MARKS.get(status, "?"), _impact_detail(impact))
            touched[name] = None
            rto = _number(impact.get("rto_minutes"))
            if rto is not None:
                rtos.append(rto)
        misses = scenario.get("rto_misses") or []
        lost = scenario.get("committed_lost")
        lost = lost if isinstance(lost, dict) else {}
        delta = _number(scenario.get("usd_per_month_delta")) or 0.0
        extra = _number(scenario.get("usd_per_month_extra"))  # a drill file of before revision 4: all extra
        stopped = scenario.get("work_stopped")
        stopped = tuple((str(w), _number(v) or 0.0) for w, v in stopped.items()) if isinstance(stopped, dict) else ()
        rows.append(DrillRow(str(scenario.get("name")), str(scenario.get("description") or ""),
                             bool(scenario.get("passed")), delta,
                             _number(scenario.get("recovery_minutes")) or 0.0, min(rtos) if rtos else None,
                             # a workload down is never an RTO met, expected loss or not
                             not misses and not scenario.get("unexpected_fixed_losses") and not scenario.get("lost"),
                             cells,
                             int(_number(lost.get("gpus")) or 0), _number(lost.get("usd_per_month")) or 0.0,
                             _number(scenario.get("over_budget_usd_per_month")) or 0.0,
                             _number(scenario.get("over_budget_allowed_usd_per_month")),
                             len(scenario.get("unexpected_fixed_losses") or ()),
                             _worst_segment(scenario.get("worst_segment")),
                             delta if extra is None else extra,
                             _number(scenario.get("usd_per_month_work_stopped")) or 0.0, stopped))
    timed = any(isinstance(s, dict) and "worst_segment" in s for s in raw["scenarios"])
    return DrillView(str(raw.get("inventory", "")), bool(raw.get("passed")), tuple(sorted(touched)), tuple(rows),
                     timed)


def render_report(plan: Plan, *, drill: DrillView | None = None, previous: Plan | None = None,
                  source: str = "", previous_source: str = "", drill_source: str = "", planned_on: str = "") -> str:
    """`planned_on`: the plan's date (ISO), shown to finance beside the prices' dates."""
    diff: PlanDiff | None = diff_plans(previous, plan) if previous is not None else None
    summary = summarize(plan, diff, "previous")
    note = objective_note(plan)
    return render_html(
        "report.html.j2",
        plan=plan, summary=summary, diff=diff, drill=drill, version=__version__,
        source=source, previous_source=previous_source, drill_source=drill_source,
        total_line=total_line(summary.costs), idle_line=idle_line(summary.costs), change_line=change_line(summary),
        objective=note.describe(), objective_differs=note.differs,
        over_budget=over_budget_text(summary) if summary.over_budget else "",
        cost_charts=cost_charts(plan),
        idle_usd=summary.costs.idle_committed_usd_per_month, pools=pool_chart(plan), heat=heat_map(plan), figure=figure,
        matrix=placement_matrix(plan),
        usd=usd, signed_usd=signed_usd, minutes=_minutes, marks=STATUS_MARKS,
        finance=finance_view(plan, planned_on), tiers=tiers_used(plan), budget_text=budget_text,
        placement_rows=list(zip(plan.placements, placement_costs(plan).placements, strict=True)),
    )
