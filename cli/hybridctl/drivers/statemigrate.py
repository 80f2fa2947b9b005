"""`state migrate`: copy a state, its journal and its documents (runbooks) from one backend to
another, verified by digests.

Both states are locked for the whole copy, so no run changes either meanwhile. The target
must be empty: a migration never merges two histories. After the copy, the target is read
back and its digest (of the state document, of every journal record in order, and of every
document) must equal
the source's; the local working files (known_hosts, the Pulumi file backend, runbooks) are
copied to the target's working directory when it is another one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hybridctl.drivers.journal import JournalRecord
from hybridctl.drivers.state import State, StateStore
from hybridctl.drivers.statemodel import DOCUMENT_DIRS
from hybridctl.errors import HybridctlError, RefusedError

# What is the state itself (copied through the backends), not a working file.
_STATE_FILES = frozenset({"state.json", "journal.jsonl", "lock", "lock.holder.json", *DOCUMENT_DIRS})


@dataclass(frozen=True)
class Migration:
    source_digest: str
    target_digest: str
    serial: int
    journal_records: int
    documents: int
    working_files: tuple[str, ...]  # top-level names copied to the target's working directory


def state_digest(state: State, records: Sequence[JournalRecord], documents: Mapping[str, str]) -> str:
    """One digest of what a state holds: its document, its journal in order, and its documents."""
    digest = hashlib.sha256()
    digest.update(json.dumps(state.to_dict(), sort_keys=True, separators=(",", ":")).encode())
    for record in records:
        digest.update(b"\n" + record.to_json().encode())
    for name, text in sorted(documents.items()):
        digest.update(b"\0" + name.encode() + b"\0" + text.encode())
    return "sha256:" + digest.hexdigest()


def migrate(source: StateStore, target: StateStore) -> Migration:
    if source.location == target.location:
        raise RefusedError(f"--from and --to name the same state ({source.location})")
    if not source.exists():
        raise RefusedError(f"there is no state to migrate in {source.location}",
                           hint="--from names the state that `apply` used (--state)")
    with source.locked(command="state migrate (source)"), target.locked(command="state migrate (target)"):
        if target.exists() or target.journal.records() or target.documents():
            raise RefusedError(f"the target {target.location} already holds a state",
                               hint="migrate into an empty directory or a new environment (…?environment=NAME)")
        state = source.read()
        records = source.journal.records()
        documents = source.documents()
        before = state_digest(state, records, documents)
        target.journal.import_records(records)
        for name, text in sorted(documents.items()):
            target.write_document(name, text)
        target.write(replace(state, revision=0))
        after = state_digest(target.read(), target.journal.records(), target.documents())
        if after != before:
            raise HybridctlError(f"the copy in {target.location} differs from {source.location} "
                                 f"({after} against {before}): the source is unchanged",
                                 hint="remove the partial target, and report this as a bug")
    copied = _copy_working_files(source.root, target.root)
    return Migration(before, after, state.serial, len(records), len(documents), copied)


def _copy_working_files(source: Path, target: Path) -> tuple[str, ...]:
    if source.resolve() == target.resolve() or not source.is_dir():
        return ()
    copied = []
    for entry in sorted(source.iterdir()):
        if entry.name in _STATE_FILES or entry.name.startswith(".") or (target / entry.name).exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, target / entry.name, symlinks=True)
        elif entry.is_file() and not entry.is_symlink():
            shutil.copy2(entry, target / entry.name)
        else:
            continue
        copied.append(entry.name)
    return tuple(copied)
