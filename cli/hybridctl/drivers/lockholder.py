"""Who holds a state lock, whether that process still lives, and what a dead holder left behind.

Shared by both lock backends (statelock.py's flock, pgstate.py's advisory lock). A pid alone
does not name a process: pids are reused. A holder is alive only if a process with its pid
runs on this host, in this boot, and started at the same clock tick as the one recorded.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HOLDER_ENV = "HYBRIDCTL_LOCK_TOKEN"
# ssh ControlPersist masters of an Ansible run keep their sockets in <tmp>/hctl-cp-<token prefix>-*:
# the masters daemonize and overwrite their environment, so the directory name is how a dead
# holder's masters are found (see drivers/ansible.py).
CONTROL_DIR_PREFIX = "hctl-cp-"
CONTROL_TOKEN_CHARS = 12
JsonDict = dict[str, Any]


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def process_start(pid: int) -> str:
    """'<boot id>:<start tick>' of a live process, or '' where /proc cannot tell (not Linux)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return ""
    if fields[0] in ("Z", "X"):
        return ""  # a zombie has ended; only its exit status is left to collect
    return f"{boot}:{fields[19]}"  # field 22 of stat: start time in clock ticks since boot


@dataclass(frozen=True)
class LockHolder:
    pid: int
    host: str
    started_at: str
    command: str
    token: str = ""  # in the environment of every process the holder starts; never shown
    user: str = ""
    process_start: str = ""  # process_start(pid) when it took the lock
    leftovers_stopped: int = 0  # set on a recovered holder: its processes that were still running

    def describe(self) -> str:
        who = f"{self.user}, " if self.user else ""
        return f"pid {self.pid} on host {self.host} ({who}since {self.started_at}, {self.command})"

    def to_dict(self) -> JsonDict:
        """The stored record, token included: only the lock's own files and table keep it."""
        return {"pid": self.pid, "host": self.host, "started_at": self.started_at, "command": self.command,
                "token": self.token, "user": self.user, "process_start": self.process_start}

    def public(self) -> JsonDict:
        """What status shows: everything but the token, which would let a reader pose as the holder."""
        return {k: v for k, v in self.to_dict().items() if k != "token"}

    @staticmethod
    def from_dict(raw: Any) -> LockHolder | None:
        try:
            return LockHolder(int(raw["pid"]), str(raw["host"]), str(raw["started_at"]), str(raw.get("command", "")),
                              str(raw.get("token", "")), str(raw.get("user", "")), str(raw.get("process_start", "")))
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    @staticmethod
    def for_this_process(command: str) -> LockHolder:
        return LockHolder(os.getpid(), socket.gethostname(), now_iso(), command, uuid.uuid4().hex, _user(),
                          process_start(os.getpid()))


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return str(os.getuid())


def operator_name() -> str:
    """Who runs this command, as a journal records an approval: user@host."""
    return f"{_user()}@{socket.gethostname()}"


def holder_alive(holder: LockHolder) -> bool | None:
    """True/False for a holder on this host; None when it ran elsewhere and cannot be checked here."""
    if holder.host != socket.gethostname():
        return None
    if holder.process_start:
        return process_start(holder.pid) == holder.process_start
    try:  # a record from a version that kept no start time: the pid is all there is
        os.kill(holder.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# A process caught in execve() reads an empty environ and cmdline until the kernel has laid out
# its new stack (measured here: two reads in three right after Popen returned). A dead holder's
# child in that state is not yet recognisable; it is read again, for at most this long.
_EXEC_SETTLE_S = 2.0
_PF_KTHREAD = 0x00200000  # stat's flags: kernel threads have no environment, ever


def _mid_exec(pid: int) -> bool:
    """Whether a process whose environ or cmdline read empty may still show them: not a kernel thread
    (never has them), not a zombie (has them no more)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return fields[0] not in ("Z", "X") and not int(fields[6]) & _PF_KTHREAD  # fields 3 and 9 of stat
    except (OSError, IndexError, ValueError):
        return False  # gone, or unreadable: nothing to wait for


def _kill_matching(field: str, matches: Callable[[bytes], bool]) -> int:
    """SIGKILL every process whose /proc/PID/<field> matches, a few rounds (dying workers fork);
    how many processes were stopped.

    Each process is counted and signalled once: a process SIGKILLed in one round may still be there in
    the next (on a loaded machine, or a CPU-throttled container, it has not yet run to its exit), and
    it is the same process, not a new one. A new process in a later round has a pid (or a start time)
    not seen before. A process whose field reads empty, and is no kernel thread, is mid-exec: read
    again until it can be told (see _EXEC_SETTLE_S)."""
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    killed: set[tuple[int, str]] = set()
    settle_until = time.monotonic() + _EXEC_SETTLE_S
    rescans = 3
    pids: list[int] | None = None  # None: scan all of /proc
    while True:
        found, unsettled = 0, []
        candidates = pids if pids is not None else [int(e.name) for e in proc.iterdir() if e.name.isdigit()]
        for pid in candidates:
            if pid == os.getpid():
                continue
            try:
                content = (proc / str(pid) / field).read_bytes()
                if not content:
                    if _mid_exec(pid):
                        unsettled.append(pid)
                    continue
                if matches(content):
                    identity = (pid, process_start(pid))
                    if identity in killed:
                        continue
                    os.kill(pid, signal.SIGKILL)
                    killed.add(identity)
                    found += 1
            except OSError:
                continue
        if found and rescans > 1:
            rescans -= 1
            pids = None  # what was killed may have forked meanwhile: look at everything again
        elif unsettled and time.monotonic() < settle_until:
            pids = unsettled
        else:
            break
        time.sleep(0.05)
    _wait_gone(killed)
    return len(killed)


# How long recovery waits for what it SIGKILLed to be gone: a signalled process on a loaded machine may not have
# run to its exit yet, and the resumed run must not touch a host while the dead run's processes still hold it
_GONE_WITHIN_S = 30.0


def _wait_gone(killed: set[tuple[int, str]]) -> None:
    """Until each killed process has ended (gone, or a zombie: it runs no more), for at most _GONE_WITHIN_S."""
    deadline = time.monotonic() + _GONE_WITHIN_S
    waiting = {pid for pid, start in killed if start}
    while waiting and time.monotonic() < deadline:
        waiting = {pid for pid, start in killed if pid in waiting and process_start(pid) == start}
        if waiting:
            time.sleep(0.01)


def control_dir_prefix() -> str:
    """The prefix of an Ansible run's ssh control directory: carries the lock holder's token, if any."""
    token = os.environ.get(HOLDER_ENV, "")
    return f"{CONTROL_DIR_PREFIX}{token[:CONTROL_TOKEN_CHARS]}-" if len(token) >= CONTROL_TOKEN_CHARS \
        else CONTROL_DIR_PREFIX


def control_dirs(token: str) -> list[Path]:
    if len(token) < CONTROL_TOKEN_CHARS:
        return []
    return sorted(Path(tempfile.gettempdir()).glob(f"{CONTROL_DIR_PREFIX}{token[:CONTROL_TOKEN_CHARS]}-*"))


def _containing(marker: bytes) -> Callable[[bytes], bool]:
    return lambda content: marker in content


def stop_leftover_processes(token: str) -> int:
    """SIGKILL what a dead holder started and left running, and remove its ssh control directories.

    ansible-playbook and its workers carry the token in their environment; ssh ControlPersist
    masters are found by their control directory in their command line. A resumed run must not
    race them on the same hosts.
    """
    if not token:
        return 0
    needle = f"{HOLDER_ENV}={token}".encode()
    stopped = _kill_matching("environ", lambda environ: needle in environ.split(b"\0"))
    for directory in control_dirs(token):
        stopped += _kill_matching("cmdline", _containing(str(directory).encode()))
        with contextlib.suppress(OSError):
            shutil.rmtree(directory)
    return stopped
