"""Shared fixtures.

Real SSH test hosts (see tests/hosts/README.md): request ``host_lab`` in a test marked
``@pytest.mark.hosts``. The test body then runs inside the lab's controller network
namespace, so Ansible, ssh and ``hybridctl`` subprocesses reach the hosts directly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

# tests/ is on sys.path (pytest's rootdir conftest insertion); make it so for direct imports too.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from hosts.lab import HostLab, LabUnavailable, missing_prerequisites
from support.pgserver import PgServer, remove_server, start_server

# pytest-xdist's workers inherit COLUMNS=80 and LINES=24 from execnet, which a serial run does not
# set: rich would then fold messages (a whole tmp path) at 80 columns in one run and not the other.
# Every test sees the environment of a serial run; a test about widths sets COLUMNS itself.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

# The suite passes every time, on a loaded machine too: property and fuzz tests draw the same examples on
# every run (a failure is reproducible, never luck), and no example fails for being slow.
settings.register_profile("hybridctl", derandomize=True, deadline=None)
settings.load_profile("hybridctl")


def _unavailable(reason: str) -> None:
    """Skip, or fail when CI demands the hosts (HYBRIDCTL_REQUIRE_HOSTS=1)."""
    message = f"real SSH test hosts unavailable: {reason}"
    if os.environ.get("HYBRIDCTL_REQUIRE_HOSTS") == "1":
        pytest.fail(message + " (HYBRIDCTL_REQUIRE_HOSTS=1 makes this a failure)", pytrace=False)
    pytest.skip(message)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """`--dist loadgroup` (the README's `-n 2 --dist loadgroup`): the real-host tests in one worker,
    every other module a unit of its own (support/xdist_hosts.py says why)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from support.xdist_hosts import HostsInOneWorker

    return HostsInOneWorker(config, log)


@pytest.fixture(scope="session")
def lab_prerequisites() -> None:
    """Skips (or, in CI, fails) a test that needs the lab on a machine that cannot run it."""
    missing = missing_prerequisites()
    if missing:
        _unavailable("; ".join(missing))


@pytest.fixture(scope="session")
def host_lab_session(lab_prerequisites: None) -> Iterator[HostLab]:
    """One lab per test session: controller namespace, client key, cached root filesystem."""
    lab = HostLab()
    try:
        lab.open()
    except LabUnavailable as exc:
        _unavailable(str(exc))
    try:
        yield lab
    finally:
        lab.close()


@pytest.fixture
def host_lab(host_lab_session: HostLab) -> Iterator[HostLab]:
    """The lab, with the test running inside its controller netns; hosts it starts stop after it."""
    lab = host_lab_session
    before = {h.name for h in lab.hosts}
    try:
        with lab.controller():
            yield lab
    finally:
        lab.stop([h for h in lab.hosts if h.name not in before])


@pytest.fixture(scope="module")
def server() -> Iterator[PgServer]:
    """A private PostgreSQL server (initdb/pg_ctl in a temporary directory) for the module's tests,
    on a Unix socket: reachable from the lab's controller network namespace too."""
    started = start_server()
    try:
        yield started
    finally:
        remove_server(started)
