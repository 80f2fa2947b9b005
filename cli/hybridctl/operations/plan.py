"""plan: load, plan, check and show, with the plan file saved only after the checker's verdict.

A large fleet's feasibility checks, independent check and plan file are worked out in forked
children beside the planner and the rendering (drivers/background.py; docs/architecture.md has
what they save); below BACKGROUND_CHECK_PLACEMENTS everything runs here, in order.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.core.plan.model import Plan
from hybridctl.errors import ChangesFound, ExitCode
from hybridctl.exiting import leave_to_exit
from hybridctl.operations.common import (
    BACKGROUND_CHECK_PLACEMENTS,
    ReportFormat,
    StagedFile,
    check_output_path,
    plan_failure,
    read_plan,
    require_state_dir,
)
from hybridctl.render.terminal import Terminal

if TYPE_CHECKING:
    from rich.console import Console

    from hybridctl.core.deploy.stackdiff import CloudChanges
    from hybridctl.core.inventory.diagnostics import Diagnostic
    from hybridctl.core.inventory.loader import LoadedInventory
    from hybridctl.core.plan.diff import PlanDiff
    from hybridctl.core.week.segments import IsoWeek

# From this many workloads the feasibility checks run in a forked child beside the planner.
BACKGROUND_FEASIBILITY_WORKLOADS = 10_000


# The planner's digest stand-in: the real one is worked out beside it (_loading_checks)
_DIGEST_PENDING = ""


def _loading_checks(loaded: LoadedInventory) -> tuple[list[Diagnostic], str]:
    """What the feasibility checks find, and the inventory's digest (the plan records it)."""
    from hybridctl.core.inventory.digest import inventory_digest
    from hybridctl.core.inventory.loader import feasibility_diagnostics

    return feasibility_diagnostics(loaded), inventory_digest(loaded.inventory)


def _fill_plan_file(staged: StagedFile, plan: Plan) -> None:
    from hybridctl.core.plan.serialize import plan_to_json_utf8

    staged.fill(plan_to_json_utf8(plan, plan_file=True))


def _shown(output_format: ReportFormat, result: Plan, diff: PlanDiff | None, before: Plan | None,
           baseline: Plan | None, cloud: CloudChanges, max_rows: int, detailed: bool, view: Terminal) -> str:
    """What `plan` prints on stdout, as text: the table as rich writes it, byte for byte (its width,
    its colours, TTY or not)."""
    if output_format is not ReportFormat.table:
        return _document(output_format, result, diff, cloud)
    return view.captured(lambda console: _print_table(console, result, diff, before, baseline, cloud, max_rows,
                                                      detailed))


def _show(output_format: ReportFormat, result: Plan, diff: PlanDiff | None, before: Plan | None,
          baseline: Plan | None, cloud: CloudChanges, max_rows: int, detailed: bool, view: Terminal) -> None:
    """Print what `plan` prints on stdout, as it is rendered."""
    if output_format is ReportFormat.table:
        _print_table(view.out, result, diff, before, baseline, cloud, max_rows, detailed)
    else:
        view.document(_document(output_format, result, diff, cloud))


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
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.core.plan.summary import summarize
    from hybridctl.render.cloud_changes import render_cloud_changes
    from hybridctl.render.plan import render_plan

    summary = summarize(result, diff_plans(baseline, result) if baseline is not None else None,
                        "previous" if before is not None else "applied")
    leave_to_exit(summary)
    render_plan(console, result, diff, max_rows, detailed=detailed, summary=summary, cloud=cloud)
    render_cloud_changes(console, cloud, max_rows)


def run_plan(inventory: Path, out: Path | None, previous: Path | None, output_format: ReportFormat,
             detailed_exitcode: bool, time_limit: float, gap: float, move_threshold_usd: float, max_rows: int,
             detailed: bool, cloud_preview: bool, state: str | None, allow_unplaced: bool,
             fail_on_unplaced: bool, week_text: str | None, view: Terminal) -> int:
    """`plan`: the exit code. `week_text`: --week's (None: the current week)."""
    from hybridctl.drivers.state import resolve_state_dir
    from hybridctl.operations.moments import parse_week

    check_output_path(out, "--out")
    week = parse_week(week_text)
    require_state_dir(resolve_state_dir(state))
    return _plan(inventory, out, previous, output_format, detailed_exitcode, time_limit, gap, move_threshold_usd,
                 max_rows, detailed, cloud_preview, state, allow_unplaced, fail_on_unplaced, week, view)


def _plan(inventory: Path, out: Path | None, previous: Path | None, output_format: ReportFormat,
          detailed_exitcode: bool, time_limit: float, gap: float, move_threshold_usd: float, max_rows: int,
          detailed: bool, cloud_preview: bool, state: str | None, allow_unplaced: bool,
          fail_on_unplaced: bool, week: IsoWeek | None, view: Terminal) -> int:
    """`plan` once its options are checked. `week`: None for the current week."""
    from contextlib import ExitStack
    from dataclasses import replace
    from functools import partial

    from hybridctl.core.checker.verify import accepted, planner_violations
    from hybridctl.core.inventory.loader import check_feasible
    from hybridctl.core.placement.planner import PlanOptions
    from hybridctl.core.placement.planner import plan as make_plan
    from hybridctl.core.plan.diff import diff_plans
    from hybridctl.drivers.background import Background
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.state import applied_plan
    from hybridctl.operations.cloud_changes import config_diff, pulumi_preview
    from hybridctl.operations.week import planning_week

    loaded = load_inventory(inventory, feasibility=False)
    _note_failover_in_effect(state, view)
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
            options = PlanOptions(time_limit_s=time_limit, gap=gap, move_threshold_usd=move_threshold_usd,
                                  week=planning_week(week))
            result = make_plan(loaded.inventory, previous=before, digest=_DIGEST_PENDING, options=options)
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
    # Over budget, or work left unplaced that must run: `plan` fails (exit 1). Work left unplaced writes no
    # plan file, as Terraform's plan does when it errors: apply would refuse it for the same reason
    # (plan_failure). A plan over budget is written, marked over_budget, for show, cost and report to present
    # (spec, "Budget"): apply refuses it without --allow-over-budget.
    failure = plan_failure(result, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced)
    unwritten = plan_failure(result, allow_unplaced=allow_unplaced, fail_on_unplaced=fail_on_unplaced,
                             allow_over_budget=True)
    with ExitStack() as children:
        checking = children.enter_context(Background(partial(planner_violations, loaded.inventory, result, options, before),
                                                          fork=forking))
        try:
            staged = writing = None
            if out is not None and unwritten is None:
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
            shown = _shown(output_format, result, diff, before, baseline, cloud, max_rows, detailed, view) \
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
        _show(output_format, result, diff, before, baseline, cloud, max_rows, detailed, view)
    elif output_format is ReportFormat.table:  # as rich writes what it renders
        view.raw(shown)
    else:
        view.document(shown)
    # Freeing what this holds takes about a second at 100,000 workloads: the console script's exit
    # drops it instead (nothing here runs at exit: the children are reaped and the file committed).
    leave_to_exit(loaded, result, before, baseline, diff, cloud)
    _note_aged_prices(loaded, view)
    if failure is not None:
        view.note(f"[red]error:[/] {failure.message}")
        view.note(f"[cyan]hint:[/] {failure.hint}")
        if out is not None and unwritten is None:
            view.note(f"plan written to {out}, marked over budget: apply refuses it without --allow-over-budget")
        elif out is not None:
            view.note(f"no plan file written to {out}: apply would refuse this plan for the same reason")
        return ExitCode.FAILED
    if out is not None:
        view.note(f"plan written to {out}; apply it with: hybridctl apply {out} --inventory {inventory}")
    if result.solver.status == "time_limit":  # valid, but not the plan these inputs give when the solver ends
        view.note(f"[yellow]warning:[/] the solver's safety net (--time-limit {time_limit:g} s) cut this plan short: "
                  "it is valid, but another run may plan otherwise")
        view.note("[cyan]hint:[/] raise --time-limit: the solver's work is bounded by count, so a plan it finishes "
                  "is the same on any machine")
        return ExitCode.CUT_SHORT
    # a change is placements, pools, cost (to the cent) or the stack configuration
    if detailed_exitcode and (diff is None or diff.has_changes or any(r.action != "same" for r in cloud.rows)):
        raise ChangesFound
    return 0


def _note_failover_in_effect(state: str | None, view: Terminal) -> None:
    """A plan made while a failover is in effect plans the whole inventory, the lost site included: said before
    it is shown, with the way back a failover has."""
    import shlex

    from hybridctl.operations.run import active_failovers, open_store

    store = open_store(state, view)
    if not store.exists():
        return
    chain = active_failovers(store)
    if chain:
        view.note(f"note: failover {', '.join(chain)} is in effect in {store.location}: this plan ignores it and "
                  "plans every site as if none were lost; once the sites are back, `hybridctl runbook rollback "
                  f"--state {shlex.quote(str(store.option))}` returns from it (apply refuses this plan without "
                  "--end-failover)", markup=False)


AGED_PRICES_NOTED = 2  # the pools named; the rest are counted


def _note_aged_prices(loaded: LoadedInventory, view: Terminal) -> None:
    """Catalog prices read long before today (policies.catalog_price_max_age_days): a note, not a failure,
    since the plan is still the plan of the prices it was given."""
    from datetime import UTC, datetime

    from rich.markup import escape

    from hybridctl.core.inventory.price_age import aged_catalog_prices

    aged = aged_catalog_prices(loaded.inventory, loaded.locator, datetime.now(UTC).date())
    for d in aged[:AGED_PRICES_NOTED]:
        view.note(f"[yellow]note:[/] {escape(str(d.location))}: {escape(d.message)}")
    if len(aged) > AGED_PRICES_NOTED:
        view.note(f"[yellow]note:[/] … and {len(aged) - AGED_PRICES_NOTED} more pool(s) priced from aged catalog "
                  "prices")
    if aged:
        view.note(f"[cyan]hint:[/] {escape(aged[0].hint or '')}")
