"""One pure job run in a forked child while this process goes on with other work.

`plan` checks a 100,000-workload plan with the independent checker (seconds of CPU) while it
works out the cloud changes and the plan file's text: the planner leaves the second core idle.
The child inherits the parent's memory (nothing is pickled on the way in) and sends back only
the job's result. Whatever goes wrong in the child (an exception, a kill, a result that cannot
be pickled) makes `result()` run the job here instead, so the caller gets the job's own result
or its own exception, as if it had never been forked. Where fork is not available, or with one
CPU, the job runs in `result()`.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import signal
import struct
import threading
import warnings
from collections.abc import Callable
from typing import Generic, TypeVar

from hybridctl.drivers.parallel import worker_count

R = TypeVar("R")

_LENGTH = struct.Struct("<Q")  # the result's pickle, after its length


class Background(Generic[R]):
    """`job()` started in a forked child (unless `fork` is false); `result()` waits for it (or runs it
    here). Used as a context manager, a child whose result was never asked for is killed on exit."""

    def __init__(self, job: Callable[[], R], *, fork: bool = True) -> None:
        self._job = job
        self._pid = 0
        self._reader = -1
        if not fork or not hasattr(os, "fork") or worker_count() < 2:
            return
        reader, writer = os.pipe()
        with warnings.catch_warnings():
            # Python 3.12+ warns when forking beside other threads (the solver's pool may be alive):
            # the child runs pure Python only and leaves by os._exit.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: run the job, send its result, leave without any cleanup of the parent's
            os.close(reader)
            _run_child(job, writer)
        os.close(writer)
        self._pid, self._reader = pid, reader

    def __enter__(self) -> Background[R]:
        return self

    def __exit__(self, *_: object) -> None:
        if self._pid:
            pid, self._pid = self._pid, 0
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(self._reader)

    def result(self) -> R:
        if self._pid == 0:
            return self._job()
        pid, self._pid = self._pid, 0
        with os.fdopen(self._reader, "rb") as pipe:
            head = pipe.read(_LENGTH.size)
            length = _LENGTH.unpack(head)[0] if len(head) == _LENGTH.size else -1
            payload = pipe.read(length) if length >= 0 else b""
        if len(payload) == length:
            # the whole result is here: the child is reaped once it is done exiting (unmapping a fleet's
            # heap takes it several milliseconds), not waited for
            threading.Thread(target=_reap, args=(pid,), name="background-reaper", daemon=True).start()
            try:
                return pickle.loads(payload)  # type: ignore[no-any-return]
            except Exception:  # a result that cannot be read back: the job runs here
                return self._job()
        os.waitpid(pid, 0)  # the child failed: it sent nothing, or not all of it
        return self._job()


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError):  # reaped already (a caller's own waitpid)
        os.waitpid(pid, 0)


def _run_child(job: Callable[[], R], writer: int) -> None:
    code = 1
    try:
        gc.disable()  # collecting would write to every inherited object's page: copies of the whole heap
        payload = pickle.dumps(job(), protocol=pickle.HIGHEST_PROTOCOL)
        with os.fdopen(writer, "wb") as pipe:
            pipe.write(_LENGTH.pack(len(payload)))  # its length first: the parent reads no further
            pipe.write(payload)  # apart: joined, a large result (half a fleet's parsed YAML) would be copied once more
        code = 0
    except BaseException:  # the parent runs the job itself and gets its exception
        pass
    finally:
        os._exit(code)
