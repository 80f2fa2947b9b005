"""The journal: an append-only record of step events, written before the step it describes proceeds.

Two stores keep it: `Journal`, a file of JSON lines fsynced as they are written (the local
state directory), and the PostgreSQL backend's table (pgstate.py). Both are `JournalBase`.

Only the state lock's holder appends, and a writer proves it before each record (`guard`):
one that lost the lock is refused. A record torn by a power cut can only be the last line;
readers skip it, and the next append starts on a fresh line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hybridctl.drivers.lockholder import now_iso

__all__ = ["Journal", "JournalBase", "JournalEvent", "JournalRecord", "journal_problems", "now_iso"]


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
        return JournalRecord(**raw)


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
        """Every complete record; a torn last line (a power cut mid-append) is left out."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        records = []
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                raw = json.loads(line)
                records.append(JournalRecord(**raw))
            except (ValueError, TypeError):
                continue  # only the unterminated last line can be torn; it never counts
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
        descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            prefix = b""
            size = os.fstat(descriptor).st_size
            if size:
                with open(self.path, "rb") as reader:
                    reader.seek(size - 1)
                    if reader.read(1) != b"\n":
                        prefix = b"\n"  # end a torn line so this record stands on a line of its own
            os.write(descriptor, prefix + record.to_json().encode() + b"\n")
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
