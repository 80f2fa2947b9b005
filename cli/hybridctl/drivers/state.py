"""The state store: the applied plan, a serial, run history, an append-only journal, one lock.

Two backends keep it behind one interface (`StateBackend`): a local directory (the default,
below) and a PostgreSQL database shared by a team (`--state postgresql://…`, pgstate.py).
The executor, failover and status code only see `StateStore`.

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
import functools
import json
import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import orjson

from hybridctl.core.jsontext import dumps_indented_utf8
from hybridctl.drivers.filereader import DOCUMENT_LIMIT, read_bounded, read_utf8
from hybridctl.drivers.files import atomic_write_bytes, atomic_write_text
from hybridctl.drivers.journal import (
    Journal,
    JournalBase,
    JournalEvent,
    JournalRecord,
    journal_problems,
    now_iso,
)
from hybridctl.drivers.statelock import (
    HOLDER_ENV,
    LockHolder,
    LockLostError,
    StateLock,
    stop_leftover_processes,
)
from hybridctl.drivers.statemodel import (
    DOCUMENT_DIRS,
    DOCUMENT_NAME,
    STATE_FORMAT_VERSION,
    UNREADABLE_STATE_HINT,
    Deployed,
    PendingRun,
    RunRecord,
    State,
    StateFileError,
    check_document_name,
    stored_document,
)
from hybridctl.errors import Location

__all__ = ["HOLDER_ENV", "Deployed", "DirectoryBackend", "Journal", "JournalEvent", "JournalRecord", "LockHolder",
           "LockLostError", "PendingRun", "RunRecord", "State", "StateBackend", "StateFileError", "StateLock",
           "StateStore", "current_serial", "is_database_url", "journal_problems", "new_run_id", "now_iso",
           "open_state", "resolve_state_dir", "stop_leftover_processes"]

if TYPE_CHECKING:
    from hybridctl.core.plan.model import Plan

STATE_ENV = "HYBRIDCTL_STATE"
DEFAULT_STATE_DIR = Path(".hybridctl") / "state"
JsonDict = dict[str, Any]




# --- the store -----------------------------------------------------------------------------------


class StoreLock(Protocol):
    """The state lock of one backend: exclusive, released by the system when its holder dies."""

    @property
    def held(self) -> bool: ...

    def holder(self) -> LockHolder | None: ...

    def holder_status(self) -> tuple[LockHolder | None, bool | None]: ...

    def acquire(self, *, command: str, timeout_s: float = 0.0,
                on_wait: Callable[[LockHolder | None], None] | None = None) -> LockHolder | None: ...

    def verify(self) -> None: ...

    def release(self) -> None: ...


class StateBackend(Protocol):
    """Where the state document, the journal and the lock live: a directory, or a database."""

    @property
    def location(self) -> str:
        """For messages: a path, or a database URL without its password."""
        ...

    @property
    def option(self) -> str:
        """What --state takes to name this state again (never a password)."""
        ...

    @property
    def journal(self) -> JournalBase: ...

    @property
    def lock(self) -> StoreLock: ...

    def exists(self) -> bool: ...

    def load(self) -> tuple[JsonDict | None, int]:
        """The raw state document (None: nothing stored yet) and its revision."""
        ...

    def save(self, document: JsonDict, serial: int, expected_revision: int) -> int:
        """Store the document if the stored revision is still expected_revision; the new revision."""
        ...

    def remove_torn_writes(self) -> None: ...

    def read_document(self, name: str) -> str | None:
        """A named document kept with the state (e.g. `runbooks/<id>.json`), or None."""
        ...

    def write_document(self, name: str, text: str) -> None: ...

    def remove_document(self, name: str) -> None: ...

    def document_names(self) -> list[str]: ...




def _loads(text: str) -> Any:
    """json.loads(text): orjson reads what it can (a fleet's 10 MB state: 0.05-0.07 s against 0.07-0.085 s) and gives the
    same values; what it refuses (NaN, ints past 64 bits, lone surrogates, bad JSON) json reads, or refuses
    with its own message."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class DirectoryBackend:
    """The local state directory: state.json replaced atomically, journal.jsonl, flock on `lock`.

    Writes are serialized by the flock (re-checked before each write), so no revision check is
    needed here; the revision is still counted, so a migrated state keeps it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.location = self.option = str(root)
        self.state_path = root / "state.json"
        self.lock = StateLock(root)
        self.journal = Journal(root / "journal.jsonl", guard=self.lock.verify)

    def exists(self) -> bool:
        # anything at state.json is a state (load() refuses one that is not a regular file): a FIFO or a
        # directory there is no "nothing applied yet"
        return os.path.lexists(self.state_path)

    def load(self) -> tuple[JsonDict | None, int]:
        try:
            data = read_bounded(self.state_path, DOCUMENT_LIMIT, what="the state file")
        except FileNotFoundError:
            return None, 0
        try:
            raw = _loads(data.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
            raise StateFileError(f"not a hybridctl state file ({type(exc).__name__}: {exc})",
                                 location=Location(str(self.state_path)), hint=UNREADABLE_STATE_HINT) from None
        document = stored_document(raw, str(self.state_path))
        revision = document.get("revision", 0)
        if not isinstance(revision, int) or isinstance(revision, bool) or revision < 0:
            raise StateFileError(f"not a hybridctl state file: revision {revision!r} is not a whole number",
                                 location=Location(str(self.state_path)), hint=UNREADABLE_STATE_HINT)
        return document, revision

    def save(self, document: JsonDict, serial: int, expected_revision: int) -> int:
        del serial
        revision = expected_revision + 1
        # json.dumps(indent=2, sort_keys=True, ensure_ascii=False)'s bytes: a fleet's state holds its applied plan,
        # and json's pure-Python indented encoder took a second over it at each write
        text = dumps_indented_utf8({**document, "revision": revision}) + b"\n"
        atomic_write_bytes(self.state_path, text, mode=0o600)
        return revision

    def remove_torn_writes(self) -> None:
        """Temp files left by a process killed between write and rename (files.atomic_write_bytes)."""
        for leftover in self.root.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                leftover.unlink()

    def read_document(self, name: str, *, follow_symlinks: bool = True) -> str | None:
        try:
            return read_utf8(self.root / check_document_name(name), DOCUMENT_LIMIT, what="a state document",
                             follow_symlinks=follow_symlinks)
        except FileNotFoundError:
            return None

    def write_document(self, name: str, text: str) -> None:
        atomic_write_text(self.root / check_document_name(name), text, mode=0o600)

    def remove_document(self, name: str) -> None:
        (self.root / check_document_name(name)).unlink(missing_ok=True)

    def document_names(self) -> list[str]:
        """The documents' names: regular files under DOCUMENT_DIRS, found without following a symbolic link
        (a linked directory is never entered, a linked file never listed: neither is the state's)."""
        names = []
        for top in DOCUMENT_DIRS:
            if not (self.root / top).is_dir() or (self.root / top).is_symlink():
                continue
            for directory, dirs, files in os.walk(self.root / top):  # never into a linked directory
                dirs[:] = [d for d in dirs if DOCUMENT_NAME.fullmatch(d)]
                for file in files:
                    name = (Path(directory) / file).relative_to(self.root).as_posix()
                    if DOCUMENT_NAME.fullmatch(name) and (Path(directory) / file).is_file() \
                            and not (Path(directory) / file).is_symlink():
                        names.append(name)
        return sorted(names)


class StateStore:
    """The state as the executor, failover and status see it, whatever backend keeps it.

    `root` is always a local directory: the working files that stay on this machine (known_hosts,
    the Pulumi file backend, Ansible's inventory, runbook files). With the local backend it is the
    state directory itself.
    """

    def __init__(self, root: Path, backend: StateBackend | None = None) -> None:
        self.root = root
        self.backend: StateBackend = backend if backend is not None else DirectoryBackend(root)
        self.location = self.backend.location
        self.option = self.backend.option
        self.journal = self.backend.journal
        self.lock = self.backend.lock

    @property
    def state_path(self) -> Path:
        return self.root / "state.json"

    @property
    def known_hosts_path(self) -> Path:
        return self.root / "known_hosts"

    @property
    def ansible_dir(self) -> Path:
        return self.root / "ansible"

    def exists(self) -> bool:
        return self.backend.exists()

    def read(self) -> State:
        raw, revision = self.backend.load()
        if raw is None:
            return State()
        # a state directory's file, by its path (a field's message names the file and the field)
        where = str(self.state_path) if isinstance(self.backend, DirectoryBackend) else self.location
        try:
            if raw.get("format_version") != STATE_FORMAT_VERSION:
                raise StateFileError(f"{where}: state format {raw.get('format_version')!r} is not "
                                     f"supported (this hybridctl reads {STATE_FORMAT_VERSION})",
                                     hint="use the hybridctl version that wrote this state")
            return replace(State.from_dict(raw), revision=revision)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            noun = "state file" if isinstance(self.backend, DirectoryBackend) else "state document"
            # State.from_dict's ValueError names the field and what is wrong with it; others, their type too
            reason = f": {exc}" if type(exc) is ValueError else f" ({type(exc).__name__}: {exc})"
            raise StateFileError(f"not a hybridctl {noun}{reason}",
                                 location=Location(where), hint=UNREADABLE_STATE_HINT) from None

    def write(self, state: State) -> State:
        if not self.lock.held:
            raise RuntimeError("state written without holding the state lock")
        self.lock.verify()
        if not state.lineage:
            state = replace(state, lineage=uuid.uuid4().hex)
        revision = self.backend.save(state.to_dict(), state.serial, state.revision)
        return replace(state, revision=revision)

    def update(self, change: Callable[[State], State]) -> State:
        return self.write(change(self.read()))

    # Documents that go with the state and must be shared as it is (runbooks): files under the
    # state directory, or rows next to the state in the database.

    def read_document(self, name: str) -> str | None:
        return self.backend.read_document(name)

    def write_document(self, name: str, text: str) -> None:
        self.backend.write_document(name, text)

    def remove_document(self, name: str) -> None:
        self.backend.remove_document(name)

    def documents(self) -> dict[str, str]:
        """Every document, by name (for `state migrate`): in a state directory, never read through a link."""
        backend = self.backend
        read: Callable[[str], str | None] = backend.read_document
        if isinstance(backend, DirectoryBackend):
            read = functools.partial(backend.read_document, follow_symlinks=False)
        names = backend.document_names()
        for name in names:
            try:
                check_document_name(name)
            except ValueError:
                # a database row's name is whatever was inserted (`../x.json`): refused before anything is read
                raise StateFileError(f"{self.location}: the state holds a document named {name!r:.200}, which is not "
                                     "a name hybridctl writes (runbooks/<name>.json): nothing was read or copied",
                                     hint="remove that document from the state: hybridctl never writes it") from None
        found = {name: read(name) for name in names}
        return {name: text for name, text in found.items() if text is not None}

    @contextlib.contextmanager
    def locked(self, *, command: str, timeout_s: float = 0.0,
               on_recovered: Callable[[LockHolder], None] | None = None,
               on_wait: Callable[[LockHolder | None], None] | None = None) -> Iterator[StateStore]:
        stale = self.lock.acquire(command=command, timeout_s=timeout_s, on_wait=on_wait)
        try:
            self.backend.remove_torn_writes()
            if stale is not None and on_recovered is not None:
                on_recovered(stale)
            yield self
        finally:
            self.lock.release()


def is_database_url(text: str) -> bool:
    """--state names a database (or is a mistyped URL, which StateUrl.parse refuses), not a directory:
    anything with a URL scheme (`word:/`, any case, spaces around it or not) is parsed as a URL."""
    from hybridctl.drivers.pgurl import looks_like_url

    return looks_like_url(text)


def _chosen(option: str | Path | None, env: Mapping[str, str]) -> str:
    if option is not None and str(option):
        return str(option)
    return env.get(STATE_ENV) or str(DEFAULT_STATE_DIR)


def resolve_state_dir(option: str | Path | None, env: Mapping[str, str] | None = None) -> Path:
    """The local directory of the state's working files: --state, else $HYBRIDCTL_STATE, else
    ./.hybridctl/state (relative to the working directory); for a database URL, its work directory."""
    env = os.environ if env is None else env
    chosen = _chosen(option, env)
    if is_database_url(chosen):
        from hybridctl.drivers.pgurl import StateUrl

        return StateUrl.parse(chosen).work_dir(env)
    return Path(chosen).resolve()


def open_state(option: str | Path | None, env: Mapping[str, str] | None = None,
               notify: Callable[[str], None] | None = None) -> StateStore:
    """The state store that --state / $HYBRIDCTL_STATE names: a directory, or postgresql://…"""
    env = os.environ if env is None else env
    chosen = _chosen(option, env)
    if is_database_url(chosen):
        from hybridctl.drivers.pgstate import DatabaseBackend
        from hybridctl.drivers.pgurl import StateUrl

        url = StateUrl.parse(chosen)
        return StateStore(url.work_dir(env), DatabaseBackend(url, notify=notify))
    root = Path(chosen).resolve()
    if root.exists() and not root.is_dir():
        raise StateFileError(f"{root} is not a directory: --state names a state directory or a postgresql:// URL")
    return StateStore(root)


def current_serial(state_dir: str | Path | None, env: Mapping[str, str] | None = None) -> int:
    """The serial a new plan file should record as base_serial (`plan --out` calls this)."""
    return open_state(state_dir, env).read().serial


def applied_plan(state_dir: str | Path | None, env: Mapping[str, str] | None = None) -> Plan | None:
    """The plan the state says is applied, if any (`plan` diffs cloud changes against it)."""
    from hybridctl.core.plan.serialize import plan_from_dict

    store = open_state(state_dir, env)
    raw = store.read().applied_plan
    where = str(store.state_path) if isinstance(store.backend, DirectoryBackend) else store.location
    return plan_from_dict(dict(raw), f"{where}: applied_plan") if raw is not None else None


def new_run_id() -> str:
    return datetime.now(UTC).strftime("r%Y%m%dT%H%M%S-") + uuid.uuid4().hex[:6]

