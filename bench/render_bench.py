"""Rendering a fleet's plan as the `plan` command's table, for people: wall and CPU time.

Run:  .venv/bin/python bench/render_bench.py [--workloads 10000] [--pools 300] [--seed 1] [--repeat 3]

Plans the seeded generator's inventory (bench/inventory_gen.py), then renders it with the
command's renderer into an in-memory console 120 columns wide: the default table (summary and
the dearest `--max-rows` placements, the command's default 200; 0: every row) and the `--detailed`
one (pools, cost breakdowns, data movements too). Prints the median of the repeats; the plan itself is not timed.
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "cli"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--max-rows", type=int, default=200, help="as `plan --max-rows` (0: every row)")
    args = parser.parse_args()

    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.placement.planner import plan
    from hybridctl.render.plan import render_plan
    from inventory_gen import generate
    from rich.console import Console

    result = plan(Inventory.model_validate(generate(args.workloads, args.pools, args.seed)))
    for detailed in (False, True):
        walls, cpus, size = [], [], 0
        for _ in range(args.repeat):
            console = Console(file=io.StringIO(), width=120, no_color=True, highlight=False)
            began, began_cpu = time.perf_counter(), time.process_time()
            render_plan(console, result, max_rows=args.max_rows, detailed=detailed)
            walls.append(time.perf_counter() - began)
            cpus.append(time.process_time() - began_cpu)
            size = len(console.file.getvalue())  # type: ignore[attr-defined]
        print(f"render {args.workloads:,} workloads ({len(result.placements):,} placements), "
              f"--max-rows {args.max_rows}{' --detailed' if detailed else ''}: {statistics.median(walls):.2f} s wall, "
              f"{statistics.median(cpus):.2f} s CPU, {size:,} characters  [median of {args.repeat}]")


if __name__ == "__main__":
    main()
