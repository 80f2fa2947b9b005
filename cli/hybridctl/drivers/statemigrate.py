"""`state migrate`: copy a state, its journal and its documents (runbooks) from one backend to
another, verified by digests.

Both states are locked for the whole copy, so no run changes either meanwhile. The target
must be empty: a migration never merges two histories. After the copy, the target is read
back and its digest (of the state document, of every journal record in order, and of every
document) must equal
the source's; the local working files (known_hosts, the Pulumi file backend, runbooks) are
copied to the target's working directory when it is another one.

Only regular files and directories are copied, never through a symbolic link, each read bounded: a
link, a FIFO, a socket or a device anywhere in what would be copied (the runbooks of a state directory,
the working files) is refused, with its path, before anything is copied.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from hybridctl.drivers.filereader import DOCUMENT_LIMIT, FileRefusedError, describe_mode, read_bounded
from hybridctl.drivers.journal import JournalRecord
from hybridctl.drivers.state import DirectoryBackend, State, StateStore
from hybridctl.drivers.statemodel import DOCUMENT_DIRS
from hybridctl.errors import HybridctlError, Location, RefusedError

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
    with source.locked(command="state migrate (source)"):
        # everything that will be copied is checked before anything is: only regular files and directories
        if isinstance(source.backend, DirectoryBackend):
            for top in DOCUMENT_DIRS:
                _walk(source.root / top)
        working = _working_files(source.root, target.root)
        with target.locked(command="state migrate (target)"):
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
            copied = _copy_working_files(source.root, target.root, working)
    return Migration(before, after, state.serial, len(records), len(documents), copied)


@dataclass(frozen=True)
class _Entry:
    path: Path  # in the source
    relative: Path
    info: os.stat_result  # lstat: a regular file or a real directory


def _refuse(path: Path, info: os.stat_result) -> FileRefusedError:
    what = describe_mode(info.st_mode)
    if stat.S_ISLNK(info.st_mode):
        with contextlib.suppress(OSError):
            what = f"a symbolic link to {os.readlink(path)}"
    return FileRefusedError(f"{path}: {what}; state migrate copies only regular files and directories, "
                            "and never follows a symbolic link", location=Location(str(path)),
                            hint=f"replace {path} with the regular file it stands for, or remove it, and migrate "
                                 "again: nothing was copied")


def _walk(top: Path) -> list[_Entry]:
    """`top` and everything below it, links never followed, nothing opened: a FileRefusedError for the first
    entry that is neither a regular file nor a real directory. Nothing there: nothing."""
    try:
        info = top.lstat()
    except FileNotFoundError:
        return []
    if not stat.S_ISDIR(info.st_mode) and not stat.S_ISREG(info.st_mode):
        raise _refuse(top, info)
    entries = [_Entry(top, Path(top.name), info)]
    pending = [entries[0]] if stat.S_ISDIR(info.st_mode) else []
    while pending:
        directory = pending.pop()
        for path in sorted(directory.path.iterdir()):
            info = path.lstat()
            entry = _Entry(path, directory.relative / path.name, info)
            if stat.S_ISDIR(info.st_mode):
                pending.append(entry)
            elif not stat.S_ISREG(info.st_mode):
                raise _refuse(path, info)
            entries.append(entry)
    return entries


def _working_files(source: Path, target: Path) -> list[_Entry]:
    """The working files to copy (what is not the state itself): checked, none copied yet."""
    if source.resolve() == target.resolve() or not source.is_dir():
        return []
    return [entry for path in sorted(source.iterdir())
            if path.name not in _STATE_FILES and not path.name.startswith(".") for entry in _walk(path)]


def _copy_working_files(source: Path, target: Path, entries: Sequence[_Entry]) -> tuple[str, ...]:
    """Copy the checked entries whose top-level name the target does not hold yet: each file read once,
    bounded, never through a link, and created anew (never written through what is there)."""
    skipped = {e.relative.parts[0] for e in entries if os.path.lexists(target / e.relative.parts[0])}
    chosen = [e for e in entries if e.relative.parts[0] not in skipped]
    directories = []
    for entry in chosen:
        destination = target / entry.relative
        if stat.S_ISDIR(entry.info.st_mode):
            destination.mkdir(parents=True, mode=0o700)
            directories.append((destination, entry.info))
            continue
        data = read_bounded(entry.path, DOCUMENT_LIMIT, what="a working file of the state", follow_symlinks=False)
        destination.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(destination, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                             stat.S_IMODE(entry.info.st_mode))
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
        os.chmod(destination, stat.S_IMODE(entry.info.st_mode))  # as the source's, whatever the umask
        os.utime(destination, ns=(entry.info.st_atime_ns, entry.info.st_mtime_ns))
    for destination, info in reversed(directories):  # contents first: a read-only directory is filled already
        os.chmod(destination, stat.S_IMODE(info.st_mode))
    return tuple(dict.fromkeys(e.relative.parts[0] for e in chosen))
