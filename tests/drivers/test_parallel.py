"""map_in_processes: a drill's scenarios spread over forked workers, results in order."""

from __future__ import annotations

import os

from hybridctl.drivers.parallel import map_in_processes


def square_and_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def test_results_come_back_in_order_from_worker_processes() -> None:
    results = list(map_in_processes(square_and_pid, list(range(12)), workers=2))
    assert [r[0] for r in results] == [n * n for n in range(12)]
    assert os.getpid() not in {r[1] for r in results}


def test_closures_work_since_workers_fork() -> None:
    offset = 7
    assert list(map_in_processes(lambda n: n + offset, [1, 2, 3, 4], workers=2)) == [8, 9, 10, 11]


def test_few_items_run_here() -> None:
    results = list(map_in_processes(square_and_pid, [3], workers=2))
    assert results == [(9, os.getpid())]
