"""A live progress table for playbook runs, fed by the Ansible driver's events.

    with AnsibleProgress(console, title="node baseline") as progress:
        result = run_playbook(..., on_event=progress)

One row per host: the task it is on, how its tasks went so far, and how it ended. Failures
are also printed as lines above the table as they happen, so a CI log (no live display)
still says which host failed where, and why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType

from rich.console import Console
from rich.live import Live
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hybridctl.drivers.ansible import AnsibleEvent, EventKind

_TALLIED = {
    EventKind.HOST_OK: "ok",
    EventKind.HOST_CHANGED: "changed",
    EventKind.HOST_SKIPPED: "skipped",
    EventKind.HOST_FAILED: "failed",
    EventKind.HOST_UNREACHABLE: "unreachable",
}
_STYLE = {"ok": "green", "changed": "yellow", "skipped": "cyan", "failed": "red", "unreachable": "magenta"}


@dataclass
class _HostRow:
    task: str = ""
    running: bool = False
    tallies: dict[str, int] = field(default_factory=dict)
    ended: str | None = None  # failed / unreachable: the host takes no further part


class AnsibleProgress:
    """An on_event callback for run_playbook that keeps a rich live table up to date."""

    def __init__(self, console: Console, *, title: str, hosts: Sequence[str] = ()) -> None:
        self._console = console
        self._title = title
        self._play = ""
        self._rows: dict[str, _HostRow] = {host: _HostRow() for host in hosts}
        self._live: Live | None = None

    def __enter__(self) -> AnsibleProgress:
        self._live = Live(self.table(), console=self._console, refresh_per_second=8, transient=False)
        self._live.__enter__()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._live is not None:
            for row in self._rows.values():
                row.running = False
            self._live.update(self.table())
            self._live.__exit__(kind, error, trace)
            self._live = None

    def __call__(self, event: AnsibleEvent) -> None:
        if event.kind is EventKind.PLAY_STARTED:
            self._play = event.play or ""
        elif event.host is not None:
            row = self._rows.setdefault(event.host, _HostRow())
            if event.kind is EventKind.TASK_STARTED:
                row.task, row.running = event.task or "", True
            elif event.kind in _TALLIED:
                outcome = _TALLIED[event.kind]
                row.tallies[outcome] = row.tallies.get(outcome, 0) + 1
                row.running = False
                if event.kind in (EventKind.HOST_FAILED, EventKind.HOST_UNREACHABLE):
                    row.ended = outcome
                    self._console.print(
                        f"[{_STYLE[outcome]}]{outcome}[/]: {escape(event.host)}: "
                        f"{escape(event.task or '')}: {escape(event.message or '')}"
                    )
        if self._live is not None:
            self._live.update(self.table())

    def table(self) -> Table:
        title = self._title + (f" — {self._play}" if self._play else "")
        table = Table(title=escape(title), title_justify="left", expand=False)
        table.add_column("host")
        table.add_column("task")
        for outcome, style in _STYLE.items():
            table.add_column(outcome, justify="right", style=style)
        for host, row in sorted(self._rows.items()):
            if row.ended is not None:
                task = Text(f"{row.task} ({row.ended})", style=_STYLE[row.ended])
            else:
                task = Text(("… " if row.running else "") + row.task)
            table.add_row(escape(host), task, *(str(row.tallies.get(outcome, 0)) for outcome in _STYLE))
        return table
