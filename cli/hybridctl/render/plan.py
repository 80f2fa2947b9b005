"""A plan for people: rich tables, or markdown for a pull-request comment (templates/plan.md.j2)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console

from hybridctl.core.placement.tiers import TierDecision
from hybridctl.core.plan.diff import PlanDiff
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.summary import CostParts, PlanSummary, cost_parts, objective_note, summarize
from hybridctl.core.pricing.rates import rate_text
from hybridctl.core.pricing.showback import (
    CostDimension,
    CostLine,
    PlacementCosts,
    placement_costs,
    showback,
)
from hybridctl.render.listing import print_capped, print_table
from hybridctl.render.plan_summary import idle_machine_lines, over_budget_text, render_summary, usd
from hybridctl.render.untrusted import echo
from hybridctl.render.week import render_week_strip

if TYPE_CHECKING:
    from hybridctl.core.deploy.stackdiff import CloudChanges

BREAKDOWNS = (CostDimension.tier, CostDimension.type, CostDimension.site, CostDimension.capacity_type)


def render_classification(console: Console, decisions: list[TierDecision]) -> None:
    print_table(console, "Tiers", ("workload", "tier", "rule", "why", "may use"),
                [(d.workload, d.tier.value, d.rule, d.reason, ", ".join(c.value for c in d.capacity_types))
                 for d in decisions])


def print_cost_table(console: Console, title: str, lines: list[CostLine], label: str) -> None:
    # GPU-h/mo, not GPUs: GPU-hours add up across lines and views as the dollars do (work taking turns on the same
    # GPUs, or a part-time replica, has no one GPU count that does). idle/mo: of the compute, the pay-per-use
    # machines' GPUs no replica uses, carried where they are paid
    print_table(console, title, (label, "GPU-h/mo>", "compute/mo>", "of it idle>", "data/mo>", "total/mo>"),
                [(line.key, f"{line.gpu_hours_per_month:,.0f}", usd(line.compute_usd_per_month), usd(line.idle_usd_per_month),
                  usd(line.data_usd_per_month), usd(line.total_usd_per_month)) for line in lines])


def render_plan(console: Console, plan: Plan, diff: PlanDiff | None = None, max_rows: int = 0, *,
                detailed: bool = False, summary: PlanSummary | None = None, cloud: CloudChanges | None = None) -> None:
    """The summary first, then the placements (and what is unplaced, and the diff); the pools, the
    cost breakdowns and the data movements only when `detailed`."""
    render_summary(console, plan, summary or summarize(plan, diff, "previous"), cloud)
    render_week_strip(console, plan)  # a timed plan's pools over its week (render/week.py)
    # cost/mo is showback's: compute and the machine rounding the placement carries (pricing/shares.py)
    costs = placement_costs(plan)
    rows = list(zip(plan.placements, costs.placements, strict=True))
    print_capped(console, "Placements", ("workload", "tier", "site", "pool", "replicas>", "GPUs>", "cost/mo>", "why"),
                 sorted(rows, key=lambda row: -row[1]) if max_rows else rows,
                 lambda row: (row[0].workload if row[0].demand in ("", row[0].workload) else row[0].demand, row[0].tier,
                              row[0].site, row[0].pool, str(row[0].replicas), str(row[0].gpus), usd(row[1]),
                              row[0].reason),
                 max_rows, "placements (the dearest are shown)", fold_last=True)
    if plan.placements:
        console.print(placements_footer(costs))
    if plan.unplaced:
        print_capped(console, "[red]Unplaced[/]", ("workload", "tier", "replicas>", "reason"), plan.unplaced,
                     lambda u: (u.demand or u.workload, u.tier, str(u.replicas), u.reason),
                     max_rows, "unplaced workloads")
    if detailed:
        render_details(console, plan, max_rows)
    if diff is not None:
        render_diff(console, diff, stack_changes=sum(1 for r in cloud.rows if r.action != "same") if cloud else 0)


def placements_footer(costs: PlacementCosts) -> str:
    """What the placements' cost column adds up to with the rest of the total."""
    placed = round(sum(costs.placements), 2)
    return (f"placements {usd(placed)} + data movement {usd(costs.data_usd_per_month)} + idle committed "
            f"{usd(costs.idle_committed_usd_per_month)} = total {usd(costs.total_usd_per_month)}/month")


def render_details(console: Console, plan: Plan, max_rows: int = 0) -> None:
    """The tables behind --detailed: pools, cost by tier/type/site/capacity type, data movements."""
    print_capped(console, "Pools", ("site", "pool", "GPU", "capacity type", "used / capacity>", "machines>",
                                    "$/GPU-h>", "cost/mo>"), plan.pools,
                 lambda p: (p.site, p.pool, p.gpu, p.capacity_type, f"{p.used_gpus} / {p.capacity_gpus}",
                            f"{p.machines} × {p.gpus_per_node}", rate_text(p.usd_per_gpu_hour), usd(p.usd_per_month)),
                 max_rows, "pools")
    for dimension in BREAKDOWNS:
        print_cost_table(console, f"Cost by {dimension.value.replace('_', ' ')}", showback(plan, dimension),
                         dimension.value)
    if plan.data_movements:
        print_capped(console, "Data movements", ("workload", "dataset", "from", "to", "GB/mo>", "cost/mo>"),
                     plan.data_movements,
                     lambda m: (m.workload, m.dataset, m.from_site, m.to_site, f"{m.gb_per_month:,.0f}",
                                usd(m.usd_per_month)),
                     max_rows, "data movements")


def render_diff(console: Console, diff: PlanDiff, stack_changes: int = 0) -> None:
    if not diff.has_changes:
        if stack_changes:  # e.g. a schedule's resizes moved with the week: a change all the same
            console.print(f"No placement changes against the previous plan; {stack_changes} stack configuration "
                          "change(s), below.", markup=False)
        else:
            console.print("[green]No changes.[/] The plan matches the previous one.")
        return
    if diff.workloads or diff.pools:
        print_table(console, "Changes against the previous plan", ("workload", "change", "before → after"),
                    [*((c.workload, c.change, c.describe()) for c in diff.workloads),
                     *((f"pool {p.pool}", "resized" if p.resized else "peak use", p.describe()) for p in diff.pools)])
    console.print(f"{diff.count('added')} added, {diff.count('removed')} removed, {diff.count('moved')} moved, "
                  f"{diff.count('resized')} resized, {diff.count('retimed')} re-timed, "
                  f"{sum(p.resized for p in diff.pools)} pools resized; cost {diff.cost_line()}",
                  markup=False)


def show_saved_plan(console: Console, plan: Plan, output_format: str, *, max_rows: int, detailed: bool) -> None:
    """`show`: a saved plan as its file's JSON, as markdown, or as the tables `plan` shows (`output_format`)."""
    from hybridctl.core.plan.serialize import plan_to_json

    if output_format == "json":
        echo(plan_to_json(plan), nl=False)
    elif output_format == "markdown":
        echo(render_markdown(plan), nl=False)
    else:
        render_plan(console, plan, max_rows=max_rows, detailed=detailed)


def render_markdown(plan: Plan, diff: PlanDiff | None = None, cloud: CloudChanges | None = None) -> str:
    # jinja2: only for markdown, not on every table's path
    from hybridctl.render.templates import render_markdown_template

    breakdowns = [(d.value.replace("_", " "), showback(plan, d)) for d in BREAKDOWNS]
    costs = placement_costs(plan)
    # a stack configuration that differs is a change even where no replica or price moved
    stack_changes = sum(1 for r in cloud.rows if r.action != "same") if cloud is not None else 0
    return render_markdown_template("plan.md.j2", plan=plan, diff=diff, breakdowns=breakdowns, usd=usd, cloud=cloud,
                  stack_changes=stack_changes,
                  placement_rows=list(zip(plan.placements, costs.placements, strict=True)),
                  placements_footer=placements_footer(costs), idle_machines=idle_machine_lines(plan),
                  parts=markdown_parts(cost_parts(plan)), objective=objective_note(plan).describe(),
                  over_budget=over_budget_text(summarize(plan)) if plan.over_budget else "")


def markdown_parts(costs: CostParts) -> str:
    """The parts of the total for the comment's header line, from the same figures as the summary."""
    if costs.split_by_commitment:
        parts = (f"committed {usd(costs.committed_usd_per_month)} · pay-per-use "
                 f"{usd(costs.pay_per_use_usd_per_month)} · data movement {usd(costs.data_usd_per_month)}")
    else:
        parts = f"amortized compute {usd(costs.compute_usd_per_month)} · data movement {usd(costs.data_usd_per_month)}"
    idle = costs.idle_committed_usd_per_month
    return parts + (f" (idle committed {usd(idle)})" if idle >= 0.005 else "")
