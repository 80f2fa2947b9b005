"""Rendering for apply, destroy and status: the step list, live progress, the run report.

Progress is a rich live display on a TTY and plain timestamped lines otherwise (CI logs).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from datetime import datetime

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from hybridctl.core.deploy.ansible_inventory import AnsibleInventory, template_context
from hybridctl.core.deploy.steps import Step, StepGraph, StepPlan
from hybridctl.executor import RunReport, StepOutcome, StepStatus
from hybridctl.render.templates import render

_STYLE = {StepStatus.DONE: "green", StepStatus.ALREADY_DONE: "green", StepStatus.FAILED: "red",
          StepStatus.BLOCKED: "yellow", StepStatus.CANCELED: "yellow", StepStatus.SKIPPED: "cyan",
          StepStatus.PENDING: "", StepStatus.RUNNING: "blue"}


def render_ansible_inventory(hosts: AnsibleInventory, inventory_name: str = "") -> str:
    return render("ansible/inventory.yml.j2", inventory_name=inventory_name, **template_context(hosts))


def steps_table(title: str, graph: StepGraph, statuses: Mapping[str, StepStatus],
                skip: Mapping[str, str] | None = None) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("#", "step", "what", "after", "status"):
        table.add_column(column)
    for number, step in enumerate(graph, 1):
        status = statuses.get(step.id, StepStatus.PENDING)
        shown = "will skip" if skip and step.id in skip else (
            "done earlier (resume)" if status is StepStatus.ALREADY_DONE else "to run")
        table.add_row(str(number), step.id, escape(step.title), ", ".join(step.depends_on) or "-", shown)
    return table


def render_step_plan(console: Console, title: str, step_plan: StepPlan, statuses: Mapping[str, StepStatus],
                     skip: Mapping[str, str] | None = None) -> None:
    if len(step_plan.graph):
        console.print(steps_table(title, step_plan.graph, statuses, skip))
    else:
        console.print(f"{title}: nothing to do")
    for note in step_plan.notes:
        console.print(f"note: {escape(note)}")
    for step_id, reason in sorted((skip or {}).items()):
        console.print(f"skip: {step_id}: {escape(reason)}")


def render_run_report(console: Console, report: RunReport) -> None:
    table = Table(title=f"{report.operation} {report.run_id}: {report.status}", title_justify="left")
    for column in ("step", "status", "time", "result"):
        table.add_column(column)
    for r in report.steps:
        result = r.error or r.summary
        if r.blocked_by:
            result = f"not started: waits on {', '.join(r.blocked_by)}"
        style = _STYLE.get(r.status, "")
        status = f"[{style}]{r.status.value}[/]" if style else r.status.value
        table.add_row(r.step.id, status, f"{r.seconds:.1f}s" if r.seconds else "-", escape(result or ""))
    console.print(table)
    done = report.with_status(StepStatus.DONE, StepStatus.ALREADY_DONE)
    not_done = [r for r in report.steps if r not in done]
    console.print(f"done: {len(done)} of {len(report.steps)} steps"
                  + (f"; not done: {', '.join(r.step.id for r in not_done)}" if not_done else ""))


class PlainProgress:
    """One line per event, for logs and pipes."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}
        self._last_note: dict[str, float] = {}

    def _line(self, text: str) -> None:
        with self._lock:
            self._console.print(f"{datetime.now():%H:%M:%S} {text}", markup=False, highlight=False)

    def begin(self, graph: StepGraph, statuses: Mapping[str, StepStatus]) -> None:
        counts = {status: sum(1 for s in graph if statuses.get(s.id) is status) for status in StepStatus}
        self._line(f"{counts[StepStatus.PENDING]} step(s) to run, {counts[StepStatus.ALREADY_DONE]} already done"
                   + (f", {counts[StepStatus.SKIPPED]} skipped" if counts[StepStatus.SKIPPED] else ""))

    def step_started(self, step: Step) -> None:
        self._started[step.id] = time.monotonic()
        self._line(f"start   {step.id}: {step.title}")

    def step_note(self, step: Step, message: str) -> None:
        now = time.monotonic()
        if now - self._last_note.get(step.id, 0.0) >= 1.0:  # a line a second per step at most
            self._last_note[step.id] = now
            self._line(f"  ...   {step.id}: {message}")

    def step_finished(self, step: Step, status: StepStatus, outcome: StepOutcome | None) -> None:
        started = self._started.get(step.id)
        took = f" ({time.monotonic() - started:.1f}s)" if started is not None else ""
        text = (outcome.error or outcome.summary) if outcome else ""
        first = text.splitlines()[0] if text else ""
        self._line(f"{status.value:<7} {step.id}{took}{': ' + first if first else ''}")

    def interrupted(self) -> None:
        self._line("interrupted: no new step starts; waiting for running steps to stop (Ctrl-C again to quit now)")

    def end(self, report: RunReport) -> None:
        self._line(f"{report.operation} {report.status}")

    def close(self) -> None:
        pass


class RichProgress:
    """A bar for the whole run and a line per running step, on a TTY."""

    def __init__(self, console: Console) -> None:
        self._console = console
        self._progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=False)
        self._overall: TaskID | None = None
        self._tasks: dict[str, TaskID] = {}

    def begin(self, graph: StepGraph, statuses: Mapping[str, StepStatus]) -> None:
        done = sum(1 for s in graph if statuses.get(s.id) in (StepStatus.ALREADY_DONE, StepStatus.SKIPPED))
        self._progress.start()
        self._overall = self._progress.add_task("steps", total=len(graph), completed=done)

    def step_started(self, step: Step) -> None:
        self._tasks[step.id] = self._progress.add_task(f"{escape(step.id)}", total=None)

    def step_note(self, step: Step, message: str) -> None:
        task = self._tasks.get(step.id)
        if task is not None:
            self._progress.update(task, description=f"{escape(step.id)}: {escape(message[:60])}")

    def step_finished(self, step: Step, status: StepStatus, outcome: StepOutcome | None) -> None:
        task = self._tasks.pop(step.id, None)
        if task is not None:
            self._progress.remove_task(task)
        style = _STYLE.get(status, "")
        text = (outcome.error or outcome.summary) if outcome else ""
        first = escape(text.splitlines()[0]) if text else ""
        self._progress.console.print(f"[{style}]{status.value}[/] {escape(step.id)}{': ' + first if first else ''}")
        if self._overall is not None:
            self._progress.advance(self._overall)

    def interrupted(self) -> None:
        self._progress.console.print("[yellow]interrupted:[/] no new step starts; waiting for running steps "
                                     "to stop (Ctrl-C again to quit now)")

    def end(self, report: RunReport) -> None:
        del report
        self.close()

    def close(self) -> None:
        """Idempotent: the CLI calls it in a finally, so an exception never leaves the live display on."""
        self._progress.stop()


def progress_for(console: Console) -> PlainProgress | RichProgress:
    return RichProgress(console) if console.is_terminal else PlainProgress(console)
