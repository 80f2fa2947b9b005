"""What the state records: the applied plan, the serial, what each step made, the pending run, history.

Plain values, read from and written to JSON by whichever backend keeps the state (state.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

STATE_FORMAT_VERSION = 1
HISTORY_KEPT = 200

JsonDict = dict[str, Any]


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
    # How many times the stored document was written; a write must name the revision it read
    # (optimistic concurrency). Not part of the document's content, so not compared.
    revision: int = field(default=0, compare=False)

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
