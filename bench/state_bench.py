"""State backends: the cost of `status`, of an apply's bookkeeping, and of a lock hand-over.

Run:  .venv/bin/python bench/state_bench.py [--steps 40] [--repeat 5]
(as root, or as a user who can run initdb: it starts a private PostgreSQL server on a Unix
socket in a temporary directory, see tests/support/pgserver.py, and removes it after)

Prints, for the local directory and for PostgreSQL:
- status: `hybridctl status --no-drift` as a subprocess (wall time, CLI start included), and
  in-process the store reads that status makes (state document, lock holder);
- bookkeeping: run_operation over --steps no-op steps that each deploy something, i.e. only
  the journal records (2 per step + 2 per run) and state writes (1 per step + 2 per run);
- lock hand-over: a process holding the lock is SIGKILLed; the time until a waiting
  `acquire(timeout_s=…)` gets it.
Medians of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from hybridctl.core.deploy.steps import Step, StepGraph, make_step  # noqa: E402
from hybridctl.drivers.lockholder import HOLDER_ENV  # noqa: E402
from hybridctl.drivers.state import StateStore, open_state  # noqa: E402
from hybridctl.executor import StepContext, StepOutcome, StepStatus, run_operation  # noqa: E402
from support.apply_cli import cli_env, run_cli  # noqa: E402
from support.pgserver import remove_server, start_server  # noqa: E402


def _median_ms(samples: list[float]) -> str:
    return f"{statistics.median(samples) * 1000:8.1f} ms"


def _timed(action: Callable[[], object], repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        action()
        samples.append(time.perf_counter() - started)
    return samples


def _graph(steps: int) -> StepGraph:
    return StepGraph.of(make_step(f"work/{i}", "noop", f"step {i}", {"i": i, "nonce": uuid.uuid4().hex},
                                  deploys=True) for i in range(steps))


def _noop(step: Step, context: StepContext) -> StepOutcome:
    del step, context
    return StepOutcome(StepStatus.DONE, "ok")


def _bookkeeping(store_for: Callable[[], StateStore], steps: int) -> float:
    store = store_for()
    graph = _graph(steps)
    started = time.perf_counter()
    with store.locked(command="bench"):
        report = run_operation(store, graph, {"noop": _noop}, operation="apply", target="bench", parallelism=4)
    elapsed = time.perf_counter() - started
    assert report.succeeded
    return elapsed


def _handover(location: str) -> float:
    code = textwrap.dedent(f"""
        import time
        from hybridctl.drivers.state import open_state
        open_state({location!r}).lock.acquire(command="bench holder")
        print("held", flush=True)
        time.sleep(600)
    """)
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    waiter = open_state(location)
    holder.kill()
    started = time.perf_counter()
    waiter.lock.acquire(command="bench waiter", timeout_s=30)
    elapsed = time.perf_counter() - started
    waiter.lock.release()
    holder.wait()
    os.environ.pop(HOLDER_ENV, None)
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    server = start_server(fsync=True)  # durable, as the local backend's fsyncs are
    work = Path(tempfile.mkdtemp(prefix="hctl-state-bench-"))
    try:
        url = server.url(environment="bench")
        backends = {"local directory": str(work / "state"), "postgresql": url}
        env = cli_env(HYBRIDCTL_WORK_DIR=str(work / "work"), HYBRIDCTL_RECORDING_CLOUD_DIR=str(work / "cloud"))
        print(f"state backends: {args.steps} bookkeeping steps, medians of {args.repeat} runs")
        print(f"{'':18} {'status (CLI)':>14} {'status reads':>14} {'bookkeeping':>14} {'per step':>12} "
              f"{'hand-over':>12}")
        for name, location in backends.items():
            _bookkeeping(lambda location=location: open_state(location), 1)  # schema, first state
            cli = _timed(lambda location=location: run_cli("status", "--no-drift", "--state", location, env=env,
                                                           cwd=work), args.repeat)

            def reads(location: str = location) -> None:
                store = open_state(location)
                store.read()
                store.lock.holder_status()

            in_process = _timed(reads, args.repeat)
            books = [_bookkeeping(lambda location=location: open_state(location), args.steps)
                     for _ in range(args.repeat)]
            handovers = [_handover(location) for _ in range(args.repeat)]
            per_step = statistics.median(books) / args.steps
            print(f"{name:18} {_median_ms(cli):>14} {_median_ms(in_process):>14} {_median_ms(books):>14} "
                  f"{per_step * 1000:9.2f} ms {_median_ms(handovers):>12}")
    finally:
        remove_server(server)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
