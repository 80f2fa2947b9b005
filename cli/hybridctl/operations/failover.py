"""The flows behind failover and runbook: load, replan, render, and execute through apply's executor.

Runbooks are kept with the state (store documents: files in a state directory, as below, or
rows in a shared PostgreSQL state), so anyone sharing the state can resume or roll them back:

    runbooks/<runbook id>.json   every runbook that was executed (its steps, both plans)
    runbooks/active.json         the failovers in effect, oldest first: what rollback returns from

An unfinished runbook is the state's pending run of operation "runbook"; its target is the runbook id.
"""

from __future__ import annotations

import contextlib
import queue
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybridctl.core.deploy.steps import BundleRef, Step
from hybridctl.core.failover.runbook import CONFIRM_KIND, MANUAL_KIND, Runbook, RunbookKind
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.state import State, StateStore
from hybridctl.errors import RefusedError, UsageError
from hybridctl.operations.common import check_output_path
from hybridctl.operations.failover_compute import command_run, failover_of_state
from hybridctl.operations.run import active_failovers, failover_base, set_active_failovers
from hybridctl.render.terminal import Terminal

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
    # the operator did the manual steps (fencing, a link's check) by hand: record them done without asking.
    # Never implied by auto_approve, which approves the automated groups only
    manual_steps_done: bool = False


MANUAL_FLAG = "--manual-steps-done"


# --- shared pieces -------------------------------------------------------------------------------


def _load_inventory(option: Path | None, state: State) -> Inventory:
    from hybridctl.drivers.inventory_files import load_inventory

    path = option or (Path(state.inventory_path) if state.inventory_path else None)
    if path is None:
        raise UsageError("the state records no inventory path: pass --inventory PATH")
    return load_inventory(path).inventory


def _require_applied(state: State, store: StateStore, rehearsal: str = "") -> Mapping[str, Any]:
    if not state.applied_plan:
        raise RefusedError(f"nothing is applied in {store.location}: failover replans from the applied plan",
                           hint=rehearsal or "apply a plan first (`hybridctl apply`), or rehearse with "
                           "`hybridctl drill INVENTORY`")
    return state.applied_plan


def _rehearsal_hint(words: Sequence[str], inventory: Path | None, state: State) -> str:
    """The single-event rehearsal of these very events, which reads no state: what an operator without an
    apply was looking for (a drill replays a whole scenario set)."""
    import shlex

    path = inventory or (Path(state.inventory_path) if state.inventory_path else None)
    where = shlex.quote(str(path)) if path else "INVENTORY"
    return (f"rehearse it from a plan file: `hybridctl plan {where} --out plan.json`, then "
            f"`hybridctl failover {shlex.join(words)} --plan plan.json -i {where}`; apply a plan first "
            f"(`hybridctl apply plan.json`) to fail over for real, or run every standard scenario with "
            f"`hybridctl drill {where} --standard`")


def _applied(state: State, store: StateStore) -> Plan:
    from hybridctl.operations.run import applied_of

    _require_applied(state, store)
    applied = applied_of(store, state)
    assert applied is not None
    return applied


def _timed(runbook: Runbook, at: datetime) -> Runbook:
    """The runbook with when it acts in its plan's week (core/failover/timing.py)."""
    from hybridctl.core.failover.timing import runbook_timing

    return replace(runbook, timing=runbook_timing(runbook, at))


def _emit(runbook: Runbook, output_format: str, view: Terminal, run_memo: RunMemo | None = None) -> None:
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.render.failover import render_runbook, runbook_markdown

    if output_format == "json":
        view.document(runbook_to_json(runbook, run_memo))
    elif output_format == "markdown" and not view.out.is_terminal:  # on a terminal: rendered, not raw markdown
        view.document(runbook_markdown(runbook))
    else:
        render_runbook(view.out, runbook)


@contextlib.contextmanager
def _maybe_locked(store: StateStore, command: str, timeout_s: float, execute: bool,
                  view: Terminal) -> Iterator[None]:
    if not execute:
        yield
        return
    from hybridctl.operations.run import locked

    with locked(store, command, timeout_s, view):
        yield


def _refs(options: ExecOptions, workloads: set[str], view: Terminal) -> dict[str, BundleRef] | None:
    if options.bundles is None:
        return None
    from hybridctl.operations.run import load_bundles

    return load_bundles(options.bundles, options.bundle_public_key, workloads, view)


# --- runbook files -------------------------------------------------------------------------------


def _runbook_name(runbook_id: str) -> str:
    return f"runbooks/{runbook_id}.json"


def _save(store: StateStore, runbook: Runbook, run_memo: RunMemo | None = None) -> str:
    """Kept with the state (a file in a state directory, a row in a shared database)."""
    from hybridctl.core.failover.serialize import runbook_to_json

    name = _runbook_name(runbook.id)
    store.write_document(name, runbook_to_json(runbook, run_memo))
    return name


def _read(store: StateStore, runbook_id: str) -> Runbook:
    """The runbook the state names `runbook_id`, refused unless its content gives that id (its kind, incident
    and steps: an edited runbook file is not the runbook the state recorded)."""
    from hybridctl.core.failover.serialize import RunbookFileError, runbook_from_json
    from hybridctl.operations.run import document_location

    name = _runbook_name(runbook_id)
    text = store.read_document(name)
    where = document_location(store, name)
    if text is None:
        raise RunbookFileError(f"{where}: runbook {runbook_id} is missing")
    runbook = runbook_from_json(text, where)
    if runbook.id != runbook_id:
        raise RunbookFileError(f"{where}: its content is runbook {runbook.id}, not {runbook_id}: the file was edited",
                               hint="restore it from a backup, or compute a new runbook with `hybridctl failover`")
    return runbook


def _plan_content(plan: Plan | Mapping[str, Any]) -> str:
    """A plan's content digest (numbers as floats: 2117 and 2117.0 are one amount), whatever form it is in."""
    from hybridctl.core.plan.serialize import content_digest, plan_to_dict

    return content_digest(dict(plan) if isinstance(plan, Mapping) else plan_to_dict(plan, plan_file=True))


def _check_before(store: StateStore, state: State, runbook: Runbook) -> None:
    """A runbook runs from the plan the state records as applied: refuse one whose before_plan is another
    (an edited runbook file, resumed or rolled back from)."""
    if state.applied_plan is None or _undoes_unfinished(runbook, state):
        return
    if _plan_content(runbook.before) != _plan_content(state.applied_plan):
        raise RefusedError(f"runbook {runbook.id} starts from another plan than the one applied in {store.location}: "
                           "its before_plan was changed, or the state has moved on since it was computed",
                           hint="compute a new runbook: hybridctl failover EVENT… (or `runbook rollback` again)")


def _undoes_unfinished(runbook: Runbook, state: State) -> bool:
    """Whether `runbook` is the rollback of a failover left unfinished (pipeline.undo): it returns to the plan
    the state still records as applied, from wherever that failover's steps stopped."""
    return (runbook.kind is RunbookKind.ROLLBACK and state.applied_plan is not None
            and _plan_content(runbook.after) == _plan_content(state.applied_plan))


def _started_steps(store: StateStore, run_ids: Sequence[str]) -> list[str]:
    """The steps these runs started (done, failed or cut off), confirmations and manual steps aside: what
    they may have changed."""
    from hybridctl.drivers.state import JournalEvent

    wanted = set(run_ids)
    started = {r.step for r in store.journal.records()
               if r.run in wanted and r.event == JournalEvent.STEP_STARTED and r.step}
    return sorted(s for s in started if not s.startswith(("confirm/", "manual/")))


def _declined_rollback(store: StateStore, state: State) -> dict[str, object] | None:
    """The detail that supersedes the unfinished runbook when it is a rollback declined before it changed
    anything (no rollback happened: a new failover may run); None otherwise."""
    pending = state.pending
    if pending is None or pending.operation != OPERATION or _started_steps(store, pending.run_ids):
        return None
    return {"left_changed": []} if _read(store, pending.target).kind is RunbookKind.ROLLBACK else None


def _drop_unfinished(store: StateStore, why: str, detail: Mapping[str, object]) -> None:
    """Ends the unfinished runbook without running anything: journaled as a run of its own (who, why, what it
    left changed), its runs marked abandoned in the history."""
    from hybridctl.drivers.lockholder import operator_name
    from hybridctl.drivers.state import JournalEvent, new_run_id

    state = store.read()
    pending = state.pending
    assert pending is not None
    run_id = new_run_id()
    store.journal.append(run_id, JournalEvent.RUN_STARTED, summary="runbook abandon",
                         detail={"target": pending.target, "resumed_from": [], "already_done": []})
    store.journal.append(run_id, JournalEvent.RUN_FINISHED, summary="abandoned",
                         detail={"runbook": pending.target, "by": operator_name(), "why": why, **detail})
    history = tuple(replace(r, status="abandoned") if r.run_id in pending.run_ids and r.status != "succeeded" else r
                    for r in state.history)
    store.write(replace(state, pending=None, history=history))


_SSH_DOCUMENT = "runbooks/ssh.json"  # the SSH options the last runbook ran with: resume and rollback reuse them


def _remember_ssh(store: StateStore, options: ExecOptions) -> None:
    import json

    if options.known_hosts is None and options.ssh_key is None:
        return
    store.write_document(_SSH_DOCUMENT, json.dumps({
        "known_hosts": str(options.known_hosts.resolve()) if options.known_hosts else None,
        "ssh_key": str(options.ssh_key.resolve()) if options.ssh_key else None}, indent=2))


def _run_ssh(store: StateStore, options: ExecOptions, view: Terminal) -> ExecOptions:
    """`options`, with the SSH options of the run before (_remember_ssh) when none are given: a resume or
    rollback reaches the hosts as the failover did. Read from the state, so each must be an absolute path to
    a file, or it is not used."""
    import json

    if options.known_hosts is not None or options.ssh_key is not None:
        return options
    text = store.read_document(_SSH_DOCUMENT)
    try:
        raw = json.loads(text) if text else {}
    except ValueError:
        raw = {}
    paths: dict[str, Path] = {}
    for key in ("known_hosts", "ssh_key"):
        value = raw.get(key) if isinstance(raw, dict) else None
        if isinstance(value, str) and value.startswith("/") and value.isprintable() and Path(value).is_file():
            paths[key] = Path(value)
    if not paths:
        return options
    view.note("note: with the SSH options of the run before: " + " ".join(
        f"--{key.replace('_', '-')} {path}" for key, path in paths.items()), markup=False)
    return replace(options, known_hosts=paths.get("known_hosts"), ssh_key=paths.get("ssh_key"))


# --- execution -----------------------------------------------------------------------------------


def _confirm_runner(options: ExecOptions, view: Terminal) -> StepRunner:
    """Asks the operator at each group's confirmation and each manual step. --auto-approve approves the
    groups; a manual step (an operator's own action: fencing a site) is asked for even then, unless
    --manual-steps-done says the operator did them. The journal records who approved and how."""
    from hybridctl.drivers.lockholder import operator_name
    from hybridctl.executor import StepContext, StepOutcome, StepStatus

    who = operator_name()

    def approved(how: str, summary: str) -> StepOutcome:
        return StepOutcome(StepStatus.DONE, f"{summary} ({who})", detail={"approved_by": who, "how": how})

    def run(step: Step, context: StepContext) -> StepOutcome:
        manual = step.kind == MANUAL_KIND
        if manual and options.manual_steps_done:
            return approved(MANUAL_FLAG, f"done by hand, as {MANUAL_FLAG} says")
        if not manual and options.auto_approve:
            return approved("--auto-approve", "approved by --auto-approve")
        if manual:
            shown, question = f"manual step: {step.params.get('instruction')}", "Done?"
        else:
            listed = step.params.get("steps")
            names = [str(s) for s in listed] if isinstance(listed, list) else []
            shown = f"next: {step.params.get('title', step.id)} ({len(names)} step(s): {', '.join(names)})"
            question = "Go ahead?"
        view.say(shown, markup=False)
        answer = _asked(view, question, context.cancel)
        if answer is None:
            return StepOutcome(StepStatus.CANCELED, "cut off at the prompt: nothing was done")
        if answer:
            return approved("asked on the terminal", "approved by the operator")
        return StepOutcome(StepStatus.FAILED, "declined", "declined by the operator: `hybridctl runbook resume` "
                           "asks again")

    return run


def _asked(view: Terminal, question: str, cancel: threading.Event) -> bool | None:
    """The operator's answer; None as soon as the run is interrupted (Ctrl-C at the prompt cancels at once:
    the question is asked on a thread of its own, left waiting for a line that no longer matters)."""
    answers: queue.Queue[bool] = queue.Queue()
    threading.Thread(target=lambda: answers.put(view.confirm(question)), daemon=True, name="prompt").start()
    while True:
        try:
            return answers.get(timeout=0.1)
        except queue.Empty:
            if cancel.is_set():
                return None


def _check_unattended(runbook: Runbook, options: ExecOptions, done: Mapping[str, str]) -> None:
    """Without a terminal nobody can be asked: refused unless the flags answer every question the runbook still
    asks (`done`: its steps done in earlier runs, by id, with their keys)."""
    left = [s for s in runbook.steps if done.get(s.id) != s.step.key]
    manual = [s.id for s in left if s.step.kind == MANUAL_KIND]
    groups = not options.auto_approve and any(s.step.kind == CONFIRM_KIND for s in left)
    if not groups and (not manual or options.manual_steps_done):
        return
    asks = []
    if groups:
        asks.append("an approval for each group of steps (--auto-approve gives it for the automated steps)")
    if manual and not options.manual_steps_done:
        asks.append(f"a human for its manual step(s) {', '.join(manual)}: --auto-approve never approves those; "
                    f"do them yourself, then pass {MANUAL_FLAG} (the journal records you as having done them)")
    raise RefusedError(f"executing runbook {runbook.id} needs {' and '.join(asks)}, and there is no terminal to ask on",
                       hint="review the runbook above, then run it on a terminal, or pass "
                            + " and ".join(f for f, needed in (("--auto-approve", groups),
                                                                (MANUAL_FLAG, bool(manual) and not
                                                                 options.manual_steps_done)) if needed))


def _on_success(store: StateStore, runbook: Runbook,
                run_memo: RunMemo | None = None) -> Callable[[State, RunReport], State]:
    from hybridctl.core.deploy.stackconfig import kept_plan_digest, plan_digest
    from hybridctl.core.plan.serialize import plan_to_dict
    from hybridctl.drivers.state import now_iso

    digest_of = plan_digest if run_memo is None else partial(kept_plan_digest, run_memo)  # the run's: worked out for the steps

    def record(state: State, report: RunReport) -> State:
        del report
        chain = active_failovers(store)
        if _undoes_unfinished(runbook, state):
            return state  # back where the unfinished failover started: the plan applied, the failovers in effect
        if runbook.kind is RunbookKind.FAILOVER:
            # the first failover of a chain records the plan it leaves, as the state holds it: what a
            # rollback returns to (run_rollback checks the runbook's before_plan against it)
            before = _plan_content(state.applied_plan) if not chain and state.applied_plan is not None else None
            set_active_failovers(store, [*chain, runbook.id], before)
        else:
            set_active_failovers(store, [])
        return replace(state, applied_plan=plan_to_dict(runbook.after, plan_file=True),
                       applied_plan_digest=digest_of(runbook.after), applied_at=now_iso())

    return record


def _bind(store: StateStore, current: State, runbook: Runbook, inventory: Inventory, options: ExecOptions,
          view: Terminal, read_back: bool) -> None:
    """Before any step runs (operations/binding.py): a runbook read back from its file has each step left to
    run derived again from its after_plan and the inventory, with the bundles and key this run was given; one
    this run built has only the stacks it takes down checked, which it read from the state."""
    from hybridctl.executor import pending_for
    from hybridctl.operations.binding import bind_runbook, bind_teardown, state_location
    from hybridctl.operations.run import document_location

    steps = [s.step for s in runbook.steps]
    if not read_back:
        bind_teardown(steps, inventory, state_location(store))
        return
    pending = pending_for(current, OPERATION)
    done = store.journal.done_keys(pending.run_ids) if pending is not None and pending.target == runbook.id else {}
    left = [s for s in steps if done.get(s.id) != s.key]
    bind_runbook(runbook, left, inventory, document_location(store, _runbook_name(runbook.id)),
                 bundles=_refs(options, {w.name for w in inventory.workloads}, view),
                 bundle_public_key=options.bundle_public_key)


def _execute(store: StateStore, runbook: Runbook, inventory: Inventory, options: ExecOptions, view: Terminal,
             run_memo: RunMemo | None = None, supersedes: Mapping[str, object] | None = None) -> int:
    """`run_memo`: the run's that built `runbook` (its text and its failover plan's digest are kept there);
    `inventory`: what its steps are bound to (_bind). `supersedes`: the unfinished runbook is ended first
    (_drop_unfinished, with this detail): the rollback that undoes it, or a runbook that replaces a rollback
    declined before it changed anything."""
    from hybridctl.executor import pending_for
    from hybridctl.operations.run import execute_and_report, prepare_cloud, runners_for, ssh_options
    from hybridctl.render.apply import PlainProgress, progress_for

    if runbook.kind is RunbookKind.FAILOVER and not runbook.steps:
        # nothing to run: no failover is recorded, so apply stays free (a price event that moves nothing)
        view.say(f"runbook {runbook.id} has no steps: nothing to run, and no failover is recorded in "
                 f"{store.location}; `hybridctl apply` stays as it was")
        return 0
    current = store.read()
    pending = pending_for(current, OPERATION)
    if not sys.stdin.isatty():
        done = store.journal.done_keys(pending.run_ids) if pending is not None and pending.target == runbook.id else {}
        _check_unattended(runbook, options, done)
    if pending is not None and pending.target != runbook.id and supersedes is None:
        raise RefusedError(f"runbook {pending.target} is unfinished in {store.location}",
                           hint=f"finish it with `{_command('runbook resume', store)}`, undo what it did with "
                                f"`{_command('runbook rollback', store)}`, or end it as it is with "
                                f"`{_command('runbook abandon', store)} --reason TEXT`")
    if run_memo is None:  # read back from its file (resume); one built by this run starts from the state's plan
        _check_before(store, current, runbook)
    active_failovers(store)  # read now: a damaged list is refused before any step, not once they all ran
    _bind(store, current, runbook, inventory, options, view, read_back=run_memo is None)
    if current.pending is not None and pending is None:
        view.note(f"note: the unfinished {current.pending.operation} is superseded by this runbook")
    graph = runbook.graph
    driver, skip = prepare_cloud(store, graph, options.skip_cloud, view)
    ssh = ssh_options(store, options.known_hosts, options.ssh_key)
    confirm = _confirm_runner(options, view)
    runners = {**runners_for(store, driver, ssh), CONFIRM_KIND: confirm, MANUAL_KIND: confirm}
    name = _save(store, runbook, run_memo)
    _remember_ssh(store, options)
    if supersedes is not None and pending is not None and pending.target != runbook.id:
        _drop_unfinished(store, f"superseded by {runbook.kind.value} runbook {runbook.id}", supersedes)
    code = execute_and_report(store, graph, runners, view, operation=OPERATION, target=runbook.id, skip=skip,
                              parallelism=options.parallelism, on_success=_on_success(store, runbook, run_memo),
                              detail={"runbook": runbook.id, "kind": runbook.kind.value, "file": name},
                              observer=progress_for(view.out) if options.auto_approve else PlainProgress(view.out),
                              subject=f"runbook {runbook.id}",
                              when_interrupted=f"`{_command('runbook resume', store)}` finishes it",
                              retry=f"`{_command('runbook resume', store)}`" + (
                                  f" (or undo what it did: `{_command('runbook rollback', store)}`)"
                                  if runbook.kind is RunbookKind.FAILOVER else ""))
    if code:
        return code
    if runbook.kind is RunbookKind.FAILOVER:
        from hybridctl.core.failover.pipeline import returning_sites

        sites = returning_sites([runbook])
        when = f"Once {', '.join(sites)} {'is' if len(sites) == 1 else 'are'} back" if sites else "Once it is over"
        view.say(f"failover done. {when}: {_command('runbook rollback', store)}")
    return 0


def _command(words: str, store: StateStore) -> str:
    """A complete command for this state: `hybridctl WORDS --state LOCATION`."""
    import shlex

    return f"hybridctl {words} --state {shlex.quote(str(store.option))}"


# --- the commands --------------------------------------------------------------------------------


def run_failover(words: Sequence[str], *, state: str | None, inventory: Path | None, output_format: str,
                 out: Path | None, execute: bool, move_threshold_usd: float, time_limit_s: float,
                 options: ExecOptions, view: Terminal, plan_file: Path | None = None,
                 at: datetime | None = None) -> int:
    """`at`: when the events strike (default: now); the runbook says which segment of its week that is."""
    from hybridctl.core.failover.events import check_events, parse_events
    from hybridctl.core.failover.replan import FailoverOptions
    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.drivers.files import atomic_write_text
    from hybridctl.operations.run import open_store
    from hybridctl.operations.week import this_week

    check_output_path(out, "--out")
    events = parse_events(words)
    at = at or datetime.now(UTC)
    # an applied plan names its week (the replan keeps it); this week is for an untimed one of an inventory
    # scheduled since the apply
    replan_options = FailoverOptions(move_threshold_usd, time_limit_s, week=this_week())
    if plan_file is not None:
        return _rehearse_failover(events, plan_file, inventory, state=state, execute=execute,
                                  output_format=output_format, out=out,
                                  options=replan_options, bundles=options, at=at, view=view)
    store = open_store(state, view)
    run_memo = RunMemo()  # this command's: the plans' digests, the runbook's text
    with _maybe_locked(store, "failover " + " ".join(words), options.lock_timeout_s, execute, view):
        current = store.read()
        _require_applied(current, store, _rehearsal_hint(words, inventory, current))
        the_inventory = _load_inventory(inventory, current)
        check_events(events, the_inventory)
        _check_not_in_effect(store, events)
        refs = _refs(options, {w.name for w in the_inventory.workloads}, view)
        runbook = failover_of_state(the_inventory, current, partial(_applied, current, store), events, refs=refs,
                                    public_key=options.bundle_public_key,
                                    options=replan_options, memo=run_memo)
        runbook = _timed(runbook, at)
        if runbook.before.inventory_digest and runbook.before.inventory_digest != runbook.after.inventory_digest:
            view.note("note: the inventory has changed since the applied plan was made; the failover "
                      "replans the applied placements against the inventory as it is now")
        _emit(runbook, output_format, view, run_memo)
        if out is not None:
            atomic_write_text(out, runbook_to_json(runbook, run_memo))
        if not execute:
            return 0
        return _execute(store, runbook, the_inventory, options,
                        view if output_format != "json" else view.beside_document(), run_memo,
                        _declined_rollback(store, current))


def _check_not_in_effect(store: StateStore, events: Sequence[Event]) -> None:
    """A site event already in effect (the same site lost twice) is recognised, not failed over again."""
    from hybridctl.core.failover.events import SITE_EVENTS

    for runbook_id in active_failovers(store):
        already = set(_read(store, runbook_id).events)
        repeated = [str(e) for e in events if e.kind in SITE_EVENTS and str(e) in already]
        if repeated:
            raise RefusedError(f"{', '.join(repeated)}: already in effect, by failover {runbook_id} in "
                               f"{store.location}: its site is fenced and its work moved",
                               hint=f"see it with `{_command('runbook show', store)}`; once the site is back, "
                                    f"`{_command('runbook rollback', store)}` returns from it")


def _rehearse_failover(events: Sequence[Event], plan_file: Path, inventory: Path | None, *, state: str | None,
                       execute: bool, output_format: str, out: Path | None, options: FailoverOptions,
                       bundles: ExecOptions, at: datetime, view: Terminal) -> int:
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
    from hybridctl.core.failover.pipeline import failover
    from hybridctl.operations.common import plan_of_inventory

    run_memo = RunMemo()  # this rehearsal's
    applied, the_inventory = plan_of_inventory(plan_file, inventory, run_memo)
    check_events(events, the_inventory)
    refs = _refs(bundles, {w.name for w in the_inventory.workloads}, view)
    # plan_of_inventory found the plan's inventory digest to be this inventory's
    runbook = failover(the_inventory, applied, events, options,
                       command_run(the_inventory, None, refs, bundles.bundle_public_key, applied=applied, memo=run_memo),
                       digest=applied.inventory_digest).built()
    runbook = _timed(runbook, at)
    _emit(runbook, output_format, view, run_memo)
    if out is not None:
        atomic_write_text(out, runbook_to_json(runbook, run_memo))
    return 0


def run_resume(state: str | None, options: ExecOptions, view: Terminal, inventory: Path | None = None) -> int:
    """`inventory`: what the runbook's steps are bound to (default: the one the state records as applied)."""
    from hybridctl.executor import pending_for
    from hybridctl.operations.run import locked, open_store
    from hybridctl.render.failover import render_runbook

    store = open_store(state, view, must_exist=True)
    options = _run_ssh(store, options, view)
    with locked(store, "runbook resume", options.lock_timeout_s, view):
        pending = pending_for(store.read(), OPERATION)
        if pending is None:
            view.say(f"no unfinished runbook in {store.location}: nothing to resume")
            return 0
        runbook = _read(store, pending.target)
        done = store.journal.done_keys(pending.run_ids)
        left = [s for s in runbook.steps if done.get(s.id) != s.step.key]
        render_runbook(view.out, runbook)
        the_inventory = _load_inventory(inventory, store.read())
        view.say(f"resuming {runbook.id}: {len(runbook.steps) - len(left)} step(s) done, {len(left)} to run")
        return _execute(store, runbook, the_inventory, options, view)


def run_rollback(state: str | None, inventory: Path | None, *, dry_run: bool, output_format: str,
                 options: ExecOptions, view: Terminal) -> int:
    from hybridctl.core.failover.pipeline import returning_sites, rollback
    from hybridctl.core.failover.runbook import incident_id
    from hybridctl.core.inventory.digest import inventory_digest
    from hybridctl.executor import pending_for
    from hybridctl.operations.run import open_store

    store = open_store(state, view, must_exist=True)
    options = _run_ssh(store, options, view)
    with _maybe_locked(store, "runbook rollback", options.lock_timeout_s, not dry_run, view):
        current = store.read()
        pending = pending_for(current, OPERATION)
        supersedes: dict[str, object] | None = None
        if pending is not None:
            unfinished = _read(store, pending.target)
            started = _started_steps(store, pending.run_ids)
            if unfinished.kind is RunbookKind.FAILOVER:
                return _undo_unfinished(store, current, unfinished, started, inventory, dry_run=dry_run,
                                        output_format=output_format, options=options, view=view)
            if started:
                raise RefusedError(f"rollback {unfinished.id} is unfinished in {store.location}: it already changed "
                                   f"{', '.join(started)}",
                                   hint=f"finish it with `{_command('runbook resume', store)}`, or end it as it is "
                                        f"with `{_command('runbook abandon', store)} --reason TEXT`")
            supersedes = _declined_rollback(store, current)  # declined before it changed anything: replaced
        chain = [_read(store, rid) for rid in active_failovers(store)]
        if not chain:
            raise RefusedError(f"no failover is in effect in {store.location}: there is nothing to roll back")
        the_inventory = _load_inventory(inventory, current)
        original = chain[0]
        recorded = failover_base(store)
        if recorded is not None and _plan_content(original.before) != recorded:
            raise RefusedError(f"runbook {original.id}'s before_plan is not the plan that ran before the failover, "
                               f"as the state recorded it ({recorded[:19]}…): the runbook file was edited",
                               hint="restore the runbook from a backup; or make a new plan (hybridctl plan "
                                    "INVENTORY --previous …) and apply it with --end-failover")
        if original.kind is RunbookKind.FAILOVER and incident_id(original.before, original.events,
                                                                   serial=original.base_serial) != original.incident:
            from hybridctl.operations.run import document_location

            raise RefusedError(f"{document_location(store, _runbook_name(original.id))}: runbook {original.id}'s "
                               "before_plan or base_serial is not what its incident was computed from: the runbook "
                               "file was edited",
                               hint="restore the runbook from a backup, or make and apply a new plan (--end-failover)")
        if original.before.inventory_digest != inventory_digest(the_inventory):
            raise RefusedError("the inventory changed since the failover: the pre-failover plan no longer fits it",
                               hint="make a new plan instead: hybridctl plan INVENTORY --previous, then apply it")
        from hybridctl.operations.binding import check_plan_rules
        from hybridctl.operations.run import document_location

        # what the rollback's steps are derived from, read back from the runbook's file
        check_plan_rules(original.before, the_inventory,
                         f"{document_location(store, _runbook_name(original.id))}: its before_plan")
        refs = _refs(options, {w.name for w in the_inventory.workloads}, view)
        applied = _applied(current, store)
        run_memo = RunMemo()  # this command's: the plans' digests, the runbook's text
        runbook = rollback(the_inventory, original, applied,
                           command_run(the_inventory, current, refs, options.bundle_public_key, applied=applied,
                                       memo=run_memo),
                           returning_sites=returning_sites(chain, the_inventory), base_serial=current.serial)
        _emit(runbook, output_format, view, run_memo)
        if dry_run:
            return 0
        return _execute(store, runbook, the_inventory, options,
                        view if output_format != "json" else view.beside_document(), run_memo, supersedes)


def _undo_unfinished(store: StateStore, current: State, unfinished: Runbook, started: Sequence[str],
                     inventory: Path | None, *, dry_run: bool, output_format: str, options: ExecOptions,
                     view: Terminal) -> int:
    """`runbook rollback` of a failover left unfinished: undo what its started steps changed (pipeline.undo),
    back to the plan before it, which the state still records as applied."""
    from hybridctl.core.failover.pipeline import undo

    _check_before(store, current, unfinished)
    the_inventory = _load_inventory(inventory, current)
    refs = _refs(options, {w.name for w in the_inventory.workloads}, view)
    applied = _applied(current, store)
    run_memo = RunMemo()
    # a step that failed or was cut off may have made part of what it makes, whatever the state recorded: its
    # undo takes it as made (a stack the plan before has not is destroyed, one it has is brought back to it)
    from hybridctl.drivers.statemodel import Deployed

    made = {s.id: Deployed(s.id, s.step.kind, s.step.key, s.step.site, "", dict(s.step.params))
            for s in unfinished.steps if s.id in started and s.step.deploys}
    unsure = replace(current, deployed={**current.deployed, **made})
    runbook = undo(the_inventory, unfinished, started,
                   command_run(the_inventory, unsure, refs, options.bundle_public_key, applied=applied, memo=run_memo),
                   base_serial=current.serial)
    view.note(f"runbook {unfinished.id} is unfinished; its steps that ran: {', '.join(started) or 'none'}. "
              f"This rollback undoes them and returns to the plan before it")
    _emit(runbook, output_format, view, run_memo)
    if dry_run:
        return 0
    return _execute(store, runbook, the_inventory, options, view if output_format != "json" else view.beside_document(),
                    run_memo, {"left_changed": [], "undone_by": runbook.id, "steps_that_ran": list(started)})


def run_abandon(state: str | None, reason: str, options: ExecOptions, view: Terminal) -> int:
    """`runbook abandon --reason TEXT`: end the unfinished runbook as it is, nothing run, the reason and what its
    steps left changed journaled; the failovers in effect and the applied plan stay as the state records them."""
    from hybridctl.executor import pending_for
    from hybridctl.operations.run import locked, open_store

    if not reason.strip():
        raise UsageError("--reason must say why the runbook is abandoned: the journal keeps it for the post-mortem")
    store = open_store(state, view, must_exist=True)
    with locked(store, "runbook abandon", options.lock_timeout_s, view):
        pending = pending_for(store.read(), OPERATION)
        if pending is None:
            view.say(f"no unfinished runbook in {store.location}: nothing to abandon")
            return 0
        started = _started_steps(store, pending.run_ids)
        _drop_unfinished(store, reason, {"left_changed": list(started)})
        view.say(f"runbook {pending.target} abandoned: {reason}", markup=False)
        if started:
            view.say(f"left as its steps made them (not undone): {', '.join(started)}; "
                     f"`{_command('status', store)}` shows the drift, `hybridctl apply` converges it", markup=False)
        return 0


def run_show(state: str | None, output_format: str, view: Terminal) -> int:
    from hybridctl.executor import pending_for
    from hybridctl.operations.run import open_store

    store = open_store(state, view)
    current = store.read()
    pending = pending_for(current, OPERATION)
    if pending is not None:
        _show(store, current, _read(store, pending.target), output_format, view)
        view.note(f"runbook {pending.target} is unfinished: `{_command('runbook resume', store)}` finishes it, "
                  f"`{_command('runbook rollback', store)}` undoes it, `{_command('runbook abandon', store)} "
                  "--reason TEXT` ends it as it is")
        return 0
    chain = active_failovers(store)
    if not chain:
        view.say(f"no failover is in effect in {store.location}")
        return 0
    _show(store, current, _read(store, chain[-1]), output_format, view)
    return 0


def _show(store: StateStore, state: State, runbook: Runbook, output_format: str, view: Terminal) -> None:
    """The runbook, and where each of its steps stands (a `progress` list in its JSON)."""
    import json

    from hybridctl.core.failover.serialize import runbook_to_json
    from hybridctl.operations.runbook_progress import runbook_runs, step_progress
    from hybridctl.render.failover import render_progress

    progress = step_progress(store, runbook, runbook_runs(state, runbook.id))
    if output_format == "json":
        view.document(json.dumps({**json.loads(runbook_to_json(runbook)), "progress": progress}, indent=2))
        return
    _emit(runbook, output_format, view)
    render_progress(view.out, progress)
