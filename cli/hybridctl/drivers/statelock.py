"""The state lock: flock(2) on `lock`, plus `lock.holder.json` saying who holds it.

The kernel releases a flock when its holder dies, however it dies, so a lock we can take
whose holder record is still there belonged to a dead process: it is recovered, and what
that process left running (found by a token in the environment of everything it started)
is stopped.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hybridctl.drivers.files import atomic_write_text
from hybridctl.drivers.journal import now_iso
from hybridctl.errors import StateLockedError

HOLDER_ENV = "HYBRIDCTL_LOCK_TOKEN"
_LOCK_POLL_S = 0.2
JsonDict = dict[str, Any]


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started_at: str
    command: str
    token: str = ""  # in the environment of every process the holder starts (see leftover_processes)
    leftovers_stopped: int = 0  # set on a recovered holder: its processes that were still running

    def describe(self) -> str:
        return f"pid {self.pid} on host {self.host}, since {self.started_at} ({self.command})"

    def to_dict(self) -> JsonDict:
        return {"pid": self.pid, "host": self.host, "started_at": self.started_at, "command": self.command,
                "token": self.token}


def _read_holder(path: Path) -> LockHolder | None:
    try:
        raw = json.loads(path.read_text())
        return LockHolder(int(raw["pid"]), str(raw["host"]), str(raw["started_at"]), str(raw.get("command", "")),
                          str(raw.get("token", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def stop_leftover_processes(token: str) -> int:
    """SIGKILL what a dead holder started and left running (ansible-playbook, ssh), found by the
    token in their environment; a resumed run must not race them on the same hosts."""
    proc = Path("/proc")
    if not token or not proc.is_dir():
        return 0
    needle = f"{HOLDER_ENV}={token}".encode()
    stopped = 0
    for _ in range(3):  # a dying worker may still fork
        found = 0
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if needle in (entry / "environ").read_bytes().split(b"\0"):
                    os.kill(int(entry.name), signal.SIGKILL)
                    found += 1
            except OSError:
                continue
        stopped += found
        if not found:
            break
        time.sleep(0.05)
    return stopped


class StateLock:
    """One exclusive lock per state directory: flock on `lock`, plus a record of who holds it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / "lock"
        self.holder_path = root / "lock.holder.json"
        self._fd: int | None = None
        self._saved_env: str | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def holder(self) -> LockHolder | None:
        return _read_holder(self.holder_path)

    def acquire(self, *, command: str, timeout_s: float = 0.0,
                on_wait: Callable[[LockHolder | None], None] | None = None) -> LockHolder | None:
        """Take the lock, waiting up to timeout_s. Returns the dead holder it recovered from, if any."""
        if self._fd is not None:
            raise RuntimeError("the state lock is already held by this object")
        self.root.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        deadline = time.monotonic() + max(timeout_s, 0.0)
        waited = False
        while True:
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = self.holder()
                if time.monotonic() >= deadline:
                    os.close(descriptor)
                    who = holder.describe() if holder else "another process (no holder record yet)"
                    raise StateLockedError(
                        f"the state in {self.root} is locked by {who}",
                        hint="wait for that run to finish, or pass e.g. --lock-timeout 10m to wait for it",
                    ) from None
                if not waited and on_wait is not None:
                    on_wait(holder)
                waited = True
                time.sleep(_LOCK_POLL_S)
        # The flock is ours, so whoever left a holder record is gone: flock dies with its process.
        stale = self.holder()
        if stale is not None and stale.host == socket.gethostname():
            stale = replace(stale, leftovers_stopped=stop_leftover_processes(stale.token))
        me = LockHolder(os.getpid(), socket.gethostname(), now_iso(), command, uuid.uuid4().hex)
        try:
            atomic_write_text(self.holder_path, json.dumps(me.to_dict(), sort_keys=True) + "\n", mode=0o600)
        except BaseException:
            os.close(descriptor)
            raise
        self._fd = descriptor
        self._saved_env = os.environ.get(HOLDER_ENV)
        os.environ[HOLDER_ENV] = me.token  # inherited by every process this run starts
        return stale

    def release(self) -> None:
        if self._fd is None:
            return
        if self._saved_env is None:
            os.environ.pop(HOLDER_ENV, None)
        else:
            os.environ[HOLDER_ENV] = self._saved_env
        # Record first, then the flock: a crash in between leaves no record, which is harmless.
        with contextlib.suppress(FileNotFoundError):
            self.holder_path.unlink()
        fcntl.flock(self._fd, fcntl.LOCK_UN)
        os.close(self._fd)
        self._fd = None
