"""CPU time of a bench run, split into the controller side and the test hosts, by cgroup.

getrusage() misses what matters most in a model sync: ssh ControlPersist masters (they
daemonize out of the run's process tree, and do the controller's encryption) and everything
on the hosts (sshd, sftp-server, the module's python3). A cgroup counts every process that was
ever in it, daemonized or not, until it is read. The bench joins a "controller" cgroup; each
test host's process tree is moved into a "hosts" cgroup as it starts.

Needs root and a cpuacct (cgroup v1) or unified (cgroup v2) hierarchy; without them,
CgroupCpu.open() returns None and the benches print no such figures.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import psutil

_V1 = Path("/sys/fs/cgroup/cpuacct")
_V2_CANDIDATES = (Path("/sys/fs/cgroup"), Path("/sys/fs/cgroup/unified"))


@dataclass(frozen=True)
class CpuSample:
    controller_s: float
    hosts_s: float

    def __sub__(self, other: CpuSample) -> CpuSample:
        return CpuSample(self.controller_s - other.controller_s, self.hosts_s - other.hosts_s)


class CgroupCpu:
    """Two cgroups, `controller` (this process and everything it starts) and `hosts`."""

    def __init__(self, root: Path, v2: bool) -> None:
        self._root, self._v2 = root, v2
        self._own = root / f"hybridctl-bench-{os.getpid()}"
        self._controller, self._hosts = self._own / "controller", self._own / "hosts"
        self._previous = ""

    @classmethod
    def open(cls) -> CgroupCpu | None:
        if os.geteuid() != 0:
            return None
        if (_V1 / "cpuacct.usage").is_file():
            account = cls(_V1, v2=False)
        else:
            found = next((r for r in _V2_CANDIDATES if (r / "cgroup.controllers").is_file()), None)
            if found is None:
                return None
            account = cls(found, v2=True)
        try:
            account._start()
        except OSError:
            account.close()
            return None
        return account

    def _start(self) -> None:
        for directory in (self._own, self._controller, self._hosts):
            directory.mkdir(exist_ok=True)
        self._previous = _cgroup_of(os.getpid(), self._v2)
        (self._controller / "cgroup.procs").write_text(str(os.getpid()))

    def adopt_hosts(self, pids: Iterable[int]) -> None:
        """Move these processes and their descendants into the hosts cgroup (their children follow)."""
        for pid in pids:
            with contextlib.suppress(psutil.NoSuchProcess):
                tree = [pid] + [child.pid for child in psutil.Process(pid).children(recursive=True)]
                for member in tree:
                    with contextlib.suppress(OSError):
                        (self._hosts / "cgroup.procs").write_text(str(member))

    def sample(self) -> CpuSample:
        return CpuSample(self._usage_s(self._controller), self._usage_s(self._hosts))

    def _usage_s(self, directory: Path) -> float:
        if self._v2:
            for line in (directory / "cpu.stat").read_text().splitlines():
                key, value = line.split()
                if key == "usage_usec":
                    return int(value) / 1e6
            return 0.0
        return int((directory / "cpuacct.usage").read_text()) / 1e9

    def close(self) -> None:
        """Every process back where this one was; the cgroups removed."""
        back = self._root / self._previous.lstrip("/") if self._previous else self._root
        for directory in (self._controller, self._hosts):
            with contextlib.suppress(OSError):
                for pid in (directory / "cgroup.procs").read_text().split():
                    with contextlib.suppress(OSError):
                        (back / "cgroup.procs").write_text(pid)
        for directory in (self._controller, self._hosts, self._own):
            with contextlib.suppress(OSError):
                directory.rmdir()


def _cgroup_of(pid: int, v2: bool) -> str:
    for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
        _number, controllers, path = line.split(":", 2)
        if (v2 and controllers == "") or (not v2 and "cpuacct" in controllers.split(",")):
            return path
    return "/"
