"""classify, plan, show, cost: the planning commands. Pure core underneath; nothing is changed."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.commands.moments import WEEK_HELP
from hybridctl.errors import UsageError
from hybridctl.operations.common import SAFETY_SECONDS, ReportFormat, read_plan
from hybridctl.operations.cost import CostDimension
from hybridctl.render.untrusted import echo


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

    from hybridctl.operations.inventory import classify_inventory
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import render_classification

    decisions = classify_inventory(inventory)
    if output_format is TableOrJson.json:
        echo(json.dumps({"format_version": 1, "workloads": [
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
    time_limit: float = typer.Option(SAFETY_SECONDS, "--time-limit", min=0.1, help="A safety net only: stop the solver after this many seconds of wall time (its work is otherwise counted, so a plan never depends on the machine's speed or load); a plan it cuts short says so and exits 5."),
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
    from hybridctl.operations.plan import run_plan
    from hybridctl.render.terminal import Terminal

    if allow_unplaced and fail_on_unplaced:
        raise UsageError("--allow-unplaced and --fail-on-unplaced contradict each other", hint="pass one of them")
    code = run_plan(inventory, out, previous, output_format, detailed_exitcode, time_limit, gap,
                    move_threshold_usd, max_rows, detailed, cloud_preview, state, allow_unplaced, fail_on_unplaced,
                    week, Terminal())
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
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import show_saved_plan

    show_saved_plan(stdout(), read_plan(plan_file), output_format.value, max_rows=max_rows, detailed=detailed)


@app.command()
def cost(
    source: Path = typer.Argument(..., help="An inventory (planned first) or a plan file (*.json)."),
    by: CostDimension = typer.Option(CostDimension.tier, "--by", help="Break the monthly cost down by this."),
    output_format: CostFormat = typer.Option(CostFormat.table, "--format", "-f", help="Output format."),
    week: str | None = typer.Option(None, "--week", metavar="YYYY-Www", help=WEEK_HELP + " Not with a plan file: "
                                    "its costs are of the plan's own week."),
) -> None:
    """Showback: monthly cost by tier, workload type, site, pool, workload or capacity type."""
    from hybridctl.operations.cost import cost_by
    from hybridctl.render.cost import show_cost

    planned, lines = cost_by(source, by, week)
    show_cost(by, planned, lines, output_format.value)
