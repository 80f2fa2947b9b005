"""Python work done while HiGHS solves a large model.

highspy releases the GIL inside `Highs.run()`, so the solver and Python can use both cores at
once. The LP of the failover command's largest model (a lost data centre's second pass, 39,000
columns on a 10,000-workload fleet) takes 0.3 s, while the main thread only waits. Meanwhile it
has work that the replan's result does not feed: the applied plan's steps, fingerprint and check
(checked_failover), and the applied placements' data movements (replan).

A caller queues such work with `beside_solver(*tasks)`. Each solve of a model of at least
MIN_COLUMNS then runs queued tasks on this thread, one whole task at a time, while the
solver runs on another thread, and then waits for the solver. A task left over when the solve
ends waits for the next one. A task left over when the block ends is dropped. Work longer than
a solve goes in steps (`in_steps`: a fleet's check, 500 workloads a step), so that the solve's end
waits for one step at most.

Tasks are pure, and their results reach the caller through what they memoise. So when a task
runs makes no difference to any result, and a task that never ran is simply done later, where
its result is needed. A task that fails is dropped: the same work runs again where its result
is needed, and fails there, at the place its error belongs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

# Below this, a solve is over well before a task of the failover command's size (0.05-0.1 s on a
# 10,000-workload fleet) is: running the task then delays the plan, and gains nothing. A failover's
# LP of 14,000 columns takes 0.1 s on this machine.
MIN_COLUMNS = 10_000

Task = Callable[[], object]

_queued: ContextVar[deque[Task] | None] = ContextVar("hybridctl_beside_solver", default=None)


@contextmanager
def beside_solver(*tasks: Task) -> Iterator[None]:
    """Within the block, `tasks` (in order) run while HiGHS solves the large models."""
    token = _queued.set(deque(tasks))
    try:
        yield
    finally:
        _queued.reset(token)


def also_beside_solver(task: Task) -> None:
    """Queue `task` after those of the enclosing beside_solver block (none: nothing is queued)."""
    queue = _queued.get()
    if queue is not None:
        queue.append(task)


def in_steps(step: Callable[[], bool]) -> Task:
    """A task doing one step of longer work, queued again while `step()` says steps are left: work longer
    than a solve (a fleet's check) runs a part at a time, each ending soon after the solve it ran beside."""
    def task() -> None:
        if step():
            also_beside_solver(task)
    return task


def solving(run: Callable[[], object], columns: int) -> None:
    """`run()` (a solver's run, which releases the GIL), with queued tasks done here meanwhile."""
    queue = _queued.get()
    if not queue or columns < MIN_COLUMNS:
        run()
        return
    failure: list[BaseException] = []
    done = threading.Event()

    def solve() -> None:
        try:
            run()
        except BaseException as error:  # handed to the caller's thread, which raises it there
            failure.append(error)
        finally:
            done.set()

    solver = threading.Thread(target=solve, name="highs", daemon=True)
    solver.start()
    while queue and not done.is_set():
        task = queue.popleft()
        try:
            task()
        except Exception:  # done again where its result is needed, and fails there (module docstring)
            continue
    solver.join()
    if failure:
        raise failure[0]
