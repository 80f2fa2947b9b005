"""classify, plan, show, cost: the planning commands. Pure core underneath; nothing is changed."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hybridctl.commands.app import app, leave_to_exit
from hybridctl.commands.common import (
    BACKGROUND_CHECK_PLACEMENTS,
    ReportFormat,
    StagedFile,
    check_output_path,
    looks_like_plan,
    read_plan,
    require_state_dir,
)
from hybridctl.core.plan.model import Plan  # light: dataclasses
from hybridctl.core.showback import CostDimension  # light: the enum the --by option takes
from hybridctl.errors import CHANGES, ExitCode, UsageError

if TYPE_CHECKING:
    from rich.console import Console

    from hybridctl.commands.cloud_changes import CloudChanges
    from hybridctl.core.diagnostics import Diagnostic
    from hybridctl.core.inventory.loader import LoadedInventory
    from hybridctl.core.plan.diff import PlanDiff

# From this many workloads the feasibility checks run in a forked child beside the planner.
BACKGROUND_FEASIBILITY_WORKLOADS = 10_000


# The planner's digest stand-in: the real one is worked out beside it (_loading_checks)
_DIGEST_PENDING = ""


def _loading_checks(loaded: LoadedInventory) -> tuple[list[Diagnostic], str]:
    """What the feasibility checks find, and the inventory's digest (the plan records it)."""
    from hybridctl.core.inventory.loader import feasibility_diagnostics
    from hybridctl.core.plan.costs import inventory_digest

    return feasibility_diagnostics(loaded), inventory_digest(loaded.inventory)


def _fill_plan_file(staged: StagedFile, plan: Plan) -> None:
    from hybridctl.core.plan.serialize import plan_to_json_utf8

    staged.fill(plan_to_json_utf8(plan, plan_file=True))


def _shown(output_format: ReportFormat, result: Plan, diff: PlanDiff | None, before: Plan | None,
           baseline: Plan | None, cloud: CloudChanges, max_rows: int, detailed: bool) -> str:
    """What `plan` prints on stdout, as text: the table as rich writes it, byte for byte (its width,
    its colours, TTY or not)."""
    from hybridctl.render.console import stdout

    if output_format is not ReportFormat.table:
        return _document(output_format, result, diff, cloud)
    console = stdout()
    console.begin_capture()
    try:
        _print_table(console, result, diff, before, baseline, cloud, max_rows, detailed)
    finally:
        text = console.end_capture()
    return text


def _show(output_format: ReportFormat, result: Plan, diff: PlanDiff | None, before: Plan | None,
          baseline: Plan | None, cloud: CloudChanges, max_rows: int, detailed: bool) -> None:
    """Print what `plan` prints on stdout, as it is rendered."""
    from hybridctl.render.console import stdout

    if output_format is ReportFormat.table:
        _print_table(stdout(), result, diff, before, baseline, cloud, max_rows, detailed)
    else:
        typer.echo(_document(output_format, result, diff, cloud), nl=False)


def _document(output_format: ReportFormat, result: Plan, diff: PlanDiff | None, cloud: CloudChanges) -> str:
    from hybridctl.core.jsontext import dumps_indented
    from hybridctl.core.plan.serialize import plan_to_dict
    from hybridctl.render.plan import render_markdown

    if output_format is ReportFormat.markdown:
        return render_markdown(result, diff, cloud)
    document = plan_to_dict(result)
    document["cloud_changes"] = cloud.to_dict()
    leave_to_exit(document)
    return dumps_indented(document) + "\n"  # json.dumps(indent=2, sort_keys=True, ensure_ascii=False)


def _print_table(console: Console, result: Plan, diff: PlanDiff | None, before: Plan | None, baseline: Plan | None,
                 cloud: CloudChanges, max_rows: int, detailed: bool) -> None:
    from hybridctl.commands.cloud_changes import render_cloud_changes
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan_summary import summarize
    from hybridctl.render.plan import render_plan

    summary = summarize(result, diff_plans(baseline, result) if baseline is not None else None,
                        "previous" if before is not None else "applied")
    leave_to_exit(summary)
    render_plan(console, result, diff, max_rows, detailed=detailed, summary=summary, cloud=cloud)
    render_cloud_changes(console, cloud, max_rows)


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

    from hybridctl.core.inventory.loader import load_inventory
    from hybridctl.core.tiers import classify as classify_all
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
) -> None:
    """Compute the cost-optimal placement of every workload (a MILP solved with HiGHS)."""
    from hybridctl.core.gcpause import paused_gc
    from hybridctl.drivers.state import resolve_state_dir

    if allow_unplaced and fail_on_unplaced:
        raise UsageError("--allow-unplaced and --fail-on-unplaced contradict each other", hint="pass one of them")
    check_output_path(out, "--out")
    require_state_dir(resolve_state_dir(state))
    # The collector paused throughout, as loading and planning pause it: what follows builds a few
    # million objects and frees no cycles. They are all freed when _plan_and_show returns, inside the
    # pause: the collector, back on, then has no fleet to walk (about a second at 100,000 workloads).
    # From the console script, they are not even freed: the process's exit drops them (leave_to_exit).
    with paused_gc():
        code = _plan_and_show(inventory, out, previous, output_format, detailed_exitcode, time_limit, gap,
                              move_threshold_usd, max_rows, detailed, cloud_preview, state, allow_unplaced,
                              fail_on_unplaced)
    if code:
        raise typer.Exit(code)


def _plan_and_show(inventory: Path, out: Path | None, previous: Path | None, output_format: ReportFormat,
                   detailed_exitcode: bool, time_limit: float, gap: float, move_threshold_usd: float, max_rows: int,
                   detailed: bool, cloud_preview: bool, state: str | None, allow_unplaced: bool,
                   fail_on_unplaced: bool) -> int:
    """`plan` once its options are checked: the exit code."""
    from contextlib import ExitStack
    from dataclasses import replace
    from functools import partial

    from hybridctl.commands.cloud_changes import config_diff, pulumi_preview
    from hybridctl.core.inventory.loader import check_feasible, load_inventory
    from hybridctl.core.plan.checker import check_plan
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan.planner import PlanOptions, budget_violation, unplaced_failure
    from hybridctl.core.plan.planner import plan as make_plan
    from hybridctl.core.plan.verify import accepted
    from hybridctl.drivers.background import Background
    from hybridctl.drivers.state import applied_plan
    from hybridctl.drivers.yamlbeside import load_plain_beside
    from hybridctl.render.console import stderr, stdout

    loaded = load_inventory(inventory, feasibility=False, plain=load_plain_beside)
    # Loading's last checks, what can never be planned (feasibility.py: seconds at 100,000 workloads),
    # and the inventory's digest run in a forked child beside the planner; when the checks fail, they
    # are reported exactly as loading reports them and the plan is dropped unseen. A small inventory
    # is checked here first.
    beside = len(loaded.inventory.workloads) >= BACKGROUND_FEASIBILITY_WORKLOADS
    with Background(partial(_loading_checks, loaded), fork=beside) as checks:
        if not beside:
            loaded = check_feasible(loaded, checks.result()[0])
        try:
            before = read_plan(previous) if previous else None
            result = make_plan(loaded.inventory, previous=before, digest=_DIGEST_PENDING, options=PlanOptions(
                time_limit_s=time_limit, gap=gap, move_threshold_usd=move_threshold_usd))
        except Exception:
            if beside:  # an inventory that can never work is reported as that first
                check_feasible(loaded, checks.result()[0])
            raise
        found, digest = checks.result()
        if beside:
            loaded = check_feasible(loaded, found)
        result = replace(result, inventory_digest=digest)
    # The independent checker, and the plan file (under a temp name), are worked out in forked
    # children while this process works out the cloud changes (a large plan: seconds each; the
    # planner leaves the second core idle). Nothing is shown, saved or previewed before the
    # checker's verdict: the file is renamed into place only after it.
    forking = len(result.placements) >= BACKGROUND_CHECK_PLACEMENTS
    with ExitStack() as children:
        checking = children.enter_context(Background(partial(check_plan, loaded.inventory, result), fork=forking))
        try:
            staged = writing = None
            if out is not None:
                from hybridctl.drivers.state import current_serial

                saved = replace(result, base_serial=current_serial(state))
                staged = children.enter_context(StagedFile(out))
                writing = children.enter_context(Background(partial(_fill_plan_file, staged, saved),
                                                            fork=forking))
            diff = diff_plans(before, result) if before else None
            baseline = before if before is not None else applied_plan(state)
            cloud = None if cloud_preview else config_diff(loaded.inventory, result, baseline)
            # With children at work, what `plan` prints is worked out beside them (a second at 100,000
            # workloads) and printed only after the checker's verdict. Without, it is printed as it is
            # rendered: `plan | head -1` then still ends on the broken pipe, exit 1, as it always has.
            shown = _shown(output_format, result, diff, before, baseline, cloud, max_rows, detailed) \
                if forking and cloud is not None else None
            if writing is not None:
                writing.result()
        except Exception:
            accepted(result, checking.result())  # a plan the checker rejects is reported as that first
            raise
        accepted(result, checking.result())
        if cloud is None:
            cloud = pulumi_preview(loaded.inventory, result, state)
        if staged is not None:  # saved before it is shown: `plan --out f | head` still leaves the file
            staged.commit()
    if shown is None:
        _show(output_format, result, diff, before, baseline, cloud, max_rows, detailed)
    elif output_format is ReportFormat.table:  # as rich writes what it renders
        stdout().file.write(shown)
        stdout().file.flush()
    else:
        typer.echo(shown, nl=False)
    # Freeing what this holds takes about a second at 100,000 workloads: the console script's exit
    # drops it instead (nothing here runs at exit: the children are reaped and the file committed).
    leave_to_exit(loaded, result, before, baseline, diff, cloud)
    if out is not None:
        stderr().print(f"plan written to {out}; apply it with: hybridctl apply {out} --inventory {inventory}")
    violation = budget_violation(result)
    if violation:
        stderr().print(f"[red]error:[/] {violation}")
        stderr().print("[cyan]hint:[/] raise policies.monthly_budget_usd, or reduce replicas or hours")
        return ExitCode.FAILED
    failing = unplaced_failure(result, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced)
    if failing:
        stderr().print(f"[red]error:[/] {failing}")
        stderr().print("[cyan]hint:[/] the Unplaced table says which constraint bound each one; "
                       + ("pass --allow-unplaced to accept it" if not fail_on_unplaced
                          else "drop --fail-on-unplaced to accept unplaced work outside the fixed tier"))
        return ExitCode.FAILED
    if detailed_exitcode and (diff is None or diff.has_changes):
        return CHANGES
    return 0


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
) -> None:
    """Showback: monthly cost by tier, workload type, site, pool, workload or capacity type."""
    import csv
    import io
    import json

    from hybridctl.core.showback import showback
    from hybridctl.render.console import stdout
    from hybridctl.render.plan import print_cost_table

    if looks_like_plan(source):
        planned = read_plan(source)
    else:
        from hybridctl.core.inventory.loader import load_inventory
        from hybridctl.core.plan.planner import plan as make_plan
        from hybridctl.core.plan.verify import verified

        the_inventory = load_inventory(source).inventory
        planned = verified(the_inventory, make_plan(the_inventory))
    lines = showback(planned, by)
    if output_format is CostFormat.json:
        typer.echo(json.dumps({"format_version": 1, "by": by.value, "total_usd_per_month": planned.total_usd_per_month,
                               "lines": [{by.value: line.key, "gpus": line.gpus,
                                          "compute_usd_per_month": line.compute_usd_per_month,
                                          "data_usd_per_month": line.data_usd_per_month,
                                          "total_usd_per_month": line.total_usd_per_month} for line in lines]},
                              indent=2))
    elif output_format is CostFormat.csv:
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow([by.value, "gpus", "compute_usd_per_month", "data_usd_per_month", "total_usd_per_month"])
        for line in lines:
            writer.writerow([line.key, line.gpus, f"{line.compute_usd_per_month:.2f}", f"{line.data_usd_per_month:.2f}",
                             f"{line.total_usd_per_month:.2f}"])
        typer.echo(buffer.getvalue(), nl=False)
    else:
        console = stdout()
        print_cost_table(console, f"Monthly cost by {by.value.replace('_', ' ')}", lines, by.value)
        console.print(f"total: ${planned.total_usd_per_month:,.2f}/month")
