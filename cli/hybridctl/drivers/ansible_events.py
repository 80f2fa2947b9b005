"""What a playbook run reports: per-host results as values, and the events they are folded from.

ansible-runner hands over raw event dicts; this module turns them into :class:`AnsibleEvent`
values for progress displays and folds them into one :class:`HostResult` per host. A playbook
hands data back per host by setting the fact ``hybridctl_result`` (see RESULT_FACT).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

RESULT_FACT = "hybridctl_result"


class HostState(StrEnum):
    """How a host ended the run, worst first: unreachable > canceled > timed_out > failed > changed > ok.

    timed_out: a task ran longer than the task timeout (its remote processes are ended);
    canceled: the run was canceled while a task ran on the host (its remote processes are ended).
    """

    OK = "ok"
    CHANGED = "changed"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    CANCELED = "canceled"
    UNREACHABLE = "unreachable"


# The states of a host on which the run did not complete.
FAILURE_STATES = frozenset({HostState.FAILED, HostState.TIMED_OUT, HostState.CANCELED, HostState.UNREACHABLE})


class RunStatus(StrEnum):
    SUCCESSFUL = "successful"
    FAILED = "failed"
    CANCELED = "canceled"
    TIMEOUT = "timeout"


class EventKind(StrEnum):
    PLAY_STARTED = "play_started"
    TASK_STARTED = "task_started"  # host is None: the task began; with a host: it began there
    HOST_OK = "host_ok"
    HOST_CHANGED = "host_changed"
    HOST_SKIPPED = "host_skipped"
    HOST_FAILED = "host_failed"
    HOST_UNREACHABLE = "host_unreachable"


@dataclass(frozen=True)
class AnsibleEvent:
    kind: EventKind
    play: str | None = None
    task: str | None = None
    host: str | None = None
    message: str | None = None


@dataclass(frozen=True)
class HostResult:
    host: str
    state: HostState
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0
    failed_task: str | None = None  # the task that failed or found the host unreachable
    message: str | None = None
    data: Mapping[str, object] = field(default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class PlaybookResult:
    playbook: str
    status: RunStatus
    rc: int
    hosts: tuple[HostResult, ...]
    elapsed_s: float
    error: str | None = None  # Ansible's own output when the run failed without a host to blame

    @property
    def succeeded(self) -> bool:
        return self.status is RunStatus.SUCCESSFUL and not self.hosts_in(*FAILURE_STATES)

    def host(self, name: str) -> HostResult:
        for result in self.hosts:
            if result.host == name:
                return result
        raise KeyError(f"no result for host {name!r}; hosts: {[h.host for h in self.hosts]}")

    def hosts_in(self, *states: HostState) -> tuple[str, ...]:
        return tuple(h.host for h in self.hosts if h.state in states)


EventCallback = Callable[[AnsibleEvent], None]


def _message(result: Mapping[str, object]) -> str | None:
    # A loop task's own msg is only "All items completed": what went wrong is in its items.
    items = result.get("results")
    if isinstance(items, list):
        for item in items:
            if isinstance(item, Mapping) and (item.get("failed") or item.get("unreachable")):
                found = _message(item)
                if found:
                    return found
    for key in ("msg", "stderr", "module_stderr", "stdout"):
        value = result.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


class Collector:
    """Folds runner events into per-host counts, the failure that decided, and returned data."""

    def __init__(self) -> None:
        self.counts: dict[str, dict[str, int]] = {}
        self.failure: dict[str, tuple[str | None, str | None]] = {}
        self.data: dict[str, dict[str, object]] = {}
        self.stats: dict[str, dict[str, int]] | None = None
        self.timed_out: set[str] = set()
        self.running: dict[str, str | None] = {}  # host: the task started there and not yet ended

    def end_task(self, host: str) -> None:
        self.running.pop(host, None)

    def cancel_running(self) -> tuple[str, ...]:
        """The run was canceled: hosts with a task under way end canceled, at that task. Returns them."""
        hosts = tuple(sorted(self.running))
        for host, task in self.running.items():
            self.count(host, "canceled")
            self.failure[host] = (task, "canceled while this task ran")
        self.running.clear()
        return hosts

    def count(self, host: str, key: str) -> None:
        per_host = self.counts.setdefault(host, {})
        per_host[key] = per_host.get(key, 0) + 1

    def results(self) -> tuple[HostResult, ...]:
        counts = self.stats if self.stats is not None else self.counts
        hosts = sorted(set(counts) | set(self.failure) | set(self.data))
        results = []
        for host in hosts:
            c = counts.get(host, {})
            state = HostState.OK
            if c.get("unreachable"):
                state = HostState.UNREACHABLE
            elif self.counts.get(host, {}).get("canceled"):  # never in Ansible's own stats
                state = HostState.CANCELED
            elif c.get("failed") and host in self.timed_out:
                state = HostState.TIMED_OUT
            elif c.get("failed"):
                state = HostState.FAILED
            elif c.get("changed"):
                state = HostState.CHANGED
            # A failure later rescued (block/rescue) leaves the host ok: no failure to report.
            ended_badly = state in FAILURE_STATES
            task, message = self.failure.get(host, (None, None)) if ended_badly else (None, None)
            results.append(
                HostResult(
                    host=host,
                    state=state,
                    ok=c.get("ok", 0),
                    changed=c.get("changed", 0),
                    failed=c.get("failed", 0),
                    unreachable=c.get("unreachable", 0),
                    skipped=c.get("skipped", 0),
                    failed_task=task,
                    message=message,
                    data=MappingProxyType(dict(self.data.get(host, {}))),
                )
            )
        return tuple(results)


_STAT_KEYS = {
    "ok": "ok",
    "changed": "changed",
    "failures": "failed",
    "dark": "unreachable",
    "skipped": "skipped",
}


def dispatch(event: Mapping[str, object], collector: Collector, on_event: EventCallback | None) -> None:
    name = event.get("event")
    data = event.get("event_data")
    if not isinstance(data, Mapping):
        return
    host = str(data["host"]) if data.get("host") is not None else None
    task = str(data["task"]) if data.get("task") else None
    play = str(data["play"]) if data.get("play") else None
    res = data.get("res")
    result = res if isinstance(res, Mapping) else {}
    emitted: AnsibleEvent | None = None
    if host and name in ("runner_on_ok", "runner_on_skipped", "runner_on_failed", "runner_on_unreachable"):
        collector.end_task(host)

    if name == "playbook_on_play_start":
        emitted = AnsibleEvent(EventKind.PLAY_STARTED, play=play)
    elif name in ("playbook_on_task_start", "playbook_on_handler_task_start"):
        emitted = AnsibleEvent(EventKind.TASK_STARTED, play=play, task=task)
    elif name == "runner_on_start" and host:
        collector.running[host] = task
        emitted = AnsibleEvent(EventKind.TASK_STARTED, play=play, task=task, host=host)
    elif name == "runner_on_ok" and host:
        changed = bool(result.get("changed"))
        collector.count(host, "changed" if changed else "ok")
        if changed:
            collector.count(host, "ok")  # Ansible counts a changed task as ok too
        _collect_result(collector, host, result)
        emitted = AnsibleEvent(EventKind.HOST_CHANGED if changed else EventKind.HOST_OK, play, task, host)
    elif name == "runner_on_skipped" and host:
        collector.count(host, "skipped")
        emitted = AnsibleEvent(EventKind.HOST_SKIPPED, play, task, host)
    elif name == "runner_on_failed" and host:
        # An action plugin that does a host's whole play in one task reports its result when it fails too.
        _collect_result(collector, host, result)
        message = _message(result)
        timed_out = result.get("timedout")
        if isinstance(timed_out, Mapping):
            # Ansible's own message does not say how long; ours does, and says it timed out.
            message = f"timed out after {timed_out.get('period', '?')} s (the task timeout)"
        if data.get("ignore_errors"):
            collector.count(host, "ok")
            emitted = AnsibleEvent(EventKind.HOST_OK, play, task, host, message)
        else:
            collector.count(host, "failed")
            collector.failure[host] = (task, message)
            if timed_out:
                collector.timed_out.add(host)
            emitted = AnsibleEvent(EventKind.HOST_FAILED, play, task, host, message)
    elif name == "runner_on_unreachable" and host:
        collector.count(host, "unreachable")
        collector.failure[host] = (task, _message(result))
        emitted = AnsibleEvent(EventKind.HOST_UNREACHABLE, play, task, host, _message(result))
    elif name == "playbook_on_stats":
        stats: dict[str, dict[str, int]] = {}
        for runner_key, our_key in _STAT_KEYS.items():
            per_host = data.get(runner_key)
            if isinstance(per_host, Mapping):
                for stat_host, value in per_host.items():
                    stats.setdefault(str(stat_host), {})[our_key] = int(value)
        collector.stats = stats
    if emitted is not None and on_event is not None:
        on_event(emitted)


def _collect_result(collector: Collector, host: str, result: Mapping[str, object]) -> None:
    facts = result.get("ansible_facts")
    if isinstance(facts, Mapping) and RESULT_FACT in facts:
        returned = facts[RESULT_FACT]
        target = collector.data.setdefault(host, {})
        target.update(returned if isinstance(returned, Mapping) else {"value": returned})
