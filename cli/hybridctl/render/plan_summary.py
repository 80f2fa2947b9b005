"""The first screen of a text plan: what it costs, what changes, what is left out (≤ 15 lines).

The figures come from core.plan_summary; this module only words and aligns them.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.plan.model import Plan, PoolUsage
from hybridctl.core.plan.summary import CostParts, PlanSummary, objective_note
from hybridctl.core.pricing.shares import IdleMachines, idle_machines

if TYPE_CHECKING:
    from hybridctl.core.deploy.stackdiff import CloudChanges

UNPLACED_LISTED = 3  # the rest are in the Unplaced table below the placements
IDLE_LISTED = 2  # the dearest idle pay-per-use machines named in the summary
PRICES_LISTED = 2  # the price sources named in the summary
LABEL_WIDTH = 11


def usd(value: float) -> str:
    return f"${value:,.2f}"


def signed_usd(value: float) -> str:
    if abs(value) < 0.005:
        return "±$0.00"
    return f"{'+' if value > 0 else '−'}${abs(value):,.2f}"


def total_line(costs: CostParts) -> str:
    """The total with its parts: committed + pay-per-use + data under cash, compute + data under amortized."""
    if costs.split_by_commitment:
        return (f"{usd(costs.total_usd_per_month)}/month (cash: committed {usd(costs.committed_usd_per_month)}"
                f" + pay-per-use {usd(costs.pay_per_use_usd_per_month)} + data {usd(costs.data_usd_per_month)})")
    return (f"{usd(costs.total_usd_per_month)}/month (amortized: compute {usd(costs.compute_usd_per_month)}"
            f" + data {usd(costs.data_usd_per_month)}; the month's cash is {usd(costs.cash_usd_per_month)})")


def idle_line(costs: CostParts) -> str | None:
    idle = costs.idle_committed_usd_per_month
    if idle < 0.005:
        return None
    where = "in the committed part" if costs.split_by_commitment else "in the cash, not in this total"
    return f"{usd(idle)} of the committed cost pays for GPUs no workload uses (idle; {where})"


def idle_machines_text(m: IdleMachines) -> str:
    """e.g. "1 machine of 8 H100 (aws-p5) at 2/8 GPUs for clinical-notes-llm: $17,520.00/month idle"."""
    per = m.gpus_per_node
    return (f"{m.machines} machine{'s' * (m.machines != 1)} of {per} {m.gpu} ({m.pool}) at {m.gpus_used}/"
            f"{m.machines * per} GPUs for {', '.join(m.workloads)}: {usd(m.idle_usd_per_month)}/month idle")


def idle_machine_lines(plan: Plan) -> list[str]:
    """The dearest pay-per-use machines paid for GPUs no replica uses (the workloads on them carry it)."""
    found = [m for m in idle_machines(plan) if m.idle_usd_per_month >= 0.005]
    lines = [idle_machines_text(m) for m in found[:IDLE_LISTED]]
    if len(found) > IDLE_LISTED:
        rest = round(sum(m.idle_usd_per_month for m in found[IDLE_LISTED:]), 2)
        lines.append(f"… and {len(found) - IDLE_LISTED} more pay-per-use machine group(s): {usd(rest)}/month idle")
    return lines


def _providers_of(pool: PoolUsage | None, gpu: str, gpus_per_node: int) -> set[str]:
    """The providers whose catalog type of this shape lists the pool's price in some region (a pool priced
    from the catalog); AWS for a pool with a price of its own (the plan does not name providers)."""
    if pool is not None:
        found = {i.provider for i in catalog().instances.values() if i.gpu == gpu and i.gpus_per_node == gpus_per_node
                 and any(abs(p.usd_per_hour / gpus_per_node - pool.usd_per_gpu_hour) < 5e-5 for p in i.prices)}
        if found:
            return found
    return {"aws"}


def machine_shape_hint(m: IdleMachines, pool: PoolUsage | None = None) -> str:
    """What to change for machines paid for GPUs no replica uses: a smaller shape of the same GPU, of the
    pool's provider, where the catalog has one (a pool of it fits the replicas without the idle GPUs), else
    another GPU type or site."""
    providers = _providers_of(pool, m.gpu, m.gpus_per_node)
    smaller = sorted((i for i in catalog().instances.values() if i.gpu == m.gpu and i.gpus_per_node < m.gpus_per_node
                      and i.provider in providers),
                     key=lambda i: (i.gpus_per_node, i.usd_per_hour, i.name))
    idle = f"{m.pool}: {usd(m.idle_usd_per_month)}/month idle on {m.gpus_per_node}-GPU machines"
    if smaller:
        shapes = ", ".join(f"{i.name} ({i.gpus_per_node} GPU{'s' * (i.gpus_per_node != 1)}, "
                           f"${i.usd_per_hour:,.3f}/h)" for i in smaller[:3])
        return f"{idle}; a pool of a smaller {m.gpu} shape fits them: {shapes}"
    return (f"{idle}; no smaller {m.gpu} shape in the catalog: add a GPU type to gpu.types, or a pool at "
            "another site")


def shape_hint_lines(plan: Plan) -> list[str]:
    """One hint, for the dearest idle machines: the summary stays a screenful."""
    found = [m for m in idle_machines(plan) if m.idle_usd_per_month >= 0.005]
    pools = {p.pool: p for p in plan.pools}
    return [machine_shape_hint(found[0], pools.get(found[0].pool))] if found else []


HOURS_PER_MONTH = 730


def part_time_hint(plan: Plan) -> str:
    """An untimed plan's part-time replicas in committed pools hold their GPUs all month (revision 2's model):
    the GPU-hours they hold and do not use, and the `schedule` that would let others have them. "" where none."""
    if plan.segments:
        return ""
    committed = {p.pool for p in plan.pools if p.committed}
    held = [pl for pl in plan.placements
            if pl.pool in committed and 0 < pl.hours_per_month < HOURS_PER_MONTH and pl.replicas > 0]
    if not held:
        return ""
    idle_hours = sum(pl.gpus * (HOURS_PER_MONTH - pl.hours_per_month) for pl in held)
    names = sorted({pl.workload for pl in held})
    listed = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return (f"{listed} hold{'s' * (len(names) == 1)} owned GPUs all month ({idle_hours:,.0f} GPU-h unused): "
            "a `schedule` would time-share them")


def change_line(summary: PlanSummary) -> str:
    diff = summary.diff
    if diff is None or summary.change_usd_per_month is None:
        return "first plan: no --previous plan and nothing applied in the state to compare with"
    against = "the previous plan" if summary.baseline == "previous" else "the applied plan"
    if not diff.has_changes:
        return f"none against {against} ({signed_usd(summary.change_usd_per_month)}/month)"
    counts = ", ".join(f"{diff.count(kind)} {kind}" for kind in ("added", "removed", "moved", "resized", "retimed")
                       if diff.count(kind))
    if not (diff.workloads or diff.pools):  # a cost-only change: say what moved it
        causes = "; ".join(c.describe() for c in diff.causes)
        return f"{signed_usd(summary.change_usd_per_month)}/month against {against}, no replica moved: {causes}"
    # a price that changed is named beside the moves it caused: the counts alone do not say why
    prices = "; ".join(c.describe() for c in diff.causes if any(r.startswith("price ") for r in c.reasons))
    resized = sum(p.resized for p in diff.pools)
    pools = "".join(f"; {n} pool(s) {what}" for n, what in ((resized, "resized"),
                                                           (len(diff.pools) - resized, "with another peak use")) if n)
    return (f"{signed_usd(summary.change_usd_per_month)}/month against {against}: {counts or 'no workload moved'}{pools}"
            + (f" ({prices})" if prices else ""))


def price_lines(plan: Plan) -> list[str]:
    """The pools priced from another region's list price (their source says what to set), one line
    per source: "aws-euw1-p5, aws-euw1-l4: us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for eu-west-1"."""
    by_source: dict[str, list[str]] = {}
    for p in plan.pools:
        if "; set usd_per_gpu_hour" in p.price_source:
            by_source.setdefault(p.price_source, []).append(p.pool)
    lines = [f"{', '.join(pools)}: {source}" for source, pools in sorted(by_source.items())]
    if len(lines) > PRICES_LISTED:  # the summary stays a screenful: the rest are in the plan's pools
        rest = sum(len(pools) for _, pools in sorted(by_source.items())[PRICES_LISTED:])
        lines[PRICES_LISTED:] = [f"… and {rest} more pool(s) priced from another region's list (price_source)"]
    return lines


def cloud_line(cloud: CloudChanges) -> str:
    moving = [r for r in cloud.rows if r.action != "same"]
    source = "pulumi preview" if cloud.source == "pulumi-preview" else "stack-configuration diff"
    if not moving:
        return f"none ({source})"
    actions = Counter(r.action for r in moving)
    stacks = len({(r.project, r.stack) for r in moving})
    counted = ", ".join(f"{n} {action}" for action, n in sorted(actions.items()))
    return f"{counted} in {stacks} stack(s) ({source}; table at the end)"


def over_budget_text(summary: PlanSummary) -> str:
    """The mark of a plan over its budget, wherever it is shown (plan, show, cost, report)."""
    over = round(summary.costs.total_usd_per_month, 2) - round(summary.budget_usd_per_month or 0.0, 2)
    return f"OVER BUDGET by {usd(over)}: apply refuses this plan without --allow-over-budget"


def summary_rows(plan: Plan, summary: PlanSummary, cloud: CloudChanges | None = None) -> list[tuple[str, str]]:
    """(label, text) lines of the summary, plain text: at most about 15 of them."""
    rows = [("total:", total_line(summary.costs))]
    idle = idle_line(summary.costs)
    if idle:
        rows.append(("", idle))
    rows += [("idle:" if i == 0 else "", text) for i, text in enumerate(idle_machine_lines(plan))]
    rows += [("hint:", text) for text in [*shape_hint_lines(plan), part_time_hint(plan)] if text]
    if summary.budget_usd_per_month is not None:
        budget = summary.budget_usd_per_month
        share = summary.costs.total_usd_per_month / budget if budget else float("inf")
        rows.append(("budget:", f"{usd(budget)}/month: " + (over_budget_text(summary) if summary.over_budget
                                                            else f"{share:.0%} used")))
    rows.append(("change:", change_line(summary)))
    rows += [("prices:" if i == 0 else "", text) for i, text in enumerate(price_lines(plan))]
    if plan.unplaced:
        rows.append(("unplaced:", f"{summary.unplaced_workloads} workload(s), {summary.unplaced_replicas} replica(s):"))
        rows += [("", f"{u.demand or u.workload} ({u.replicas}): {u.reason}") for u in plan.unplaced[:UNPLACED_LISTED]]
        if len(plan.unplaced) > UNPLACED_LISTED:
            rows.append(("", f"… and {len(plan.unplaced) - UNPLACED_LISTED} more in the Unplaced table"))
    if cloud is not None:
        rows.append(("cloud:", cloud_line(cloud)))
    rows.append(("pools:", f"{summary.pools_used} of {summary.pools} in use; {summary.gpus_placed:,} of "
                 f"{summary.gpus_capacity:,} GPUs placed (--detailed: per pool, cost and data tables)"))
    note = objective_note(plan)
    s = plan.solver
    solver = f"{s.status} ({s.method}), gap {s.gap:.4%}, {s.seconds:.2f} s"
    rows.append(("solver:", solver))
    if note.differs:
        rows.append(("", note.describe()))
    return rows


def render_summary(console: Console, plan: Plan, summary: PlanSummary, cloud: CloudChanges | None = None) -> None:
    console.print(f"[bold]Plan {escape(plan.inventory_name)}[/]: {summary.workloads} workloads, "
                  f"{summary.placed_workloads} placed on {summary.gpus_placed:,} GPUs at {summary.sites_used} "
                  f"site(s), {summary.unplaced_workloads} unplaced")
    for label, value in summary_rows(plan, summary, cloud):
        style = "red" if label == "unplaced:" or (label == "budget:" and summary.over_budget) else "bold"
        # one line each, cut rather than folded: the summary must stay a screenful; a hint is folded, since a
        # hint cut short names no way out
        hint = label == "hint:"
        console.print(f"[{style}]{label:<{LABEL_WIDTH}}[/]{escape(value)}", no_wrap=not hint,
                      overflow="fold" if hint else "ellipsis")
