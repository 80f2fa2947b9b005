"""What the failover command's work beside the replan costs, part by part. Prints figures; asserts nothing.

    .venv/bin/python bench/beside_bench.py [--workloads 10000] [--pools 300] [--site dc-2] [--repeat 7]

On a seeded synthetic fleet (bench/inventory_gen.py), after the loss of --site:
1. the replan's largest LP, as solve.py makes HiGHS run it: alone, and while Python runs on another
   thread (as beside.py has it do); then the same with highspy's Python callback left on, which
   takes Python's lock again and again during the run;
2. the failover plan's file digest (the two texts of its plan file, stackconfig.plan_file_digest);
3. a forked child's exit after it has sent its result (drivers/background.py): what result() waited
   for before it read the result by its length.
Each figure is the best of --repeat runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hybridctl.__main__ import single_threaded_blas  # noqa: E402

single_threaded_blas()  # as the console script does, before numpy is imported

from failover_bench import _fleet  # noqa: E402


def _best(repeat: int, run: Callable[[], float]) -> float:
    return min(run() for _ in range(repeat))


def _largest_model(inventory, base, site):  # type: ignore[no-untyped-def]
    from hybridctl.core.failover.events import Event, EventKind
    from hybridctl.core.failover.replan import replan
    from hybridctl.core.plan import planner
    from hybridctl.core.plan.milp import Model

    models: list[Model] = []
    solve = planner.solve

    def keep(model: Model, **options: float) -> object:
        models.append(model)
        return solve(model, **options)  # type: ignore[arg-type]

    planner.solve = keep  # type: ignore[assignment]
    try:
        result = replan(inventory, base, [Event(EventKind.SITE_LOST, site)])
    finally:
        planner.solve = solve
    return max(models, key=lambda m: m.columns), result


def bench_lp(model, repeat: int) -> None:  # type: ignore[no-untyped-def]
    import numpy as np
    from hybridctl.core.plan import solve

    live = np.flatnonzero(model.upper > model.lower)
    make, solving = solve._highs, solve.solving
    seconds: list[float] = []

    def timed(busy: bool, callbacks: bool) -> float:
        def highs(*args: float) -> object:
            made = make(*args)
            if callbacks:
                made.enableCallbacks()  # type: ignore[attr-defined]
            return made

        def run(highs_run: Callable[[], object], columns: int) -> None:
            # HiGHS's run alone is timed, with plain Python (allocating) on another thread meanwhile, as
            # beside.py runs its tasks
            stop = threading.Event()

            def python() -> None:
                while not stop.is_set():
                    {i: str(i) for i in range(1000)}

            worker = threading.Thread(target=python)
            if busy:
                worker.start()
            started = time.perf_counter()
            highs_run()
            seconds.append(time.perf_counter() - started)
            stop.set()
            if busy:
                worker.join()

        solve._highs, solve.solving = highs, run  # type: ignore[assignment]
        try:
            solve._run(model, live, model.lower, integer=False, time_limit_s=60.0, gap=0.0)
        finally:
            solve._highs, solve.solving = make, solving
        return seconds.pop()

    print(f"largest LP of the replan ({live.size:,} columns), HiGHS's run:")
    for callbacks in (False, True):
        label = "highspy's callback on " if callbacks else "as solve.py runs it   "
        alone = _best(repeat, partial(timed, False, callbacks))
        beside = _best(repeat, partial(timed, True, callbacks))
        print(f"  {label}: alone {alone:.3f} s, beside busy Python {beside:.3f} s")


def bench_digest(plan, repeat: int) -> None:  # type: ignore[no-untyped-def]
    from hybridctl.core.jsontext import dumps_indented_utf8
    from hybridctl.core.plan.serialize import plan_to_dict, plan_to_json_utf8

    def timed(write: Callable[[], bytes]) -> float:
        started = time.perf_counter()
        write()
        return time.perf_counter() - started

    timed(lambda: plan_to_json_utf8(plan, plan_file=True))  # the first text of a process grows its heap
    one_walk = _best(repeat, lambda: timed(lambda: plan_to_json_utf8(plan, plan_file=True)))
    two_walks = _best(repeat, lambda: timed(lambda: dumps_indented_utf8(plan_to_dict(plan, plan_file=True))))
    print(f"failover plan's file text ({len(plan.placements):,} placements): {one_walk:.3f} s "
          f"(each text after a walk of its own: {two_walks:.3f} s)")


def bench_child(plan, repeat: int) -> None:  # type: ignore[no-untyped-def]
    from hybridctl.core.stackconfig import plan_file_digest
    from hybridctl.drivers.background import Background

    def timed() -> float:
        # the child writes the plan file's text, as the failover command's does: it copies the pages it touches
        with Background(lambda: (plan_file_digest(plan), os.getpid())) as child:
            _, pid = child.result()  # back as soon as the child has sent it
            sent = time.perf_counter()
        while Path(f"/proc/{pid}").exists():  # the child exiting, then reaped by a thread
            time.sleep(0.0002)
        return time.perf_counter() - sent

    print(f"a forked child's exit after it sent its result (this process: {_rss_mb():,} MB resident): "
          f"{_best(repeat, timed) * 1000:.1f} ms, which result() no longer waits for")


def _rss_mb() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--site", default="dc-2")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    from hybridctl.core.failover.failover import stamped
    from hybridctl.core.plan.planner import plan

    inventory = _fleet(args.workloads, args.pools, args.seed)
    base = plan(inventory)
    model, result = _largest_model(inventory, base, args.site)
    print(f"{args.workloads:,} workloads × {args.pools} pools, site-lost {args.site}")
    bench_lp(model, args.repeat)
    bench_digest(stamped(result, base.inventory_digest).after, args.repeat)
    bench_child(base, args.repeat)


if __name__ == "__main__":
    main()
