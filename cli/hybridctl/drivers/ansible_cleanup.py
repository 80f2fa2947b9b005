"""Ending what a playbook run leaves behind: its local processes, its remote work, its files.

- Local processes: every process of a run carries a marker in its environment (ssh
  ControlPersist masters, whose title overwrites it, carry their control socket path).
- Remote work: the product's playbooks put the marker into the environment of every task
  (play keyword ``environment: "{{ hybridctl_run_env | default({}) }}"``), so on the host every
  module process and every command it started carries it; a cancel or a task timeout ends
  them with a small reaping play (``raw``, no Python needed) over a fresh connection.
- Files: a run's private data dir is locked (flock) while the run lives; a later run removes
  any dir whose lock nobody holds, i.e. the leftovers of a run that was SIGKILLed.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

RUN_MARKER = "HYBRIDCTL_ANSIBLE_RUN"
RUN_ENV_VAR = "hybridctl_run_env"  # the extra var the playbooks put in their `environment`
PRIVATE_PREFIX = "hybridctl-ansible-"
CONTROL_PREFIX = "hctl-cp-"
_LOCK_NAME = ".in-use"
# A dir without a lock file is being created right now, or comes from a hybridctl that did not
# lock them (and may still be running): left alone for a day.
_UNLOCKED_GRACE_S = 86400.0
_MARKER_PATTERN = re.compile(r"^[0-9a-f]{32}$")


@contextlib.contextmanager
def held_dir(directory: Path) -> Iterator[None]:
    """Hold directory's lock for the body: remove_stale() leaves it alone meanwhile.

    The lock file appears under its name already locked (locked, then renamed): a lock file that
    exists unlocked reads as "its run is dead" to the sweep of a run in a parallel step, which
    would remove the directory between this one's create and flock.
    """
    pending = directory / f"{_LOCK_NAME}.{uuid.uuid4().hex}"
    descriptor = os.open(pending, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        os.rename(pending, directory / _LOCK_NAME)
        yield
    finally:
        os.close(descriptor)


def remove_stale(parent: Path, prefix: str) -> list[Path]:
    """Remove the dirs `prefix*` of parent that no live run holds; return them."""
    removed: list[Path] = []
    try:
        candidates = [p for p in parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return removed
    for directory in candidates:
        try:
            if directory.stat().st_uid != os.getuid():
                continue
            lock = directory / _LOCK_NAME
            if not lock.exists():
                if time.time() - directory.stat().st_mtime < _UNLOCKED_GRACE_S:
                    continue
            else:
                descriptor = os.open(lock, os.O_RDONLY)
                try:
                    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
                finally:
                    os.close(descriptor)
        except (BlockingIOError, FileNotFoundError):
            continue  # held by a live run, or removed by another cleaner meanwhile
        except OSError:
            continue
        shutil.rmtree(directory, ignore_errors=True)
        removed.append(directory)
    return removed


def kill_local(marker: str, control_dir: Path) -> None:
    """SIGKILL every process of this run still alive on this machine.

    Found by the marker in its environment, or, for ssh ControlPersist masters (whose
    process title overwrites the environment), by their control socket path. Only in this
    process's PID namespace: a process in another one (a container, or a test host sharing
    this kernel) is remote work, ended by reap_play().
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return  # no procfs (macOS): runner's process-group kill is all we have
    own_namespace = _pid_namespace("self")
    in_environ = f"{RUN_MARKER}={marker}".encode()
    in_cmdline = str(control_dir).encode()
    for _ in range(3):  # a dying worker may still fork an ssh
        found = False
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                mine = in_cmdline in (entry / "cmdline").read_bytes()
                mine = mine or in_environ in (entry / "environ").read_bytes().split(b"\0")
                if mine and _pid_namespace(entry.name) == own_namespace:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found = True
            except OSError:
                continue
        if not found:
            return
        time.sleep(0.05)


def _pid_namespace(pid: str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def reap_play(marker: str) -> list[dict[str, object]]:
    """A play that SIGKILLs, on each host, every process carrying the run's marker.

    POSIX sh over `raw`: it works while the host's Python is busy or hung. The reaping run
    carries no marker of this run, so it never kills itself.
    """
    if not _MARKER_PATTERN.match(marker):
        raise ValueError(f"not a run marker: {marker!r}")
    script = (
        f"m='{RUN_MARKER}={marker}'; n=0; for round in 1 2 3; do found=; "
        'for e in /proc/[0-9]*/environ; do p=${e#/proc/}; p=${p%/environ}; '
        '[ "$p" = "$$" ] && continue; '
        'if tr "\\000" "\\n" < "$e" 2>/dev/null | grep -qxF "$m"; then '
        'kill -9 "$p" 2>/dev/null && found=1 && n=$((n+1)); fi; done; '
        '[ -z "$found" ] && break; sleep 0.2; done; echo "ended $n process(es)"'
    )
    return [{
        "name": "End the remote work of an interrupted hybridctl run",
        "hosts": "all",
        "gather_facts": False,
        "become": "{{ hybridctl_become | default((ansible_user | default('root')) != 'root') | bool }}",
        "tasks": [{"name": "End the run's processes", "ansible.builtin.raw": script, "changed_when": False}],
    }]
