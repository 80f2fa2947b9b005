from __future__ import annotations

import os


def single_threaded_blas() -> None:
    """Before anything imports numpy: its BLAS runs on the calling thread alone.

    hybridctl's numpy work is vector arithmetic over at most a few hundred thousand entries,
    where BLAS threads buy nothing; and OpenBLAS's threads spin while they wait, on the core a
    drill's other worker process runs on (a drill at 10,000 workloads took a third more CPU).
    A value the user set is kept.
    """
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def main() -> None:
    single_threaded_blas()
    from hybridctl.commands.app import run_and_exit

    run_and_exit()


if __name__ == "__main__":
    main()
