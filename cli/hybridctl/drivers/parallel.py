"""Spread independent, pure jobs (a drill's scenarios) over forked worker processes.

Forked workers inherit the parent's memory, so a fleet's inventory and base plan are not
copied or pickled: only each item (a scenario) goes out and each result comes back. Results
come back in the items' order. Below `min_items`, or with one CPU, or where fork is not
available, the jobs run here, one after the other (a pool costs more than it saves there).
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")

_job: Callable[[object], object] | None = None  # set before the workers fork; they inherit it


def _call(item: object) -> object:
    assert _job is not None
    return _job(item)


def worker_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def map_in_processes(fn: Callable[[T], R], items: Sequence[T], *, workers: int | None = None,
                     min_items: int = 4) -> Iterator[R]:
    global _job
    workers = min(workers or worker_count(), len(items))
    if workers < 2 or len(items) < min_items or "fork" not in multiprocessing.get_all_start_methods():
        yield from map(fn, items)
        return
    _job = fn  # type: ignore[assignment]
    # what exists now (a fleet's inventory, base plan and caches) is never garbage: frozen, the workers'
    # collections do not walk it again and again, nor touch (and so copy) the pages they share with us
    gc.freeze()
    try:
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            yield from pool.map(_call, items, chunksize=1)  # type: ignore[misc]
    finally:
        gc.unfreeze()
        _job = None
