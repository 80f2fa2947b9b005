"""How long a drill's scenario takes to build the apply steps of its failover plan.

Run:  .venv/bin/python bench/steps_bench.py [--workloads 10000] [--pools 300] [--seed 1] [--every 10]
                                           [--cache /tmp/base.pickle]

Plans the base plan of a seeded synthetic fleet (bench/inventory_gen.py; ~2 s at 10,000
workloads; --cache keeps the inventory and base plan in a pickle for the next run), builds its
steps as a drill does (plain_steps: the base plan's first), then for every --every-th standard
scenario replans (not timed) and times the steps of the failover plan: CPU and wall time, as the
drill's plain_steps builds them (the placement delta of the pair is worked out before the timing:
the drill's impacts and checker need it first) and from scratch (no memo). Prints per-scenario
figures and their totals; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import pickle
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hybridctl.__main__ import single_threaded_blas  # noqa: E402

single_threaded_blas()  # as the console script does, before numpy is imported

from hybridctl.core.deploy.steps import apply_steps, cloud_stacks  # noqa: E402
from hybridctl.core.failover.plan_steps import REHEARSAL_DIGEST, plain_steps  # noqa: E402
from hybridctl.core.failover.replan import replan  # noqa: E402
from hybridctl.core.failover.scenario import standard_scenarios  # noqa: E402
from hybridctl.core.inventory.models import Inventory  # noqa: E402
from hybridctl.core.placement.planner import plan  # noqa: E402
from hybridctl.core.plan.delta import placement_delta  # noqa: E402
from hybridctl.core.plan.model import Plan  # noqa: E402
from inventory_gen import generate  # noqa: E402


def base_of(workloads: int, pools: int, seed: int, cache: Path | None) -> tuple[Inventory, Plan]:
    key = (workloads, pools, seed)
    if cache is not None and cache.exists():
        with cache.open("rb") as f:
            known = pickle.load(f)
        if known[0] == key:
            return known[1], known[2]
    inventory = Inventory.model_validate(generate(workloads, pools, seed))
    base = plan(inventory)
    if cache is not None:
        with cache.open("wb") as f:
            pickle.dump((key, inventory, base), f)
    return inventory, base


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--every", type=int, default=10, help="time every n-th standard scenario")
    parser.add_argument("--cache", type=Path, default=None, help="a pickle of the inventory and base plan")
    args = parser.parse_args()
    inventory, base = base_of(args.workloads, args.pools, args.seed, args.cache)
    scenarios = standard_scenarios(inventory)[::args.every]
    print(f"{len(inventory.workloads)} workloads, {len(base.placements)} placements, "
          f"{len(scenarios)} scenarios (every {args.every}th standard one)")
    steps_for = plain_steps(inventory)
    cpu, wall = time.process_time(), time.perf_counter()
    steps_for(base)
    print(f"base plan's steps: {time.process_time() - cpu:.3f} CPU-s, {time.perf_counter() - wall:.3f} s")
    drill_cpu: list[float] = []
    scratch_cpu: list[float] = []
    print(f"{'scenario':40} {'-/+ placements':>14} {'drill CPU-ms':>12} {'wall-ms':>8} {'scratch CPU-ms':>14}")
    for scenario in scenarios:
        after = replan(inventory, base, scenario.events).after
        delta = placement_delta(base, after)  # the drill's own code works it out for this pair anyway
        changed = f"{len(delta.removed)}/{len(delta.added)}"
        gc.collect()  # the replan's garbage is not the steps' cost
        cpu, wall = time.process_time(), time.perf_counter()
        steps_for(after)
        drill_cpu.append(time.process_time() - cpu)
        wall_s = time.perf_counter() - wall
        gc.collect()
        cpu = time.process_time()
        apply_steps(after, inventory, stacks=cloud_stacks(inventory, after, REHEARSAL_DIGEST))
        scratch_cpu.append(time.process_time() - cpu)
        print(f"{scenario.name[:40]:40} {changed:>14} {drill_cpu[-1] * 1e3:>12.1f} {wall_s * 1e3:>8.1f} "
              f"{scratch_cpu[-1] * 1e3:>14.1f}")
    for label, runs in (("drill (plain_steps)", drill_cpu), ("from scratch", scratch_cpu)):
        print(f"{label}: total {sum(runs):.3f} CPU-s, mean {statistics.mean(runs) * 1e3:.1f} ms, "
              f"median {statistics.median(runs) * 1e3:.1f} ms, max {max(runs) * 1e3:.1f} ms per scenario")


if __name__ == "__main__":
    main()
