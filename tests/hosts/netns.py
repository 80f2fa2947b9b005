"""Network namespaces, processes and mounts of the test hosts, and their cleanup.

Every namespace the lab creates is named ``hctl-<pid>-<role>``, where pid is the process
that owns the lab. A later run finds the leftovers of a crashed one by that pid being dead.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import psutil

NETNS_PREFIX = "hctl-"
_NETNS_RE = re.compile(r"^hctl-(\d+)-")
_CLONE_NEWNET = 0x40000000

_libc = ctypes.CDLL(None, use_errno=True)


def run(
    argv: Sequence[str], *, check: bool = True, timeout_s: float = 30
) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout_s, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def netns_path(name: str) -> Path:
    return Path("/run/netns") / name


def add_netns(name: str) -> None:
    run(["ip", "netns", "add", name])
    run(["ip", "-n", name, "link", "set", "lo", "up"])


def _setns(path: Path | str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, _CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns({path}): {os.strerror(err)}")
    finally:
        os.close(fd)


@contextlib.contextmanager
def inside_netns(name: str) -> Iterator[None]:
    """Move the calling thread into a network namespace, and back on exit.

    Python 3.11 has no os.setns. setns(2) changes only the calling thread: subprocesses it
    starts, and threads it creates afterwards, inherit the namespace; threads that already
    existed do not.
    """
    original = os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    try:
        _setns(netns_path(name))
        try:
            yield
        finally:
            if _libc.setns(original, _CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"could not return to the original network namespace: {os.strerror(err)}")
    finally:
        os.close(original)


def netns_pids(name: str) -> list[int]:
    """Processes whose network namespace is this one (as `ip netns pids`, without a process of its own)."""
    try:
        target = os.stat(netns_path(name))
    except FileNotFoundError:
        return []
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                ns = os.stat(f"/proc/{entry.name}/ns/net")
            except OSError:  # gone, or a zombie
                continue
            if (ns.st_dev, ns.st_ino) == (target.st_dev, target.st_ino):
                pids.append(int(entry.name))
    return pids


def kill_netns_processes(name: str, *, wait_s: float = 5.0) -> None:
    """SIGKILL every process in the namespace, repeating while new ones appear (forks in flight)."""
    deadline = time.monotonic() + wait_s
    while True:
        # The caller itself may sit in the namespace (HostLab.controller()): spare it.
        pids = [pid for pid in netns_pids(name) if pid != os.getpid()]
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        _, alive = psutil.wait_procs(_existing(pids), timeout=0.5)
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes in {name} survive SIGKILL: {[p.pid for p in alive]}")


def _existing(pids: list[int]) -> list[psutil.Process]:
    found = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            found.append(psutil.Process(pid))
    return found


def delete_netns(name: str) -> None:
    """Kill its processes and delete it: its veth ends and bridge go with it."""
    if not netns_path(name).exists():
        return
    kill_netns_processes(name)
    run(["ip", "netns", "delete", name], check=False)


def unmount_tree(path: Path) -> None:
    """Unmount every mount at or below path, deepest first; lazily if something still holds it."""
    prefix = str(path)
    mounts = [m for m in mount_points() if m == prefix or m.startswith(prefix + "/")]
    for mount in sorted(mounts, key=len, reverse=True):
        if run(["umount", mount], check=False).returncode != 0:
            run(["umount", "-l", mount], check=False)


def mount_points() -> list[str]:
    points = []
    with open("/proc/self/mountinfo") as info:
        for line in info:
            # Field 5 is the mount point, with spaces and the like octal-escaped.
            points.append(line.split()[4].encode().decode("unicode_escape"))
    return points


def lab_owner_alive(pid: int) -> bool:
    return bool(psutil.pid_exists(pid))


def clean_stale(state_root: Path) -> list[str]:
    """Remove namespaces and mounts left by a lab whose owning process is dead. Returns what went."""
    removed: list[str] = []
    netns_dir = Path("/run/netns")
    if netns_dir.is_dir():
        for entry in sorted(netns_dir.iterdir()):
            match = _NETNS_RE.match(entry.name)
            if match and not lab_owner_alive(int(match.group(1))):
                delete_netns(entry.name)
                removed.append(f"netns {entry.name}")
    if state_root.is_dir():
        for run_dir in sorted(state_root.iterdir()):
            owner = run_dir.name.split("-", 1)[0]
            if owner.isdigit() and not lab_owner_alive(int(owner)):
                unmount_tree(run_dir)
                subprocess.run(["rm", "-rf", "--one-file-system", str(run_dir)], check=False)
                removed.append(f"dir {run_dir}")
    return removed
