"""The local state lock: flock(2) on `lock`, plus `lock.holder.json` saying who holds it.

The kernel releases a flock when its holder dies, however it dies, so a lock we can take
whose holder record is still there belonged to a dead process: it is recovered, and what
that process left running (found by a token in the environment of everything it started)
is stopped.

A flock guards an inode, not a name. If `lock` is deleted or replaced while a run holds it, a
second run would lock a new file and believe itself alone. So the lock is not trusted on the
flock alone:
- the state directory itself is flocked too: with both `lock` and `lock.holder.json` deleted,
  nothing else on disk shows a live holder, but its flock on the directory still does;
- after taking the flock, the file at `lock` must still be the inode we locked;
- a holder record naming a process that still runs (same pid, same start time) means the
  lock file was tampered with: the second run refuses rather than recover a live holder;
- the holder re-checks, before each journal record and state write (`verify`), that the lock
  file is still its own and the holder record still names it; if not, it stops writing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from hybridctl.drivers.filereader import SMALL_RECORD_LIMIT, FileRefusedError, read_bounded
from hybridctl.drivers.files import atomic_write_text
from hybridctl.drivers.lockholder import HOLDER_ENV, LockHolder, holder_alive, stop_leftover_processes
from hybridctl.errors import HybridctlError, StateLockedError

__all__ = ["HOLDER_ENV", "LockHolder", "LockLostError", "StateLock", "stop_leftover_processes"]

_LOCK_POLL_S = 0.2


class LockLostError(HybridctlError):
    """This run no longer holds the state lock it took: it must not write the state or the journal."""


def _read_holder(path: Path) -> LockHolder | None:
    try:
        return LockHolder.from_dict(json.loads(read_bounded(path, SMALL_RECORD_LIMIT, what="the lock holder record")))
    except (OSError, ValueError, RecursionError, FileRefusedError):
        return None


def _same_file(descriptor: int, path: Path) -> bool:
    try:
        on_disk = path.stat()
    except FileNotFoundError:
        return False
    mine = os.fstat(descriptor)
    return (mine.st_dev, mine.st_ino) == (on_disk.st_dev, on_disk.st_ino)


def _lock_directory(root: Path) -> int | None:
    """A flock on the state directory itself, held beside the one on `lock`: its descriptor.

    `lock` and `lock.holder.json` can both be deleted while a run holds the lock, and then nothing
    on disk shows that run to a second one; the directory cannot be deleted or replaced without
    taking the state with it. BlockingIOError when another run holds it. None where the file system
    cannot flock a directory (NFS emulates flock with fcntl locks, which need a writable
    descriptor): there the lock file alone guards the state, as before."""
    try:
        descriptor = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        raise
    except OSError:
        os.close(descriptor)
        return None
    return descriptor


def set_token_env(token: str | None) -> str | None:
    """Put the holder's token in our environment (inherited by all we start); returns the old value."""
    saved = os.environ.get(HOLDER_ENV)
    if token is None:
        os.environ.pop(HOLDER_ENV, None)
    else:
        os.environ[HOLDER_ENV] = token
    return saved


class StateLock:
    """One exclusive lock per state directory: flock on `lock`, plus a record of who holds it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "lock"
        self.holder_path = root / "lock.holder.json"
        self._fd: int | None = None
        self._directory: int | None = None  # the state directory, flocked too (see _lock_directory)
        self._me: LockHolder | None = None
        self._saved_env: str | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> LockHolder | None:
        return _read_holder(self.holder_path)

    def holder_status(self) -> tuple[LockHolder | None, bool | None]:
        """The recorded holder, and whether it is alive (None: on another host, cannot tell)."""
        holder = self.holder()
        if holder is None:
            return None, None
        if self._me is not None and holder.token == self._me.token:
            return holder, True
        return holder, holder_alive(holder)

    def acquire(self, *, command: str, timeout_s: float = 0.0,
                on_wait: Callable[[LockHolder | None], None] | None = None) -> LockHolder | None:
        """Take the lock, waiting up to timeout_s. Returns the dead holder it recovered from, if any."""
        if self._fd is not None:
            raise RuntimeError("the state lock is already held by this object")
        self.root.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        waited = False
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            orphaned = False  # the lock file was free, but a live run holds the directory: its file was removed
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                if not _same_file(descriptor, self.path):
                    os.close(descriptor)  # `lock` was removed or replaced between open and flock: lock the new one
                    continue
                orphaned = True
                directory = _lock_directory(self.root)
            except BlockingIOError:
                os.close(descriptor)
                holder = self.holder()
                if time.monotonic() >= deadline:
                    raise self._locked_error(holder, orphaned) from None
                if not waited and on_wait is not None:
                    on_wait(holder)
                waited = True
                time.sleep(_LOCK_POLL_S)
                continue
            break
        try:
            stale = self._recover(self.holder())
            me = LockHolder.for_this_process(command)
            atomic_write_text(self.holder_path, json.dumps(me.to_dict(), sort_keys=True) + "\n", mode=0o600)
        except BaseException:
            os.close(descriptor)
            if directory is not None:
                os.close(directory)
            raise
        self._fd, self._me, self._directory = descriptor, me, directory
        self._saved_env = set_token_env(me.token)  # inherited by every process this run starts
        return stale

    def _locked_error(self, holder: LockHolder | None, orphaned: bool) -> StateLockedError:
        if orphaned:  # only a live process holds a flock: the holder runs, whatever its record says
            who = holder.describe() if holder else "another run (its holder record was removed too)"
            return StateLockedError(
                f"the state in {self.root} is held by {who}, which is still running, but its lock file {self.path} "
                "was removed or replaced",
                hint="do not delete the lock files of a running hybridctl; wait for that run to finish (or pass "
                     "e.g. --lock-timeout 10m to wait for it) and run this command again")
        who = holder.describe() if holder else "another process (no holder record yet)"
        return StateLockedError(f"the state in {self.root} is locked by {who}",
                                hint="wait for that run to finish, or pass e.g. --lock-timeout 10m to wait for it")

    def _recover(self, stale: LockHolder | None) -> LockHolder | None:
        """We have the flock: whoever left a holder record should be gone. Check, then clean up after it."""
        if stale is None:
            return None
        if holder_alive(stale):
            raise StateLockedError(
                f"the state in {self.root} is held by {stale.describe()}, which is still running, but its lock "
                f"file {self.path} was removed or replaced",
                hint=f"do not delete the lock file of a running hybridctl; wait for that run to finish and run this "
                     f"command again (if pid {stale.pid} is not hybridctl, remove {self.holder_path})")
        if holder_alive(stale) is False:
            stale = replace(stale, leftovers_stopped=stop_leftover_processes(stale.token))
        return stale

    def verify(self) -> None:
        """Raise LockLostError unless this object still holds the lock: called before every write."""
        if self._fd is None or self._me is None:
            raise LockLostError(f"the state in {self.root} is written without holding its lock",
                                hint="this is a bug in hybridctl: please report it")
        if _same_file(self._fd, self.path):
            holder = self.holder()
            if holder is not None and holder.token == self._me.token:
                return
            raise LockLostError(f"the lock record {self.holder_path} no longer names this run "
                                f"({holder.describe() if holder else 'it was removed'})",
                                hint="another hybridctl may be writing the same state: check `hybridctl status`, "
                                     "then resume with the same command")
        # The lock file was removed (or replaced) under us. If nobody holds the file now at `lock`,
        # take it back: we are still the only writer. Otherwise another run holds it: stop.
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise LockLostError(f"the lock file {self.path} was replaced while this run held it, and another "
                                "process holds the new one: this run stops writing",
                                hint="check `hybridctl status`, then resume with the same command") from None
        if not _same_file(descriptor, self.path):
            os.close(descriptor)
            raise LockLostError(f"the lock file {self.path} keeps changing under this run")
        os.close(self._fd)
        self._fd = descriptor
        atomic_write_text(self.holder_path, json.dumps(self._me.to_dict(), sort_keys=True) + "\n", mode=0o600)

    def release(self) -> None:
        if self._fd is None:
            return
        set_token_env(self._saved_env)
        # Record first, then the flock: a crash in between leaves no record, which is harmless.
        if self._me is not None and (self.holder() or self._me).token == self._me.token:
            with contextlib.suppress(FileNotFoundError):
                self.holder_path.unlink()
        # the directory before the file: a run that then takes the free file finds the directory free too
        if self._directory is not None:
            os.close(self._directory)  # closing its only descriptor drops its flock
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd, self._me, self._directory = None, None, None
