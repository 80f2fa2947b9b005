"""Runs a StepGraph through drivers: dependency order, parallel where the graph allows,
every step journaled before and after it runs, resume from the journal, clean cancel.

Apply, destroy and failover runbooks all come through `run_operation`:

    report = run_operation(store, graph, runners, operation="apply", target=plan_digest)

`runners` maps a step kind to a function (step, context) -> StepOutcome. A runner must be
idempotent and should watch `context.cancel`. Already-done steps of an unfinished earlier
run of the same operation (same step key) are not run again.

Ctrl-C (SIGINT) or SIGTERM sets the cancel event: no new step starts, running steps are
asked to stop, and their outcome is journaled; a second Ctrl-C stops waiting at once (the
journal then shows those steps started and not ended, which resume treats as not done).
"""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import socket
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import FrameType
from typing import Protocol

from hybridctl.core.deploy.steps import Step, StepGraph
from hybridctl.drivers.journal import JournalBase
from hybridctl.drivers.state import (
    Deployed,
    JournalEvent,
    PendingRun,
    RunRecord,
    State,
    StateStore,
    new_run_id,
    now_iso,
)
from hybridctl.errors import HybridctlError

DEFAULT_PARALLELISM = 4
_POLL_S = 0.2


class CutOff(KeyboardInterrupt):
    """A second Ctrl-C: the run quits with these steps still running, their outcome unknown (journaled as
    canceled, so a resume runs them again)."""

    def __init__(self, steps: tuple[str, ...]) -> None:
        super().__init__(steps)
        self.steps = steps

    def __str__(self) -> str:
        if not self.steps:
            return "interrupted"
        return (f"interrupted: cut off while running {', '.join(self.steps)}: {'its' if len(self.steps) == 1 else 'their'}"
                " outcome is unknown; a resume runs it again")


class StepStatus(StrEnum):
    PENDING = "pending"
    ALREADY_DONE = "already-done"  # done by an earlier, unfinished run of this operation
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"  # left out on purpose (e.g. --skip-cloud); its dependents are blocked
    BLOCKED = "blocked"  # not run: a step it depends on did not succeed
    CANCELED = "canceled"  # stopped, or never started, because of Ctrl-C


_JOURNAL_EVENT = {StepStatus.DONE: JournalEvent.STEP_DONE, StepStatus.FAILED: JournalEvent.STEP_FAILED,
                  StepStatus.CANCELED: JournalEvent.STEP_CANCELED, StepStatus.SKIPPED: JournalEvent.STEP_SKIPPED}


@dataclass(frozen=True)
class StepOutcome:
    status: StepStatus  # DONE, FAILED, CANCELED or SKIPPED
    summary: str = ""
    error: str | None = None
    detail: Mapping[str, object] = field(default_factory=dict)  # journaled: per-host results, changes


@dataclass
class StepContext:
    step: Step
    cancel: threading.Event
    note: Callable[[str], None]  # progress text, shown beside the step


StepRunner = Callable[[Step, StepContext], StepOutcome]


class ExecutionObserver(Protocol):
    """The progress display. Every method may be called from a worker thread except where noted."""

    def begin(self, graph: StepGraph, statuses: Mapping[str, StepStatus]) -> None: ...

    def step_started(self, step: Step) -> None: ...

    def step_note(self, step: Step, message: str) -> None: ...

    def step_finished(self, step: Step, status: StepStatus, outcome: StepOutcome | None) -> None: ...

    def interrupted(self) -> None: ...

    def end(self, report: RunReport) -> None: ...


@dataclass(frozen=True)
class StepReport:
    step: Step
    status: StepStatus
    summary: str = ""
    error: str | None = None
    seconds: float = 0.0
    blocked_by: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunReport:
    run_id: str
    operation: str
    status: str  # succeeded | failed | interrupted
    steps: tuple[StepReport, ...]
    resumed_from: tuple[str, ...] = ()

    @property
    def succeeded(self) -> bool:
        return self.status == "succeeded"

    def with_status(self, *statuses: StepStatus) -> tuple[StepReport, ...]:
        return tuple(r for r in self.steps if r.status in statuses)


def execute(graph: StepGraph, runners: Mapping[str, StepRunner], *, store: StateStore, run_id: str,
            done_keys: Mapping[str, str] | None = None, skip: Mapping[str, str] | None = None,
            cancel: threading.Event | None = None, parallelism: int = DEFAULT_PARALLELISM,
            observer: ExecutionObserver | None = None) -> tuple[StepReport, ...]:
    """Run the graph's steps; returns one report per step, in graph order. Journals every step."""
    done_keys = done_keys or {}
    skip = skip or {}
    cancel = cancel or threading.Event()
    journal = store.journal
    status: dict[str, StepStatus] = {}
    reports: dict[str, StepReport] = {}
    for step in graph:
        if done_keys.get(step.id) == step.key:
            status[step.id] = StepStatus.ALREADY_DONE
            reports[step.id] = StepReport(step, StepStatus.ALREADY_DONE, "done in an earlier run")
        else:
            status[step.id] = StepStatus.PENDING
    if observer:
        observer.begin(graph, {sid: StepStatus.SKIPPED if sid in skip and st is StepStatus.PENDING else st
                               for sid, st in status.items()})
    results: queue.Queue[tuple[str, StepOutcome, float]] = queue.Queue()
    running: set[str] = set()

    def finish(step: Step, outcome: StepOutcome, seconds: float) -> None:
        if outcome.status is StepStatus.DONE and (step.deploys or step.removes):
            store.update(lambda s: record_deployed(s, step))  # before the journal says done: see resume
        journal.append(run_id, _JOURNAL_EVENT[outcome.status], step=step.id, key=step.key,
                       summary=outcome.summary or None, error=outcome.error,
                       detail=outcome.detail or None)
        status[step.id] = outcome.status
        reports[step.id] = StepReport(step, outcome.status, outcome.summary, outcome.error, seconds)
        if observer:
            observer.step_finished(step, outcome.status, outcome)

    def start(step: Step) -> None:
        runner = runners.get(step.kind)
        journal.append(run_id, JournalEvent.STEP_STARTED, step=step.id, key=step.key)
        status[step.id] = StepStatus.RUNNING
        running.add(step.id)
        if observer:
            observer.step_started(step)
        context = StepContext(step, cancel, (lambda message: observer.step_note(step, message)) if observer
                              else (lambda message: None))
        thread = threading.Thread(target=_work, args=(step, runner, context, results), daemon=True,
                                  name=f"step {step.id}")
        thread.start()

    for step in graph:  # left out on purpose, whatever they wait for: settled before anything runs
        if step.id in skip and status[step.id] is StepStatus.PENDING:
            finish(step, StepOutcome(StepStatus.SKIPPED, skip[step.id]), 0.0)
    told = False
    with _cancel_on_signals(cancel), _cut_off(running, graph, journal, run_id):
        while True:
            if cancel.is_set() and not told:
                told = True
                if observer:
                    observer.interrupted()
            if not cancel.is_set():
                for step in graph:
                    if len(running) >= max(parallelism, 1):
                        break
                    if status[step.id] is not StepStatus.PENDING:
                        continue
                    deps = [status[d] for d in step.depends_on]
                    if any(d not in (StepStatus.DONE, StepStatus.ALREADY_DONE, StepStatus.PENDING,
                                     StepStatus.RUNNING) for d in deps):
                        continue  # blocked: settled below
                    if not all(d in (StepStatus.DONE, StepStatus.ALREADY_DONE) for d in deps):
                        continue
                    start(step)
            if not running:
                break
            try:
                step_id, outcome, seconds = results.get(timeout=_POLL_S)
            except queue.Empty:
                continue
            running.discard(step_id)
            finish(graph.get(step_id), outcome, seconds)
    for step in graph:
        if status[step.id] is StepStatus.PENDING:
            blockers = tuple(d for d in step.depends_on
                             if status[d] not in (StepStatus.DONE, StepStatus.ALREADY_DONE))
            if cancel.is_set() and not _blocked_by_failure(graph, step, status):
                reports[step.id] = StepReport(step, StepStatus.CANCELED, "not started: the run was interrupted")
            else:
                reports[step.id] = StepReport(step, StepStatus.BLOCKED, "not started", blocked_by=blockers)
    return tuple(reports[s.id] for s in graph)


@contextlib.contextmanager
def _cut_off(running: set[str], graph: StepGraph, journal: JournalBase, run_id: str) -> Iterator[None]:
    """A second Ctrl-C quits at once: the steps still running are journaled as cut off, outcome unknown, and
    named (CutOff)."""
    try:
        yield
    except KeyboardInterrupt as interrupt:
        cut = tuple(sorted(running))
        for step_id in cut:
            journal.append(run_id, JournalEvent.STEP_CANCELED, step=step_id, key=graph.get(step_id).key,
                           error="cut off by a second Ctrl-C: its outcome is unknown")
        raise CutOff(cut) from interrupt


def _blocked_by_failure(graph: StepGraph, step: Step, status: Mapping[str, StepStatus]) -> bool:
    failed = {sid for sid, st in status.items() if st in (StepStatus.FAILED, StepStatus.SKIPPED)}
    return any(step.id in graph.dependents(f) for f in failed)


def _work(step: Step, runner: StepRunner | None, context: StepContext,
          results: queue.Queue[tuple[str, StepOutcome, float]]) -> None:
    started = time.monotonic()
    try:
        if runner is None:
            outcome = StepOutcome(StepStatus.FAILED, error=f"no runner for steps of kind {step.kind!r}")
        else:
            outcome = runner(step, context)
    except HybridctlError as exc:
        outcome = StepOutcome(StepStatus.FAILED, error=exc.message + (f" (hint: {exc.hint})" if exc.hint else ""))
    except Exception as exc:  # a bug in a runner must not take the journal down with it
        outcome = StepOutcome(StepStatus.FAILED, error=f"internal error: {type(exc).__name__}: {exc}",
                              detail={"traceback": traceback.format_exc(limit=8)})
    if context.cancel.is_set() and outcome.status is StepStatus.FAILED:
        outcome = replace(outcome, status=StepStatus.CANCELED)
    results.put((step.id, outcome, time.monotonic() - started))


def record_deployed(state: State, step: Step) -> State:
    """`state` once `step` succeeded: what it deployed recorded (with its parameters), what it removes gone."""
    deployed = {k: v for k, v in state.deployed.items() if k not in step.removes}
    if step.deploys:
        deployed[step.id] = Deployed(step.id, step.kind, step.key, step.site, now_iso(), dict(step.params))
    return replace(state, deployed=deployed)


@contextlib.contextmanager
def _cancel_on_signals(cancel: threading.Event) -> Iterator[None]:
    """First SIGINT/SIGTERM: set cancel and let running steps stop. A second SIGINT: KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, frame: FrameType | None) -> None:
        del frame
        if cancel.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        cancel.set()  # the main loop tells the observer: printing here could meet a held console lock

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


# --- an operation: a run of a graph, recorded in the state ---------------------------------------


def pending_for(state: State, operation: str) -> PendingRun | None:
    """The unfinished run series of this operation, which a new run resumes."""
    return state.pending if state.pending is not None and state.pending.operation == operation else None


def run_operation(store: StateStore, graph: StepGraph, runners: Mapping[str, StepRunner], *, operation: str,
                  target: str = "", detail: Mapping[str, object] | None = None,
                  skip: Mapping[str, str] | None = None, parallelism: int = DEFAULT_PARALLELISM,
                  observer: ExecutionObserver | None = None, cancel: threading.Event | None = None,
                  on_success: Callable[[State, RunReport], State] | None = None) -> RunReport:
    """Execute under the state lock (the caller holds it): open or resume the run, execute, close it.

    On success the pending run is cleared, the serial goes up and on_success may change the
    state further (apply records the applied plan). Otherwise the run stays pending, and the
    next run of the same operation resumes it.
    """
    if not store.lock.held:
        raise RuntimeError("run_operation needs the state lock")
    cancel = cancel or threading.Event()
    state = _settle_dead_runs(store.read())
    pending = pending_for(state, operation)
    earlier = pending.run_ids if pending else ()
    done_keys = store.journal.done_keys(earlier)
    run_id = new_run_id()
    history = list(state.history)
    if state.pending is not None and pending is None:  # another operation was left unfinished: superseded
        history = [replace(r, status="abandoned") if r.run_id in state.pending.run_ids and r.status != "succeeded"
                   else r for r in history]
    record = RunRecord(run_id, operation, "running", now_iso(), os.getpid(), socket.gethostname(), target,
                       resumed_from=earlier)
    store.write(replace(state, pending=PendingRun(operation, (*earlier, run_id), target, dict(detail or {})),
                        history=(*history, record)))
    store.journal.append(run_id, JournalEvent.RUN_STARTED, summary=operation,
                         detail={"target": target, "resumed_from": list(earlier),
                                 "already_done": sorted(s.id for s in graph if done_keys.get(s.id) == s.key)})
    steps = execute(graph, runners, store=store, run_id=run_id, done_keys=done_keys, skip=skip, cancel=cancel,
                    parallelism=parallelism, observer=observer)
    outcome = "interrupted" if cancel.is_set() else (
        "failed" if any(r.status in (StepStatus.FAILED, StepStatus.BLOCKED, StepStatus.CANCELED) for r in steps)
        else "succeeded")
    report = RunReport(run_id, operation, outcome, steps, earlier)
    summary = _summary(steps)
    store.journal.append(run_id, JournalEvent.RUN_FINISHED, summary=outcome, detail={"steps": summary})
    state = store.read()
    finished = replace(record, status=outcome, finished_at=now_iso(), summary=summary)
    state = replace(state, history=tuple(finished if r.run_id == run_id else r for r in state.history))
    if outcome == "succeeded":
        state = replace(state, pending=None, serial=state.serial + 1)
        if on_success is not None:
            state = on_success(state, report)
    store.write(state)
    if observer:
        observer.end(report)
    return report


def _summary(steps: tuple[StepReport, ...]) -> str:
    counts: dict[str, int] = {}
    for r in steps:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items()))


def _settle_dead_runs(state: State) -> State:
    """A run still recorded as running was interrupted (SIGKILL, power cut): we hold the lock it held."""
    history = tuple(replace(r, status="interrupted", summary=r.summary or "the process ended before the run did")
                    if r.status == "running" else r for r in state.history)
    return replace(state, history=history)
