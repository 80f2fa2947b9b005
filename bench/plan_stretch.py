"""The planner's stretch size, end to end: 100,000 workloads × 1,000 pools by default.

Run:  .venv/bin/python bench/plan_stretch.py [--workloads 100000] [--pools 1000] [--seed 1] [--time-limit 30] [--cli]

In this process: generate the seeded revision-2 inventory (bench/inventory_gen.py), write it,
load it as the CLI does (parse, validate, checks), plan it with the default options (or the
given time limit), and check the plan with the independent checker. Prints, as a markdown
table, the wall and CPU time of loading, of planning and of both (end to end), the solver's
status and method, its objective, the bound it proved and the gap between them, unplaced
workloads, the checker's violations (must be 0) and the process's peak memory (maxrss).
With --cli, also what an SRE waits for: `hybridctl plan INVENTORY --out FILE` in a process of its
own (load, plan, the checker's verification, the cloud-changes diff, the plan file, the table),
its wall and CPU time and peak memory.

The gap is against the planner's own proven bound (the LP relaxation on the LP-guided route);
when the time limit strikes before the LP is solved the bound is the trivial one and the
status says time_limit: the plan is still feasible (the greedy start), but not proven.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "cli"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=100_000)
    parser.add_argument("--pools", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--time-limit", type=float, default=None, help="solver time limit (default: the planner's)")
    parser.add_argument("--cli", action="store_true", help="also time `hybridctl plan --out` end to end")
    args = parser.parse_args()

    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.drivers.inventory_files import load_inventory
    from inventory_gen import generate, to_yaml

    cli_rows: list[tuple[str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(to_yaml(generate(args.workloads, args.pools, args.seed)))
        if args.cli:
            cli_rows = _cli(path, Path(tmp))
        began, began_cpu, began_children = time.perf_counter(), time.process_time(), _children_cpu_s()
        inventory = load_inventory(path).inventory
        load_wall = time.perf_counter() - began
        load_cpu = time.process_time() - began_cpu + _children_cpu_s() - began_children
    options = PlanOptions() if args.time_limit is None else PlanOptions(time_limit_s=args.time_limit)
    began, began_cpu = time.perf_counter(), time.process_time()
    result = plan(inventory, options=options)
    plan_wall, plan_cpu = time.perf_counter() - began, time.process_time() - began_cpu
    violations = len(check_plan(inventory, result))
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    s = result.solver
    rows = [
        ("size", f"{args.workloads:,} workloads × {args.pools:,} pools, seed {args.seed}"),
        ("load (parse, validate, checks)", f"{load_wall:.1f} s wall, {load_cpu:.1f} s CPU"),
        ("plan", f"{plan_wall:.1f} s wall, {plan_cpu:.1f} s CPU"),
        ("end to end (load + plan)", f"{load_wall + plan_wall:.1f} s wall, {load_cpu + plan_cpu:.1f} s CPU"),
        ("status (method)", f"{s.status} ({s.method})"),
        ("objective / proven bound", f"{s.objective:,.0f} / {s.bound:,.0f}"),
        ("gap to the proven bound", f"{100 * s.gap:.3f} %"),
        ("unplaced workloads (replicas)", f"{len(result.unplaced)} ({sum(u.replicas for u in result.unplaced)})"),
        ("placed replicas", f"{sum(p.replicas for p in result.placements):,}"),
        ("plan $/month", f"{result.total_usd_per_month:,.0f}"),
        ("checker violations", str(violations)),
        ("peak RSS (generation, load, plan)", f"{peak_mib:,.0f} MiB"),
        *cli_rows,
    ]
    print("| figure | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")


def _cli(inventory: Path, tmp: Path) -> list[tuple[str, str]]:
    """`hybridctl plan INVENTORY --out FILE` as a user runs it; run first, so the children's peak is its own.

    Run twice. The first run is timed and left alone: sampling a process's memory (smaps_rollup)
    walks its page tables under its memory-map lock, and at 50 ms it slowed the command by a
    third. The second run is sampled for memory: the command forks helpers (the checker, the
    plan file's writer) that share its memory copy on write, so maxrss gives only the largest
    process, and the whole tree's (the sum of its proportional set sizes) is given as well.
    """
    import subprocess

    def command(run: str) -> list[str]:
        return [sys.executable, "-m", "hybridctl", "plan", str(inventory), "--out", str(tmp / f"{run}.json"),
                "--state", str(tmp / f"state-{run}")]

    began = time.perf_counter()
    timed = subprocess.run(command("timed"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    wall = time.perf_counter() - began
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(command("sampled"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    tree_peak_kib, own_cpu = 0, 0.0
    while process.poll() is None:
        tree_peak_kib = max(tree_peak_kib, _tree_pss_kib(process.pid))
        own_cpu = max(own_cpu, _cpu_s(process.pid))
        time.sleep(0.05)
    return [("`hybridctl plan --out` (exit code)", f"{wall:.1f} s wall, {usage.ru_utime + usage.ru_stime:.1f} s CPU "
             f"({timed.returncode})"),
            # on a shared machine the wall time is noisy; the command's own CPU time, its forked helpers'
            # excluded, is its critical path when a second core is free for them (sampled run)
            ("`hybridctl plan --out` CPU of its own process (sampled run)", f"{own_cpu:.1f} s"),
            ("`hybridctl plan --out` peak RSS (largest process)", f"{usage.ru_maxrss / 1024:,.0f} MiB"),
            ("`hybridctl plan --out` peak PSS (process tree, sampled run)", f"{tree_peak_kib / 1024:,.0f} MiB")]


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _cpu_s(pid: int) -> float:
    """User and system CPU time of one process so far (Linux; 0 where /proc has none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _tree_pss_kib(pid: int) -> int:
    """The proportional set size of a process and its descendants (Linux; 0 where /proc has none)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            for line in Path(f"/proc/{current}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue  # it ended meanwhile
    return total


if __name__ == "__main__":
    main()
