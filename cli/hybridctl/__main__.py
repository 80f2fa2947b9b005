from __future__ import annotations

import gc
import os


def single_threaded_blas() -> None:
    """Before anything imports numpy: its BLAS runs on the calling thread alone.

    hybridctl's numpy work is vector arithmetic over at most a few hundred thousand entries,
    where BLAS threads buy nothing; and OpenBLAS's threads spin while they wait, on the core a
    drill's other worker process runs on (a drill at 10,000 workloads took a third more CPU).
    A value the user set is kept.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


# Young objects are still collected as usual; a full collection, which walks the whole heap, waits
# for a thousand middle-generation ones, far beyond what one command allocates.
GC_THRESHOLDS = (50_000, 50, 1_000)


def collect_rarely() -> None:
    """One garbage-collection policy for the whole process, set before any work.

    Loading, planning, replanning and checking a fleet of 100,000 workloads make millions of small
    objects and almost no reference cycles; with the default thresholds the collector walks the whole
    live heap every few thousand allocations (a quarter of the CPU time of `plan` at that size). The
    process (and a drill's forked workers) keeps cyclic collection, only rarer.
    """
    gc.set_threshold(*GC_THRESHOLDS)


def main() -> None:
    single_threaded_blas()
    collect_rarely()
    from hybridctl.commands.app import run_and_exit

    run_and_exit()


if __name__ == "__main__":
    main()
