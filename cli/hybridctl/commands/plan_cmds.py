"""classify, plan, show, cost: the planning commands. Pure core underneath; nothing is changed."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.commands.moments import WEEK_HELP, parse_week, week_of_source
from hybridctl.core.pricing.showback import CostDimension  # light: the enum the --by option takes
from hybridctl.errors import UsageError
from hybridctl.operations.common import (
    ReportFormat,
    check_output_path,
    looks_like_plan,
    read_plan,
    require_state_dir,
)


class TableOrJson(StrEnum):
    table = "table"
    json = "json"


class CostFormat(StrEnum):
    table = "table"
    csv = "csv"
    json = "json"


@app.command()
def classify(
    inventory: Path = typer.Argument(..., help="Inventory file or directory."),
    output_format: TableOrJson = typer.Option(TableOrJson.table, "--format", "-f", help="Output format."),
) -> None:
    """Show each workload's tier, the rule that decided it, and the capacity types it may use."""
    import json

    from hybridctl.core.placement.tiers import classify as classify_all
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import render_classification

    decisions = classify_all(load_inventory(inventory).inventory)
    if output_format is TableOrJson.json:
        typer.echo(json.dumps({"format_version": 1, "workloads": [
            {"workload": d.workload, "tier": d.tier.value, "rule": d.rule, "reason": d.reason,
             "capacity_types": [c.value for c in d.capacity_types]} for d in decisions]}, indent=2))
    else:
        render_classification(stdout(), decisions)


@app.command()
def plan(
    inventory: Path = typer.Argument(..., help="Inventory file or directory."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write a plan file for `apply` (byte-stable JSON)."),
    previous: Path | None = typer.Option(None, "--previous", help="A previous plan file: keep workloads where "
                                         "they are unless moving saves more than --move-threshold-usd, and show the diff."),
    output_format: ReportFormat = typer.Option(ReportFormat.table, "--format", "-f", help="Output format."),
    detailed_exitcode: bool = typer.Option(False, "--detailed-exitcode",
                                           help="Exit 0 if nothing changed against --previous, 2 if something did, 1 on error."),
    time_limit: float = typer.Option(30.0, "--time-limit", min=0.1, help="Solver time limit in seconds."),
    gap: float = typer.Option(1e-4, "--gap", min=0.0, max=1.0, help="Relative optimality gap at which to stop."),
    move_threshold_usd: float = typer.Option(100.0, "--move-threshold-usd", min=0.0,
                                             help="With --previous: the saving per month that justifies moving a replica."),
    max_rows: int = typer.Option(200, "--max-rows", min=0, help="Table format: rows per table at most (0: all)."),
    detailed: bool = typer.Option(False, "--detailed", help="Table format: also the pools, the cost by tier, type, "
                                  "site and capacity type, and the data movements."),
    cloud_preview: bool = typer.Option(False, "--cloud-preview",
                                       help="Cloud changes from a real `pulumi preview` of every stack (needs the "
                                            "pulumi CLI and credentials) instead of the stack-configuration diff."),
    state: str | None = typer.Option(None, "--state", help="State directory whose serial a plan file records, so that "
                                      "apply refuses it once the state has moved on (default: $HYBRIDCTL_STATE, "
                                      "else ./.hybridctl/state)."),
    allow_unplaced: bool = typer.Option(False, "--allow-unplaced",
                                        help="Exit 0 even when fixed-tier work is left unplaced."),
    fail_on_unplaced: bool = typer.Option(False, "--fail-on-unplaced",
                                          help="Exit 1 when any workload, of any tier, is left unplaced."),
    week: str | None = typer.Option(None, "--week", metavar="YYYY-Www", help=WEEK_HELP),
) -> None:
    """Compute the cost-optimal placement of every workload (a MILP solved with HiGHS)."""
    from hybridctl.drivers.state import resolve_state_dir
    from hybridctl.operations.plan import run_plan

    if allow_unplaced and fail_on_unplaced:
        raise UsageError("--allow-unplaced and --fail-on-unplaced contradict each other", hint="pass one of them")
    check_output_path(out, "--out")
    plan_week = parse_week(week)
    require_state_dir(resolve_state_dir(state))
    code = run_plan(inventory, out, previous, output_format, detailed_exitcode, time_limit, gap,
                    move_threshold_usd, max_rows, detailed, cloud_preview, state, allow_unplaced, fail_on_unplaced,
                    week=plan_week)
    if code:
        raise typer.Exit(code)


@app.command()
def show(
    plan_file: Path = typer.Argument(..., help="A plan file written by `plan --out`."),
    output_format: ReportFormat = typer.Option(ReportFormat.table, "--format", "-f", help="Output format."),
    max_rows: int = typer.Option(200, "--max-rows", min=0, help="Table format: rows per table at most (0: all)."),
    detailed: bool = typer.Option(False, "--detailed", help="Table format: also the pools, the cost breakdowns and "
                                  "the data movements."),
) -> None:
    """Render a saved plan again."""
    from hybridctl.core.plan.serialize import plan_to_json
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import render_markdown, render_plan

    saved = read_plan(plan_file)
    if output_format is ReportFormat.json:
        typer.echo(plan_to_json(saved), nl=False)
    elif output_format is ReportFormat.markdown:
        typer.echo(render_markdown(saved), nl=False)
    else:
        render_plan(stdout(), saved, max_rows=max_rows, detailed=detailed)


@app.command()
def cost(
    source: Path = typer.Argument(..., help="An inventory (planned first) or a plan file (*.json)."),
    by: CostDimension = typer.Option(CostDimension.tier, "--by", help="Break the monthly cost down by this."),
    output_format: CostFormat = typer.Option(CostFormat.table, "--format", "-f", help="Output format."),
    week: str | None = typer.Option(None, "--week", metavar="YYYY-Www", help=WEEK_HELP + " Not with a plan file: "
                                    "its costs are of the plan's own week."),
) -> None:
    """Showback: monthly cost by tier, workload type, site, pool, workload or capacity type."""
    import csv
    import io
    import json

    from hybridctl.core.pricing.showback import showback
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import print_cost_table

    cost_week = week_of_source(week, source, what="costs")
    if looks_like_plan(source):
        planned = read_plan(source)
    else:
        from hybridctl.drivers.inventory_files import load_inventory
        from hybridctl.operations.week import planned as planned_for

        planned = planned_for(load_inventory(source).inventory, cost_week)
    lines = showback(planned, by)
    if output_format is CostFormat.json:
        typer.echo(json.dumps({"format_version": 1, "by": by.value, "total_usd_per_month": planned.total_usd_per_month,
                               "lines": [{by.value: line.key, "gpus": line.gpus,
                                          "gpu_hours_per_month": line.gpu_hours_per_month,
                                          "compute_usd_per_month": line.compute_usd_per_month,
                                          "idle_pay_per_use_usd_per_month": line.idle_usd_per_month,
                                          "data_usd_per_month": line.data_usd_per_month,
                                          "total_usd_per_month": line.total_usd_per_month} for line in lines]},
                              indent=2))
    elif output_format is CostFormat.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        # columns added at the end (gpu_hours_per_month, idle_pay_per_use_usd_per_month): a reader by position still reads
        writer.writerow([by.value, "gpus", "compute_usd_per_month", "data_usd_per_month", "total_usd_per_month",
                         "gpu_hours_per_month", "idle_pay_per_use_usd_per_month"])
        for line in lines:
            writer.writerow([line.key, line.gpus, f"{line.compute_usd_per_month:.2f}", f"{line.data_usd_per_month:.2f}",
                             f"{line.total_usd_per_month:.2f}", f"{line.gpu_hours_per_month:.2f}",
                             f"{line.idle_usd_per_month:.2f}"])
        typer.echo(buffer.getvalue(), nl=False)
    else:
        console = stdout()
        print_cost_table(console, f"Monthly cost by {by.value.replace('_', ' ')}", lines, by.value)
        console.print(f"total: ${planned.total_usd_per_month:,.2f}/month")
