"""CPU seconds of the window-overlap check (`first_overlap`, validate's `overlapping-windows`). Prints figures;
asserts nothing.

    PYTHONPATH=cli .venv/bin/python bench/windows_bench.py [--workloads 2000] [--windows 672]

Each workload has `--windows` touching quarter-hour windows (672 fill the week: every quarter hour of every
day; past 672 they repeat, and overlap); half the workloads are in UTC, half in America/New_York (whose
windows are compared in its winter and in its summer). Building the windows (pydantic) is timed apart from the check.
"""

from __future__ import annotations

import argparse
import time

from hybridctl.core.inventory.schedule import DAYS, Schedule, Window, first_overlap


def touching_windows(count: int, zone: str) -> list[Window]:
    windows = []
    for k in range(count):
        day, quarter = divmod(k % 672, 96)
        start, end = quarter * 15, quarter * 15 + 15
        windows.append(Window(days=[DAYS[day]], start=f"{start // 60:02d}:{start % 60:02d}",
                              end=f"{end // 60:02d}:{end % 60:02d}", tz=zone))
    return windows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=2000)
    parser.add_argument("--windows", type=int, default=672)
    args = parser.parse_args()
    started = time.process_time()
    utc = touching_windows(args.windows, "UTC")
    new_york = touching_windows(args.windows, "America/New_York")
    # One Schedule per workload, as the inventory reader makes them (each its own windows' copies)
    schedules = [Schedule(windows=[w.model_copy() for w in (utc if n % 2 else new_york)]) for n in range(args.workloads)]
    built = time.process_time() - started
    started = time.process_time()
    found = sum(first_overlap(s) is not None for s in schedules)
    checked = time.process_time() - started
    print(f"{args.workloads} workloads x {args.windows} windows: built in {built:.2f} CPU s, "
          f"checked in {checked:.2f} CPU s ({checked / args.workloads * 1000:.2f} ms a workload), {found} overlapping")


if __name__ == "__main__":
    main()
