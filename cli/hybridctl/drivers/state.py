"""The state store: the applied plan, a serial, run history, an append-only journal, one lock.

Layout of a state directory (default ``./.hybridctl/state``; ``--state DIR`` or ``HYBRIDCTL_STATE``)::

    state.json          applied plan, serial, what each step made, the pending run, history
    journal.jsonl       one JSON record per line, appended and fsynced before and after every step
    lock                flock(2) target; the kernel drops the lock when its holder dies
    lock.holder.json    who holds the lock: pid, host, start time, command
    known_hosts         SSH host keys the tool trusts (unless --known-hosts names another file)
    pulumi/             the Pulumi file backend and project working copies
    ansible/            the generated Ansible inventory, for running playbooks by hand

state.json is replaced atomically (write, fsync, rename, fsync the directory): a power cut
leaves the old file or the new one. The journal is only ever appended to; a record torn by a
power cut is the last line and is ignored when read.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hybridctl.drivers.files import atomic_write_text
from hybridctl.drivers.journal import Journal, JournalEvent, JournalRecord, journal_problems, now_iso
from hybridctl.drivers.statelock import HOLDER_ENV, LockHolder, StateLock, stop_leftover_processes
from hybridctl.errors import HybridctlError, Location

__all__ = ["HOLDER_ENV", "Deployed", "Journal", "JournalEvent", "JournalRecord", "LockHolder", "PendingRun",
           "RunRecord", "State", "StateFileError", "StateLock", "StateStore", "current_serial", "journal_problems",
           "new_run_id", "now_iso", "resolve_state_dir", "stop_leftover_processes"]

if TYPE_CHECKING:
    from hybridctl.core.plan.model import Plan

STATE_ENV = "HYBRIDCTL_STATE"
DEFAULT_STATE_DIR = Path(".hybridctl") / "state"
STATE_FORMAT_VERSION = 1
HISTORY_KEPT = 200

JsonDict = dict[str, Any]


class StateFileError(HybridctlError):
    """state.json is unreadable: never silently replaced, since it records what exists."""


def resolve_state_dir(option: Path | None, env: Mapping[str, str] | None = None) -> Path:
    """--state, else $HYBRIDCTL_STATE, else ./.hybridctl/state (relative to the working directory)."""
    env = os.environ if env is None else env
    if option is not None:
        return option.resolve()
    if env.get(STATE_ENV):
        return Path(env[STATE_ENV]).resolve()
    return DEFAULT_STATE_DIR.resolve()


# --- state.json ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunRecord:
    """One apply, destroy or runbook execution, as the history keeps it."""

    run_id: str
    operation: str  # apply | destroy | runbook
    status: str  # running | succeeded | failed | interrupted | abandoned
    started_at: str
    pid: int
    host: str
    target: str = ""  # what the run acts on: a plan digest, "site=NAME", a runbook digest
    finished_at: str | None = None
    summary: str = ""
    resumed_from: tuple[str, ...] = ()  # earlier runs of the same pending series

    def to_dict(self) -> JsonDict:
        data = self.__dict__.copy()
        data["resumed_from"] = list(self.resumed_from)
        return data

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> RunRecord:
        return RunRecord(
            run_id=str(raw["run_id"]), operation=str(raw["operation"]), status=str(raw["status"]),
            started_at=str(raw["started_at"]), pid=int(raw.get("pid", 0)), host=str(raw.get("host", "")),
            target=str(raw.get("target", "")), finished_at=raw.get("finished_at"), summary=str(raw.get("summary", "")),
            resumed_from=tuple(raw.get("resumed_from", ())),
        )  # fmt: skip


@dataclass(frozen=True)
class PendingRun:
    """An operation that has not finished: the next run of the same operation resumes it."""

    operation: str
    run_ids: tuple[str, ...]
    target: str = ""
    detail: Mapping[str, Any] = field(default_factory=dict)  # e.g. the plan being applied

    def to_dict(self) -> JsonDict:
        return {"operation": self.operation, "run_ids": list(self.run_ids), "target": self.target,
                "detail": dict(self.detail)}

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> PendingRun:
        return PendingRun(str(raw["operation"]), tuple(raw["run_ids"]), str(raw.get("target", "")),
                          dict(raw.get("detail", {})))


@dataclass(frozen=True)
class Deployed:
    """Something a step made, with what tearing it down or checking it for drift needs."""

    step_id: str
    kind: str
    key: str  # the step's identity when it last succeeded
    site: str | None
    applied_at: str
    record: Mapping[str, Any] = field(default_factory=dict)  # never holds a secret in clear

    def to_dict(self) -> JsonDict:
        return {"step_id": self.step_id, "kind": self.kind, "key": self.key, "site": self.site,
                "applied_at": self.applied_at, "record": dict(self.record)}

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> Deployed:
        return Deployed(str(raw["step_id"]), str(raw["kind"]), str(raw["key"]), raw.get("site"),
                        str(raw["applied_at"]), dict(raw.get("record", {})))


@dataclass(frozen=True)
class State:
    lineage: str = ""  # one id for the life of a state directory
    serial: int = 0  # +1 each time an operation completes; plan files name the serial they were made at
    applied_plan: Mapping[str, Any] | None = None  # the plan file JSON of the last completed apply
    applied_plan_digest: str | None = None
    applied_at: str | None = None
    inventory_path: str | None = None
    site_kinds: Mapping[str, str] = field(default_factory=dict)  # of the applied inventory: site -> onprem|cloud|edge
    deployed: Mapping[str, Deployed] = field(default_factory=dict)
    pending: PendingRun | None = None
    history: tuple[RunRecord, ...] = ()

    @property
    def last_run(self) -> RunRecord | None:
        return self.history[-1] if self.history else None

    def run(self, run_id: str) -> RunRecord | None:
        return next((r for r in reversed(self.history) if r.run_id == run_id), None)

    def to_dict(self) -> JsonDict:
        return {
            "format_version": STATE_FORMAT_VERSION,
            "lineage": self.lineage,
            "serial": self.serial,
            "applied_plan": dict(self.applied_plan) if self.applied_plan is not None else None,
            "applied_plan_digest": self.applied_plan_digest,
            "applied_at": self.applied_at,
            "inventory_path": self.inventory_path,
            "site_kinds": dict(sorted(self.site_kinds.items())),
            "deployed": {k: v.to_dict() for k, v in sorted(self.deployed.items())},
            "pending": self.pending.to_dict() if self.pending else None,
            "history": [r.to_dict() for r in self.history[-HISTORY_KEPT:]],
        }

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> State:
        return State(
            lineage=str(raw.get("lineage", "")),
            serial=int(raw["serial"]),
            applied_plan=_object_or_none(raw.get("applied_plan"), "applied_plan"),
            applied_plan_digest=raw.get("applied_plan_digest"),
            applied_at=raw.get("applied_at"),
            inventory_path=raw.get("inventory_path"),
            site_kinds=dict(raw.get("site_kinds", {})),
            deployed={k: Deployed.from_dict(v) for k, v in raw.get("deployed", {}).items()},
            pending=PendingRun.from_dict(raw["pending"]) if raw.get("pending") else None,
            history=tuple(RunRecord.from_dict(r) for r in raw.get("history", ())),
        )

def _object_or_none(value: Any, name: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name} must be an object or null, not {type(value).__name__}")
    return value


# --- the store -----------------------------------------------------------------------------------


class StateStore:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.state_path = root / "state.json"
        self.journal = Journal(root / "journal.jsonl")
        self.lock = StateLock(root)

    @property
    def known_hosts_path(self) -> Path:
        return self.root / "known_hosts"

    @property
    def ansible_dir(self) -> Path:
        return self.root / "ansible"

    def exists(self) -> bool:
        return self.state_path.is_file()

    def read(self) -> State:
        try:
            text = self.state_path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return State()
        except (OSError, UnicodeDecodeError) as exc:
            raise StateFileError(f"{self.state_path}: cannot read: {exc}") from None
        try:
            raw = json.loads(text)
            if raw.get("format_version") != STATE_FORMAT_VERSION:
                raise StateFileError(f"{self.state_path}: state format {raw.get('format_version')!r} is not "
                                     f"supported (this hybridctl reads {STATE_FORMAT_VERSION})",
                                     hint="use the hybridctl version that wrote this state")
            return State.from_dict(raw)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise StateFileError(f"{self.state_path}: not a hybridctl state file ({type(exc).__name__}: {exc})",
                                 location=Location(str(self.state_path)),
                                 hint="restore it from a backup; hybridctl never overwrites an unreadable state") from None

    def write(self, state: State) -> State:
        if not self.lock.held:
            raise RuntimeError("state written without holding the state lock")
        if not state.lineage:
            state = replace(state, lineage=uuid.uuid4().hex)
        text = json.dumps(state.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        atomic_write_text(self.state_path, text, mode=0o600)
        return state

    def update(self, change: Callable[[State], State]) -> State:
        return self.write(change(self.read()))

    @contextlib.contextmanager
    def locked(self, *, command: str, timeout_s: float = 0.0,
               on_recovered: Callable[[LockHolder], None] | None = None,
               on_wait: Callable[[LockHolder | None], None] | None = None) -> Iterator[StateStore]:
        stale = self.lock.acquire(command=command, timeout_s=timeout_s, on_wait=on_wait)
        try:
            self._remove_torn_writes()
            if stale is not None and on_recovered is not None:
                on_recovered(stale)
            yield self
        finally:
            self.lock.release()

    def _remove_torn_writes(self) -> None:
        """Temp files left by a process killed between write and rename (files.atomic_write_bytes)."""
        for leftover in self.root.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()


def current_serial(state_dir: Path | None, env: Mapping[str, str] | None = None) -> int:
    """The serial a new plan file should record as base_serial (`plan --out` calls this)."""
    return StateStore(resolve_state_dir(state_dir, env)).read().serial


def applied_plan(state_dir: Path | None, env: Mapping[str, str] | None = None) -> Plan | None:
    """The plan the state says is applied, if any (`plan` diffs cloud changes against it)."""
    from hybridctl.core.plan.serialize import plan_from_dict

    raw = StateStore(resolve_state_dir(state_dir, env)).read().applied_plan
    return plan_from_dict(dict(raw), "the applied plan in the state") if raw is not None else None


def new_run_id() -> str:
    return datetime.now(UTC).strftime("r%Y%m%dT%H%M%S-") + uuid.uuid4().hex[:6]

