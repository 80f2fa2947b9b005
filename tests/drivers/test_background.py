"""A job run in a forked child gives what it gives when run here, and its exception when it fails."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest
from hybridctl.drivers.background import Background


def _pid_and_square(n: int) -> tuple[int, int]:
    return os.getpid(), n * n


def test_the_result_comes_from_a_child() -> None:
    with Background(lambda: _pid_and_square(12)) as job:
        pid, square = job.result()
    assert square == 144 and pid != os.getpid()


def test_without_fork_the_job_runs_here_when_asked() -> None:
    with Background(lambda: _pid_and_square(3), fork=False) as job:
        assert job.result() == (os.getpid(), 9)


def test_a_failure_in_the_child_runs_the_job_here() -> None:
    parent = os.getpid()

    def only_here() -> str:
        if os.getpid() != parent:
            raise RuntimeError("the child failed")
        return "ran in the parent"

    with Background(only_here) as job:
        assert job.result() == "ran in the parent"


def test_a_result_that_cannot_be_sent_back_runs_the_job_here() -> None:
    parent = os.getpid()
    with Background(lambda: threading.Lock() if os.getpid() != parent else "unpicklable in the child") as job:
        assert job.result() == "unpicklable in the child"


def test_the_job_s_own_exception_reaches_the_caller() -> None:
    with Background(lambda: 1 // 0) as job, pytest.raises(ZeroDivisionError):
        job.result()


def test_a_large_result_comes_through_the_pipe() -> None:
    with Background(lambda: ["x" * 100] * 20_000) as job:
        assert job.result() == ["x" * 100] * 20_000


def test_a_child_whose_result_is_not_asked_for_is_killed_and_reaped() -> None:
    with Background(lambda: threading.Event().wait(60)) as job:
        pid = job._pid
        assert pid
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)  # reaped: no such child any more


def test_a_result_is_read_when_sent_and_the_child_is_reaped_once_it_has_exited(
        monkeypatch: pytest.MonkeyPatch) -> None:
    real_exit = os._exit

    def lingering_exit(code: int) -> None:  # the child, after it has sent its result
        time.sleep(60)
        real_exit(code)

    monkeypatch.setattr(os, "_exit", lingering_exit)
    with Background(lambda: _pid_and_square(5)) as job:
        pid, square = job.result()
    monkeypatch.undo()
    assert square == 25
    # read without waiting for the child to exit: it is still there, not a zombie
    assert Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 60  # a bound for a loaded machine: the loop ends when the child is reaped
    while Path(f"/proc/{pid}").exists():  # a zombie keeps its entry until it is reaped (by a thread here)
        assert time.monotonic() < deadline, f"child {pid} was never reaped"
        time.sleep(0.01)
