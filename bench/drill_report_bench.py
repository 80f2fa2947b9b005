"""`drill --standard` on a seeded fleet, as the command runs it, timed; and a digest of its report.

Run from a checkout's root (alternate.py does: cwd is the tree, PYTHONPATH its cli):
    PYTHONPATH=$PWD/cli .venv/bin/python bench/alternate.py REV -- bench/drill_report_bench.py [--workloads 10000] [--workers N]

The fleet is bench/inventory_gen.py's (as bench/failover_bench.py's drill), the GC policy the console
script's, the scenarios spread by drivers/parallel.map_in_processes. Prints the drill's wall and CPU seconds
(this process and its workers, os.times), and the sha256 of drill_to_json(report) with every "seconds"
field zeroed (the only field that differs run to run), so two trees can be seen to give the same report;
that text is kept as /tmp/hybridctl-drill-reports/DIGEST.json, to diff; and the sha256 with solver_status zeroed too (a
replan's time limit is a wall-clock guard: on a loaded machine one can read time_limit, with the same plan).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from functools import partial
from pathlib import Path

sys.path.insert(0, str(Path.cwd() / "bench"))

from hybridctl.__main__ import collect_rarely, single_threaded_blas

single_threaded_blas()
collect_rarely()


def _zero_seconds(value, also: str = "seconds"):  # type: ignore[no-untyped-def]
    if isinstance(value, dict):
        return {k: (0 if k in ("seconds", also) else _zero_seconds(v, also)) for k, v in value.items()}
    if isinstance(value, list):
        return [_zero_seconds(v, also) for v in value]
    return value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--scenarios", type=int, default=None, help="an evenly spaced sample of N")
    args = parser.parse_args()
    from failover_bench import _fleet
    from hybridctl.core.failover.drill import drill
    from hybridctl.core.failover.scenario import standard_scenarios
    from hybridctl.core.failover.serialize import drill_to_json
    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.parallel import map_in_processes

    inventory = _fleet(args.workloads, args.pools, args.seed)
    base = plan(inventory)
    scenarios = standard_scenarios(inventory)
    if args.scenarios:
        scenarios = scenarios[::max(1, len(scenarios) // args.scenarios)][:args.scenarios]
    before = os.times()
    started, cpu = time.perf_counter(), time.process_time()
    report = drill(inventory, base, scenarios, map_scenarios=partial(map_in_processes, workers=args.workers))
    wall = time.perf_counter() - started
    after = os.times()
    cpu_s = time.process_time() - cpu + (after.children_user - before.children_user) \
        + (after.children_system - before.children_system)
    text = json.dumps(_zero_seconds(json.loads(drill_to_json(report))), sort_keys=True, indent=1)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    # a replan's solver_status can read time_limit on a loaded machine (the limit is a wall-clock guard) where it
    # reads gap_limit otherwise, with the same plan: the second digest leaves it out
    steady = hashlib.sha256(json.dumps(_zero_seconds(json.loads(text), also="solver_status"), sort_keys=True)
                            .encode()).hexdigest()[:16]
    kept = Path("/tmp/hybridctl-drill-reports") / f"{digest}.json"  # to diff two trees' reports
    kept.parent.mkdir(exist_ok=True)
    kept.write_text(text)
    print(f"drill {args.workloads} workloads, {len(scenarios)} scenarios: wall {wall:.1f} s, CPU {cpu_s:.1f} s "
          f"(process and workers); passed {report.passed}; report sha256 {digest}, without solver_status {steady}")


if __name__ == "__main__":
    main()
