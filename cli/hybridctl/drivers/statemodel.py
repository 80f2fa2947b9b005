"""What the state records: the applied plan, the serial, what each step made, the pending run, history.

Plain values, read from and written to JSON by whichever backend keeps the state (state.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hybridctl.errors import HybridctlError, Location

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
    def from_dict(raw: Mapping[str, Any], where: str = "history[]") -> RunRecord:
        raw = _object(raw, where)
        return RunRecord(
            run_id=_text(raw, "run_id", where), operation=_text(raw, "operation", where),
            status=_text(raw, "status", where), started_at=_text(raw, "started_at", where),
            pid=_count(raw.get("pid", 0), f"{where}.pid"), host=_text(raw, "host", where, ""),
            target=_text(raw, "target", where, ""), finished_at=_text(raw, "finished_at", where, None),
            summary=_text(raw, "summary", where, ""), resumed_from=_texts(raw.get("resumed_from", []),
                                                                         f"{where}.resumed_from"),
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
    def from_dict(raw: Mapping[str, Any], where: str = "pending") -> PendingRun:
        raw = _object(raw, where)
        return PendingRun(_text(raw, "operation", where), _texts(raw.get("run_ids"), f"{where}.run_ids"),
                          _text(raw, "target", where, ""), _object(raw.get("detail", {}), f"{where}.detail"))


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
    def from_dict(raw: Mapping[str, Any], where: str = "deployed[]") -> Deployed:
        from hybridctl.core.deploy.stepcheck import check_step_params

        raw = _object(raw, where)
        kind, record = _text(raw, "kind", where), _object(raw.get("record", {}), f"{where}.record")
        # the record is what destroy, `status --drift` and the model check run again (a Pulumi project, a
        # playbook, hosts): held to what hybridctl makes for the kind, as a runbook's steps are
        try:
            check_step_params(kind, record)
        except ValueError as exc:
            raise ValueError(f"{where}.record.{str(exc).removeprefix('params.')}") from None
        return Deployed(_text(raw, "step_id", where), kind, _text(raw, "key", where),
                        _text(raw, "site", where, None), _text(raw, "applied_at", where), record)


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
        """The state a document records; ValueError naming the field when a field is not of its type (the
        document is read from a file or a database row anyone with access may have changed)."""
        raw = _object(raw, "the state")
        if "serial" not in raw:
            raise ValueError("serial is missing")
        inventory_path = _text(raw, "inventory_path", "", None)
        if inventory_path is not None and (not inventory_path or "\0" in inventory_path):
            raise ValueError(f"inventory_path {inventory_path!r} is not a path")
        site_kinds = _object(raw.get("site_kinds", {}), "site_kinds")
        deployed = _object(raw.get("deployed", {}), "deployed")
        history = raw.get("history", [])
        if not isinstance(history, list):
            raise ValueError(f"history must be a list, not {_kind(history)}")
        return State(
            lineage=_text(raw, "lineage", "", ""),
            serial=_count(raw["serial"], "serial"),
            applied_plan=_object_or_none(raw.get("applied_plan"), "applied_plan"),
            applied_plan_digest=_text(raw, "applied_plan_digest", "", None),
            applied_at=_text(raw, "applied_at", "", None),
            inventory_path=inventory_path,
            site_kinds={_checked_text(k, "site_kinds"): _text(site_kinds, k, "site_kinds") for k in site_kinds},
            deployed={_checked_text(k, "deployed"): Deployed.from_dict(v, f"deployed.{k}") for k, v in deployed.items()},
            pending=PendingRun.from_dict(raw["pending"]) if raw.get("pending") is not None else None,
            history=tuple(RunRecord.from_dict(r, f"history[{i}]") for i, r in enumerate(history)),
        )


def _object_or_none(value: Any, name: str) -> Mapping[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise TypeError(f"{name} must be an object or null, not {type(value).__name__}")
    return value


# The fields' types, checked as they are read: a state is read back from a file or a row, and a value of
# another type would otherwise fail later, far from here (an int path, a serial "7", a list of runs as text).
_MISSING = object()
_MAX_COUNT = 2**63 - 1  # what the state's JSON writer (orjson) writes as an int


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def _field(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _object(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be an object, not {_kind(value)}")
    return value


def _checked_text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{where} must be text, not {_kind(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{where} holds a lone surrogate ({value!r}), which no file can hold") from None
    return value


def _text(raw: Mapping[str, Any], name: str, where: str, default: Any = _MISSING) -> Any:
    """raw[name] as text; `default` when absent or null (None allowed), else it is required."""
    value = raw.get(name)
    if value is None:
        if default is _MISSING:
            raise ValueError(f"{_field(where, name)} is missing")
        return default
    return _checked_text(value, _field(where, name))


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a list of text, not {_kind(value)}")
    return tuple(_checked_text(item, f"{where}[{index}]") for index, item in enumerate(value))


def _count(value: Any, where: str) -> int:
    if type(value) is not int or not 0 <= value <= _MAX_COUNT:
        raise ValueError(f"{where} must be a whole number from 0 to 2^63, not {_kind(value)} {str(value)[:40]}")
    return value


# A state document's name (runbooks/<id>.json): a relative path under one of DOCUMENT_DIRS, no dot-segments.
DOCUMENT_NAME = re.compile(r"(?:[A-Za-z0-9][A-Za-z0-9._-]*/)*[A-Za-z0-9][A-Za-z0-9._-]*")
DOCUMENT_DIRS = ("runbooks",)  # where documents live: a directory of the same name in a state directory


def check_document_name(name: str) -> str:
    if not DOCUMENT_NAME.fullmatch(name) or name.split("/")[0] not in DOCUMENT_DIRS:
        raise ValueError(f"not a state document name: {name!r}")
    return name


class StateFileError(HybridctlError):
    """state.json is unreadable: never silently replaced, since it records what exists."""


UNREADABLE_STATE_HINT = "restore it from a backup; hybridctl never overwrites an unreadable state"


def stored_document(raw: Any, where: str) -> JsonDict:
    """A stored state document, which is a JSON object. Anything else (`null`, a list, a number) is
    refused, never read as "no state yet": the next write would replace the history, what was deployed
    and the lineage with an empty state."""
    if not isinstance(raw, dict):
        shown = "null" if raw is None else f"a JSON {type(raw).__name__}"
        raise StateFileError(f"not a hybridctl state: it holds {shown}, not an object",
                             location=Location(where), hint=UNREADABLE_STATE_HINT)
    return raw
