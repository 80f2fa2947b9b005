"""The flows behind failover and runbook: load, replan, render, and execute through apply's executor.

Runbooks are kept with the state (store documents: files in a state directory, as below, or
rows in a shared PostgreSQL state), so anyone sharing the state can resume or roll them back:

    runbooks/<runbook id>.json   every runbook that was executed (its steps, both plans)
    runbooks/active.json         the failovers in effect, oldest first: what rollback returns from

An unfinished runbook is the state's pending run of operation "runbook"; its target is the runbook id.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console

from hybridctl.commands.common import check_output_path
from hybridctl.commands.failover_compute import checked_failover, failover_of_state, steps_builder
from hybridctl.core.failover.runbook import CONFIRM_KIND, MANUAL_KIND, Runbook, RunbookKind
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.core.steps import BundleRef, Step
from hybridctl.drivers.state import State, StateStore
from hybridctl.errors import RefusedError, UsageError
from hybridctl.render.console import stderr, stdout

if TYPE_CHECKING:
    from hybridctl.core.failover.events import Event
    from hybridctl.core.failover.replan import FailoverOptions
    from hybridctl.executor import RunReport, StepRunner

OPERATION = "runbook"
INTERRUPTED = 130


@dataclass(frozen=True)
class ExecOptions:
    auto_approve: bool = False
    skip_cloud: bool = False
    bundles: Path | None = None
    bundle_public_key: Path | None = None
    known_hosts: Path | None = None
    ssh_key: Path | None = None
    lock_timeout_s: float = 0.0
    parallelism: int = 4


# --- shared pieces -------------------------------------------------------------------------------


def _load_inventory(option: Path | None, state: State) -> Inventory:
    from hybridctl.core.inventory.loader import load_inventory

    path = option or (Path(state.inventory_path) if state.inventory_path else None)
    if path is None:
        raise UsageError("the state records no inventory path: pass --inventory PATH")
    return load_inventory(path).inventory


def _require_applied(state: State, store: StateStore) -> Mapping[str, Any]:
    if not state.applied_plan:
        raise RefusedError(f"nothing is applied in {store.location}: failover replans from the applied plan",
                           hint="apply a plan first (`hybridctl apply`), or rehearse with `hybridctl drill INVENTORY`")
    return state.applied_plan


def _applied(state: State, store: StateStore) -> Plan:
    from hybridctl.core.plan.serialize import plan_from_dict

    return plan_from_dict(dict(_require_applied(state, store)), store.location)


def _emit(runbook: Runbook, output_format: str) -> None:
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.render.failover import render_runbook, runbook_markdown

    if output_format == "json":
        typer.echo(runbook_to_json(runbook), nl=False)
    elif output_format == "markdown":
        typer.echo(runbook_markdown(runbook), nl=False)
    else:
        render_runbook(stdout(), runbook)


@contextlib.contextmanager
def _maybe_locked(store: StateStore, command: str, timeout_s: float, execute: bool) -> Iterator[None]:
    if not execute:
        yield
        return
    from hybridctl.commands.apply_flow import locked

    with locked(store, command, timeout_s, stderr()):
        yield


def _refs(options: ExecOptions, workloads: set[str]) -> dict[str, BundleRef] | None:
    if options.bundles is None:
        return None
    from hybridctl.commands.apply_flow import load_bundles

    return load_bundles(options.bundles, options.bundle_public_key, workloads, stderr())


# --- runbook files -------------------------------------------------------------------------------


def _runbook_name(runbook_id: str) -> str:
    return f"runbooks/{runbook_id}.json"


def _save(store: StateStore, runbook: Runbook) -> str:
    """Kept with the state (a file in a state directory, a row in a shared database)."""
    from hybridctl.core.failover.serialize import runbook_to_json

    name = _runbook_name(runbook.id)
    store.write_document(name, runbook_to_json(runbook))
    return name


def _read(store: StateStore, runbook_id: str) -> Runbook:
    from hybridctl.core.failover.serialize import RunbookFileError, runbook_from_json

    name = _runbook_name(runbook_id)
    text = store.read_document(name)
    if text is None:
        raise RunbookFileError(f"{store.location}: runbook {name} is missing")
    return runbook_from_json(text, name)


def _active(store: StateStore) -> list[str]:
    text = store.read_document("runbooks/active.json")
    raw = json.loads(text) if text else {}
    chain = raw.get("failovers", []) if isinstance(raw, dict) else []
    return [str(x) for x in chain]


def _set_active(store: StateStore, chain: list[str]) -> None:
    if chain:
        store.write_document("runbooks/active.json", json.dumps({"failovers": chain}, indent=2) + "\n")
    else:
        store.remove_document("runbooks/active.json")


# --- execution -----------------------------------------------------------------------------------


def _confirm_runner(auto_approve: bool, out: Console) -> StepRunner:
    from hybridctl.executor import StepContext, StepOutcome, StepStatus

    def run(step: Step, context: StepContext) -> StepOutcome:
        del context
        if auto_approve:
            return StepOutcome(StepStatus.DONE, "approved by --auto-approve", detail={"approved_by": "--auto-approve"})
        if step.kind == MANUAL_KIND:
            shown, question = f"manual step: {step.params.get('instruction')}", "Done?"
        else:
            listed = step.params.get("steps")
            names = [str(s) for s in listed] if isinstance(listed, list) else []
            shown = f"next: {step.params.get('title', step.id)} ({len(names)} step(s): {', '.join(names)})"
            question = "Go ahead?"
        out.print(shown, markup=False)
        if typer.confirm(question, default=False):
            return StepOutcome(StepStatus.DONE, "approved by the operator", detail={"approved_by": "operator"})
        return StepOutcome(StepStatus.FAILED, "declined", "declined by the operator: `hybridctl runbook resume` "
                           "asks again")

    return run


def _on_success(store: StateStore, runbook: Runbook) -> Callable[[State, RunReport], State]:
    from hybridctl.core.plan.serialize import plan_to_dict
    from hybridctl.core.stackconfig import plan_digest
    from hybridctl.drivers.state import now_iso

    def record(state: State, report: RunReport) -> State:
        del report
        chain = _active(store)
        if runbook.kind is RunbookKind.FAILOVER:
            _set_active(store, [*chain, runbook.id])
        else:
            _set_active(store, [])
        return replace(state, applied_plan=plan_to_dict(runbook.after, plan_file=True),
                       applied_plan_digest=plan_digest(runbook.after), applied_at=now_iso())

    return record


def _execute(store: StateStore, runbook: Runbook, options: ExecOptions, out: Console) -> int:
    from hybridctl.commands.apply_flow import execute_and_report, prepare_cloud, runners_for, ssh_options
    from hybridctl.executor import pending_for
    from hybridctl.render.apply import PlainProgress, progress_for

    if not options.auto_approve and not sys.stdin.isatty():
        raise RefusedError("executing a runbook needs approval for each group of steps, and there is no terminal "
                           "to ask on", hint="review the runbook above, then pass --auto-approve (e.g. in CI)")
    current = store.read()
    pending = pending_for(current, OPERATION)
    if pending is not None and pending.target != runbook.id:
        raise RefusedError(f"runbook {pending.target} is unfinished in {store.location}",
                           hint="finish it first with `hybridctl runbook resume`")
    if current.pending is not None and pending is None:
        stderr().print(f"note: the unfinished {current.pending.operation} is superseded by this runbook")
    graph = runbook.graph
    driver, skip = prepare_cloud(store, graph, options.skip_cloud, stderr())
    ssh = ssh_options(store, options.known_hosts, options.ssh_key)
    runners = {**runners_for(store, driver, ssh), CONFIRM_KIND: _confirm_runner(options.auto_approve, out),
               MANUAL_KIND: _confirm_runner(options.auto_approve, out)}
    name = _save(store, runbook)
    code = execute_and_report(store, graph, runners, out, operation=OPERATION, target=runbook.id, skip=skip,
                              parallelism=options.parallelism, on_success=_on_success(store, runbook),
                              detail={"runbook": runbook.id, "kind": runbook.kind.value, "file": name},
                              observer=progress_for(out) if options.auto_approve else PlainProgress(out),
                              subject=f"runbook {runbook.id}",
                              when_interrupted="`hybridctl runbook resume` finishes it",
                              retry="`hybridctl runbook resume`")
    if code:
        return code
    if runbook.kind is RunbookKind.FAILOVER:
        out.print(f"failover done. Once the site is back: hybridctl runbook rollback --state {store.option}")
    return 0


# --- the commands --------------------------------------------------------------------------------


def run_failover(words: Sequence[str], *, state: str | None, inventory: Path | None, output_format: str,
                 out: Path | None, execute: bool, move_threshold_usd: float, time_limit_s: float,
                 options: ExecOptions, plan_file: Path | None = None) -> int:
    from hybridctl.commands.apply_flow import open_store
    from hybridctl.core.failover.events import check_events, parse_events
    from hybridctl.core.failover.replan import FailoverOptions
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.drivers.files import atomic_write_text

    check_output_path(out, "--out")
    events = parse_events(words)
    if plan_file is not None:
        return _rehearse_failover(events, plan_file, inventory, state=state, execute=execute,
                                  output_format=output_format, out=out,
                                  options=FailoverOptions(move_threshold_usd, time_limit_s), bundles=options)
    store = open_store(state)
    with _maybe_locked(store, "failover " + " ".join(words), options.lock_timeout_s, execute):
        current = store.read()
        _require_applied(current, store)
        the_inventory = _load_inventory(inventory, current)
        check_events(events, the_inventory)
        refs = _refs(options, {w.name for w in the_inventory.workloads})
        runbook = failover_of_state(the_inventory, current, partial(_applied, current, store), events, refs=refs,
                                    public_key=options.bundle_public_key,
                                    options=FailoverOptions(move_threshold_usd, time_limit_s))
        if runbook.before.inventory_digest and runbook.before.inventory_digest != runbook.after.inventory_digest:
            stderr().print("note: the inventory has changed since the applied plan was made; the failover "
                           "replans the applied placements against the inventory as it is now")
        _emit(runbook, output_format)
        if out is not None:
            atomic_write_text(out, runbook_to_json(runbook))
        if not execute:
            return 0
        return _execute(store, runbook, options, stdout() if output_format != "json" else stderr())


def _rehearse_failover(events: Sequence[Event], plan_file: Path, inventory: Path | None, *, state: str | None,
                       execute: bool, output_format: str, out: Path | None, options: FailoverOptions,
                       bundles: ExecOptions) -> int:
    """The runbook the applied state would give, from a plan file: nothing is read from a state or run."""
    from hybridctl.core.failover.events import check_events
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.drivers.files import atomic_write_text

    if execute:
        raise UsageError("--execute needs an applied state: a runbook rehearsed from --plan cannot be executed",
                         hint="drop --plan to fail over what the state records as applied")
    if state is not None:
        raise UsageError("--plan and --state exclude each other: a rehearsal reads no state")
    if inventory is None:
        raise UsageError("--plan needs --inventory PATH: the inventory the plan was made from")
    from hybridctl.commands.drill_flow import rehearsal_base

    applied, the_inventory = rehearsal_base(plan_file, inventory)
    check_events(events, the_inventory)
    refs = _refs(bundles, {w.name for w in the_inventory.workloads})
    # rehearsal_base found the plan's inventory digest to be this inventory's
    runbook = checked_failover(the_inventory, applied, events, options=options, digest=applied.inventory_digest,
                               steps_for=steps_builder(the_inventory, None, refs, bundles.bundle_public_key,
                                                       applied=applied))
    _emit(runbook, output_format)
    if out is not None:
        atomic_write_text(out, runbook_to_json(runbook))
    return 0


def run_resume(state: str | None, options: ExecOptions) -> int:
    from hybridctl.commands.apply_flow import locked, open_store
    from hybridctl.executor import pending_for
    from hybridctl.render.failover import render_runbook

    store = open_store(state)
    out = stdout()
    with locked(store, "runbook resume", options.lock_timeout_s, stderr()):
        pending = pending_for(store.read(), OPERATION)
        if pending is None:
            out.print(f"no unfinished runbook in {store.location}: nothing to resume")
            return 0
        runbook = _read(store, pending.target)
        done = store.journal.done_keys(pending.run_ids)
        left = [s for s in runbook.steps if done.get(s.id) != s.step.key]
        render_runbook(out, runbook)
        out.print(f"resuming {runbook.id}: {len(runbook.steps) - len(left)} step(s) done, {len(left)} to run")
        return _execute(store, runbook, options, out)


def run_rollback(state: str | None, inventory: Path | None, *, dry_run: bool, output_format: str,
                 options: ExecOptions) -> int:
    from hybridctl.commands.apply_flow import open_store
    from hybridctl.core.failover.failover import plan_rollback, returning_sites
    from hybridctl.core.plan.costs import inventory_digest
    from hybridctl.executor import pending_for

    store = open_store(state)
    with _maybe_locked(store, "runbook rollback", options.lock_timeout_s, not dry_run):
        current = store.read()
        pending = pending_for(current, OPERATION)
        if pending is not None and not dry_run:
            raise RefusedError(f"runbook {pending.target} is unfinished", hint="finish it first: hybridctl runbook resume")
        chain = [_read(store, rid) for rid in _active(store)]
        if not chain:
            raise RefusedError(f"no failover is in effect in {store.location}: there is nothing to roll back")
        the_inventory = _load_inventory(inventory, current)
        original = chain[0]
        if original.before.inventory_digest != inventory_digest(the_inventory):
            raise RefusedError("the inventory changed since the failover: the pre-failover plan no longer fits it",
                               hint="make a new plan instead: hybridctl plan INVENTORY --previous, then apply it")
        refs = _refs(options, {w.name for w in the_inventory.workloads})
        applied = _applied(current, store)
        runbook = plan_rollback(the_inventory, original, applied,
                                steps_for=steps_builder(the_inventory, current, refs, options.bundle_public_key,
                                                        applied=applied),
                                returning_sites=returning_sites(chain), base_serial=current.serial)
        _emit(runbook, output_format)
        if dry_run:
            return 0
        return _execute(store, runbook, options, stdout() if output_format != "json" else stderr())


def run_show(state: str | None, output_format: str) -> int:
    from hybridctl.commands.apply_flow import open_store
    from hybridctl.executor import pending_for

    store = open_store(state)
    current = store.read()
    pending = pending_for(current, OPERATION)
    if pending is not None:
        _emit(_read(store, pending.target), output_format)
        stderr().print(f"runbook {pending.target} is unfinished: `hybridctl runbook resume` finishes it")
        return 0
    chain = _active(store)
    if not chain:
        stdout().print(f"no failover is in effect in {store.location}")
        return 0
    _emit(_read(store, chain[-1]), output_format)
    return 0


# --- what apply needs to know ---------------------------------------------------------------------


def active_failovers(store: StateStore) -> list[str]:
    """The failovers in effect, oldest first (apply refuses to undo them silently)."""
    return _active(store)


def end_failovers(store: StateStore) -> None:
    """An apply with --end-failover succeeded: no failover is in effect any more."""
    _set_active(store, [])
