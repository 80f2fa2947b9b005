"""The journal: an append-only record of step events, written before the step it describes proceeds.

Two stores keep it: `Journal`, a file of JSON lines fsynced as they are written (the local
state directory), and the PostgreSQL backend's table (pgstate.py). Both are `JournalBase`.

Only the state lock's holder appends, and a writer proves it before each record (`guard`):
one that lost the lock is refused. A record torn by a power cut can only be the last line, and
unterminated: readers skip it, and the next append cuts it off before writing. Any other line that
is not a record (damage, binary data, a record of the wrong shape) is an error naming the line:
a journal read past such a line would resume steps as if they had never run, or never finished.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_bounded
from hybridctl.drivers.lockholder import now_iso
from hybridctl.errors import HybridctlError, Location

__all__ = ["Journal", "JournalBase", "JournalEvent", "JournalFileError", "JournalRecord", "journal_problems", "now_iso"]


class JournalEvent:
    RUN_STARTED = "run-started"
    RUN_FINISHED = "run-finished"
    STEP_STARTED = "step-started"
    STEP_DONE = "step-done"
    STEP_FAILED = "step-failed"
    STEP_CANCELED = "step-canceled"
    STEP_SKIPPED = "step-skipped"  # not run on purpose (e.g. --skip-cloud): not done, re-planned next time

    TERMINAL = frozenset({STEP_DONE, STEP_FAILED, STEP_CANCELED, STEP_SKIPPED})


@dataclass(frozen=True)
class JournalRecord:
    seq: int
    time: str
    run: str
    event: str
    step: str | None = None
    key: str | None = None
    summary: str | None = None
    error: str | None = None
    detail: Mapping[str, Any] | None = None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}

    @staticmethod
    def from_dict(raw: Mapping[str, Any]) -> JournalRecord:
        """A record as stored; TypeError unless it is one (every field of its type, none unknown)."""
        if not isinstance(raw, Mapping):
            raise TypeError(f"a record is a JSON object, not {type(raw).__name__}")
        unknown = sorted(set(raw) - _FIELDS.keys())
        if unknown:
            raise TypeError(f"unknown field(s) {', '.join(map(repr, unknown))}")
        for name, kinds in _FIELDS.items():
            value = raw.get(name)
            if value is None and name not in _REQUIRED:
                continue
            if not isinstance(value, kinds) or isinstance(value, bool):
                raise TypeError(f"{name} must be {_KIND_WORDS[kinds]}, not {type(value).__name__}")
        return JournalRecord(**raw)


_FIELDS: dict[str, type | tuple[type, ...]] = {
    "seq": int, "time": str, "run": str, "event": str, "step": str, "key": str, "summary": str, "error": str,
    "detail": dict}
_REQUIRED = frozenset({"seq", "time", "run", "event"})
_KIND_WORDS: dict[type | tuple[type, ...], str] = {int: "a whole number", str: "text", dict: "an object"}


class JournalBase:
    """What every journal store offers: its records in order, an append, and the resume query."""

    def records(self) -> list[JournalRecord]:
        raise NotImplementedError

    def append(self, run: str, event: str, *, step: str | None = None, key: str | None = None,
               summary: str | None = None, error: str | None = None,
               detail: Mapping[str, Any] | None = None) -> JournalRecord:
        raise NotImplementedError

    def import_records(self, records: list[JournalRecord]) -> None:
        """For `state migrate`: copy records into an empty journal, keeping their sequence numbers."""
        raise NotImplementedError

    def done_keys(self, run_ids: Iterable[str]) -> dict[str, str]:
        """step id -> the key it last completed with, in these runs."""
        wanted = set(run_ids)
        done: dict[str, str] = {}
        for record in self.records():
            if record.run in wanted and record.step and record.key:
                if record.event == JournalEvent.STEP_DONE:
                    done[record.step] = record.key
                elif record.event == JournalEvent.STEP_STARTED:
                    done.pop(record.step, None)  # re-run since: done again only if it says so
        return done


class Journal(JournalBase):
    """Append-only JSON lines. Only the lock holder appends; every append is fsynced."""

    def __init__(self, path: Path, guard: Callable[[], None] | None = None) -> None:
        self.path = path
        self.guard = guard  # raises unless the writer holds the state lock
        self._next_seq: int | None = None

    def records(self) -> list[JournalRecord]:
        """Every complete record. A torn last line (a power cut mid-append: unterminated) never counts;
        any other line that is not a record is an error naming the file and the line."""
        try:
            data = read_bounded(self.path, DOCUMENT_LIMIT, what="the journal")
        except FileNotFoundError:
            return []
        lines = data.split(b"\n")
        tail = lines.pop()  # after the last newline: empty, or a torn record
        records = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                text = line.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _corrupt(self.path, number, f"not a journal record: binary data (byte {exc.start + 1} of the "
                               "line is not UTF-8)") from None
            try:
                records.append(JournalRecord.from_dict(json.loads(text)))
            except (ValueError, TypeError, RecursionError) as exc:
                raise _corrupt(self.path, number, f"not a journal record ({exc})") from None
        if tail and not _looks_torn(tail):
            raise _corrupt(self.path, len(lines) + 1, "not a journal record, nor the start of one torn by a power cut")
        return records

    def append(self, run: str, event: str, *, step: str | None = None, key: str | None = None,
               summary: str | None = None, error: str | None = None,
               detail: Mapping[str, Any] | None = None) -> JournalRecord:
        if self.guard is not None:
            self.guard()
        if self._next_seq is None:
            existing = self.records()
            self._next_seq = (existing[-1].seq + 1) if existing else 1
        record = JournalRecord(self._next_seq, now_iso(), run, event, step, key, summary, error,
                               dict(detail) if detail else None)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            size = os.fstat(descriptor).st_size
            complete = _complete_length(descriptor, size)
            if complete < size:
                os.ftruncate(descriptor, complete)  # a torn last record never counted: it goes
            os.write(descriptor, record.to_json().encode() + b"\n")
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        self._next_seq += 1
        return record

    def import_records(self, records: list[JournalRecord]) -> None:
        if self.guard is not None:
            self.guard()
        from hybridctl.drivers.files import atomic_write_text

        atomic_write_text(self.path, "".join(record.to_json() + "\n" for record in records), mode=0o600)
        self._next_seq = None


class JournalFileError(HybridctlError):
    """A journal line that is not a record: the journal is written by hybridctl alone, so it was damaged."""


def _corrupt(path: Path, line: int, what: str) -> JournalFileError:
    return JournalFileError(f"{path}:{line}: {what}", location=Location(str(path), line),
                            hint="the journal is append-only and written by hybridctl alone: restore it from a backup "
                                 "(a line torn by a power cut under an older hybridctl may be deleted)")


def _looks_torn(tail: bytes) -> bool:
    """What a power cut mid-append leaves after the last newline: the start of a record (UTF-8, no
    control characters but the ones JSON escapes never write), or zeros where the file system had
    grown the file but not written it."""
    if not tail.strip(b"\0"):
        return True
    if not tail.startswith(b"{") or any(byte < 0x20 for byte in tail):
        return False
    try:
        codecs.getincrementaldecoder("utf-8")().decode(tail, final=False)  # may stop mid-character
    except UnicodeDecodeError:
        return False
    return True


def _complete_length(descriptor: int, size: int) -> int:
    """Where the last complete line of the file ends (its size, unless a torn record follows it)."""
    end = size
    while end > 0:
        start = max(0, end - _TAIL_CHUNK)
        chunk = os.pread(descriptor, end - start, start)
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            return start + newline + 1
        end = start
    return 0


_TAIL_CHUNK = 64 * 1024


def journal_problems(records: Iterable[JournalRecord]) -> list[str]:
    """Inconsistencies: sequence gaps, a step ending that never started, a run that ended twice."""
    problems: list[str] = []
    running: dict[tuple[str, str], str] = {}  # (run, step) -> key while started
    finished_runs: set[str] = set()
    previous = 0
    for record in records:
        if record.seq != previous + 1:
            problems.append(f"seq {record.seq} follows {previous}")
        previous = record.seq
        if record.run in finished_runs:
            problems.append(f"seq {record.seq}: run {record.run} has a record after it finished")
        if record.event == JournalEvent.RUN_FINISHED:
            finished_runs.add(record.run)
            left = sorted(step for (run, step) in running if run == record.run)
            if left:
                problems.append(f"seq {record.seq}: run {record.run} finished with steps still running: {left}")
        elif record.event == JournalEvent.STEP_STARTED and record.step:
            if (record.run, record.step) in running:
                problems.append(f"seq {record.seq}: {record.step} started twice in run {record.run}")
            running[(record.run, record.step)] = record.key or ""
        elif record.event in JournalEvent.TERMINAL and record.step:
            started_key = running.pop((record.run, record.step), None)
            if record.event == JournalEvent.STEP_SKIPPED and started_key is None:
                continue
            if started_key is None:
                problems.append(f"seq {record.seq}: {record.step} ended ({record.event}) without starting")
            elif started_key != (record.key or ""):
                problems.append(f"seq {record.seq}: {record.step} ended with another key than it started with")
    return problems
