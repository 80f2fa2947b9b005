"""A plan for people: rich tables, or markdown for a pull-request comment (templates/plan.md.j2)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hybridctl.core.plan.diff import PlanDiff
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan_summary import CostParts, PlanSummary, cost_parts, objective_note, summarize
from hybridctl.core.showback import CostDimension, CostLine, showback
from hybridctl.core.tiers import TierDecision
from hybridctl.render.plan_summary import render_summary, usd
from hybridctl.render.templates import render

if TYPE_CHECKING:
    from hybridctl.commands.cloud_changes import CloudChanges

T = TypeVar("T")

BREAKDOWNS = (CostDimension.tier, CostDimension.type, CostDimension.site, CostDimension.capacity_type)


def render_classification(console: Console, decisions: list[TierDecision]) -> None:
    table = Table(title="Tiers", title_justify="left")
    for column in ("workload", "tier", "rule", "why", "may use"):
        table.add_column(column)
    for d in decisions:
        table.add_row(d.workload, d.tier.value, d.rule, escape(d.reason), ", ".join(c.value for c in d.capacity_types))
    console.print(table)


def cost_table(title: str, lines: list[CostLine], label: str) -> Table:
    table = Table(title=title, title_justify="left")
    table.add_column(label)
    table.add_column("GPUs", justify="right")
    table.add_column("compute/mo", justify="right")
    table.add_column("data/mo", justify="right")
    table.add_column("total/mo", justify="right")
    for line in lines:
        table.add_row(line.key, str(line.gpus), usd(line.compute_usd_per_month), usd(line.data_usd_per_month),
                      usd(line.total_usd_per_month))
    return table


def _capped(rows: Sequence[T], max_rows: int) -> tuple[Sequence[T], int]:
    """The rows to draw and how many were left out: a 10,000-row table helps nobody on a terminal."""
    if max_rows <= 0 or len(rows) <= max_rows:
        return rows, 0
    return rows[:max_rows], len(rows) - max_rows


def _more(console: Console, hidden: int, what: str) -> None:
    if hidden:
        console.print(f"[dim]… and {hidden:,} more {what} (--max-rows 0 shows all; --format json has everything)[/]")


def _print_capped(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]],
                  max_rows: int, what: str) -> None:
    """A table of at most max_rows rows and a line saying how many were left out; a column
    name ending in ">" is right-aligned (numbers)."""
    table = Table(title=title, title_justify="left")
    for column in columns:
        table.add_column(column.rstrip(">"), justify="right" if column.endswith(">") else "left")
    shown, hidden = _capped(rows, max_rows)
    for row in shown:
        table.add_row(*row)
    console.print(table)
    _more(console, hidden, what)


def render_plan(console: Console, plan: Plan, diff: PlanDiff | None = None, max_rows: int = 0, *,
                detailed: bool = False, summary: PlanSummary | None = None, cloud: CloudChanges | None = None) -> None:
    """The summary first, then the placements (and what is unplaced, and the diff); the pools, the
    cost breakdowns and the data movements only when `detailed`."""
    render_summary(console, plan, summary or summarize(plan, diff, "previous"), cloud)
    placements = Table(title="Placements", title_justify="left")
    for column, justify in (("workload", "left"), ("tier", "left"), ("site", "left"), ("pool", "left"),
                            ("replicas", "right"), ("GPUs", "right"), ("cost/mo", "right")):
        # names are what people grep for: never truncate them; the explanation folds instead
        placements.add_column(column, justify=justify, no_wrap=True)  # type: ignore[arg-type]
    placements.add_column("why", ratio=1, min_width=16)
    shown, hidden = _capped(sorted(plan.placements, key=lambda p: -p.usd_per_month) if max_rows else plan.placements,
                            max_rows)
    for p in shown:
        placements.add_row(p.workload if p.demand in ("", p.workload) else p.demand, p.tier, p.site, p.pool,
                           str(p.replicas), str(p.gpus), usd(p.usd_per_month), escape(p.reason))
    console.print(placements)
    _more(console, hidden, "placements (the dearest are shown)")
    if plan.unplaced:
        _print_capped(console, "[red]Unplaced[/]", ("workload", "tier", "replicas", "reason"),
                      [(u.demand or u.workload, u.tier, str(u.replicas), escape(u.reason)) for u in plan.unplaced],
                      max_rows, "unplaced workloads")
    if detailed:
        render_details(console, plan, max_rows)
    if diff is not None:
        render_diff(console, diff)


def render_details(console: Console, plan: Plan, max_rows: int = 0) -> None:
    """The tables behind --detailed: pools, cost by tier/type/site/capacity type, data movements."""
    _print_capped(console, "Pools", ("site", "pool", "GPU", "capacity type", "used / capacity>", "machines>",
                                     "$/GPU-h>", "cost/mo>"),
                  [(p.site, p.pool, p.gpu, p.capacity_type, f"{p.used_gpus} / {p.capacity_gpus}",
                    f"{p.machines} × {p.gpus_per_node}", f"{p.usd_per_gpu_hour:.2f}", usd(p.usd_per_month))
                   for p in plan.pools], max_rows, "pools")
    for dimension in BREAKDOWNS:
        console.print(cost_table(f"Cost by {dimension.value.replace('_', ' ')}", showback(plan, dimension),
                                 dimension.value))
    if plan.data_movements:
        _print_capped(console, "Data movements", ("workload", "dataset", "from", "to", "GB/mo>", "cost/mo>"),
                      [(m.workload, m.dataset, m.from_site, m.to_site, f"{m.gb_per_month:,.0f}", usd(m.usd_per_month))
                       for m in plan.data_movements], max_rows, "data movements")


def render_diff(console: Console, diff: PlanDiff) -> None:
    if not diff.has_changes:
        console.print("[green]No changes.[/] The plan matches the previous one.")
        return
    table = Table(title="Changes against the previous plan", title_justify="left")
    for column in ("workload", "change", "before → after"):
        table.add_column(column)
    for change in diff.workloads:
        table.add_row(change.workload, change.change, change.describe())
    for pool in diff.pools:
        table.add_row(f"pool {pool.pool}", "resized", pool.describe())
    console.print(table)
    console.print(f"{diff.count('added')} added, {diff.count('removed')} removed, {diff.count('moved')} moved, "
                  f"{diff.count('resized')} resized, {len(diff.pools)} pools resized; "
                  f"{usd(diff.usd_per_month_before)} → {usd(diff.usd_per_month_after)}/month")


def render_markdown(plan: Plan, diff: PlanDiff | None = None, cloud: CloudChanges | None = None) -> str:
    breakdowns = [(d.value.replace("_", " "), showback(plan, d)) for d in BREAKDOWNS]
    return render("plan.md.j2", plan=plan, diff=diff, breakdowns=breakdowns, usd=usd, cloud=cloud,
                  parts=markdown_parts(cost_parts(plan)), objective=objective_note(plan).describe())


def markdown_parts(costs: CostParts) -> str:
    """The parts of the total for the comment's header line, from the same figures as the summary."""
    if costs.split_by_commitment:
        parts = (f"committed {usd(costs.committed_usd_per_month)} · pay-per-use "
                 f"{usd(costs.pay_per_use_usd_per_month)} · data movement {usd(costs.data_usd_per_month)}")
    else:
        parts = f"amortized compute {usd(costs.compute_usd_per_month)} · data movement {usd(costs.data_usd_per_month)}"
    idle = costs.idle_committed_usd_per_month
    return parts + (f" (idle committed {usd(idle)})" if idle >= 0.005 else "")
