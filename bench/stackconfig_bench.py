"""How long the plan -> stack configuration mapping takes, and that the CLI starts without pulumi.

Run:  .venv/bin/python bench/stackconfig_bench.py [--workloads 10000] [--pools 300] [--repeat 5]

Prints: for the enterprise example and for a seeded synthetic plan (bench/inventory_gen.py),
the time of stack_configs() (median and best of --repeat runs), of diff_stack_configs()
against an empty and against the same configuration, and of the config encoding the driver
does (flatten_config); then the import time of `hybridctl.commands.app` in a fresh interpreter
and whether it (or hybridctl.core.deploy.stackconfig) loaded pulumi. Exits 1 if pulumi was imported.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hybridctl.core.deploy.stackconfig import stack_configs  # noqa: E402
from hybridctl.core.deploy.stackdiff import diff_stack_configs  # noqa: E402
from hybridctl.core.inventory.models import Inventory  # noqa: E402
from hybridctl.core.placement.planner import PlanOptions, plan  # noqa: E402
from hybridctl.core.plan.model import Plan  # noqa: E402
from hybridctl.drivers.inventory_files import load_inventory  # noqa: E402
from hybridctl.drivers.pulumi import flatten_config  # noqa: E402
from hybridctl.paths import inventories_dir  # noqa: E402
from inventory_gen import generate  # noqa: E402
from plan_bench import bench_week  # noqa: E402

IMPORT_PROBE = """
import sys, time
began = time.perf_counter()
import {module}
elapsed = time.perf_counter() - began
loaded = sorted(m for m in sys.modules if m == "pulumi" or m.startswith("pulumi."))
print(f"{{elapsed:.3f}} {{len(loaded)}}")
"""


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float]:
    runs = []
    for _ in range(repeat):
        began = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - began)
    return statistics.median(runs), min(runs)


def report(label: str, inventory: Inventory, plan_: Plan, repeat: int) -> None:
    configs = stack_configs(inventory, plan_)
    stacks = len(configs.gpu_pools) + len(configs.queues)
    node_groups = sum(len(s.node_pools) for s in configs.gpu_pools)
    local_queues = sum(len(q.workloads) for q in configs.queues)
    print(f"{label}: {len(inventory.workloads)} workloads, {len(plan_.placements)} placements -> "
          f"{stacks} stacks, {node_groups} node groups, {local_queues} local queues")
    for name, fn in (
        ("stack_configs", lambda: stack_configs(inventory, plan_)),
        ("stack_configs (digest given)", lambda: stack_configs(inventory, plan_, "sha256:given")),
        ("diff from nothing", lambda: diff_stack_configs(None, configs)),
        ("diff, no change", lambda: diff_stack_configs(configs, configs)),
        ("encode for the driver", lambda: [flatten_config(c.values()) for c in configs.gpu_pools]
                                          + [flatten_config(c.values()) for c in configs.queues]),
    ):
        median, best = timed(fn, repeat)
        print(f"  {name:<30} median {median * 1000:8.2f} ms   best {best * 1000:8.2f} ms")


def import_check(module: str) -> bool:
    done = subprocess.run([sys.executable, "-c", IMPORT_PROBE.format(module=module)], capture_output=True, text=True, check=True)
    elapsed, loaded = done.stdout.split()
    clean = loaded == "0"
    print(f"import {module}: {float(elapsed) * 1000:.0f} ms, pulumi modules loaded: {loaded}{'' if clean else '  <-- FAIL'}")
    return clean


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    enterprise = load_inventory(inventories_dir() / "enterprise").inventory
    report("enterprise example", enterprise, plan(enterprise, options=PlanOptions(week=bench_week())), args.repeat)

    began = time.perf_counter()
    synthetic = Inventory.model_validate(generate(args.workloads, args.pools, args.seed))
    generated = time.perf_counter() - began
    began = time.perf_counter()
    synthetic_plan = plan(synthetic)
    planned = time.perf_counter() - began
    print(f"synthetic inventory: generated+validated in {generated:.1f} s, planned in {planned:.1f} s "
          f"(solver {synthetic_plan.solver.status}, {len(synthetic_plan.unplaced)} unplaced)")
    report(f"synthetic seed {args.seed}", synthetic, synthetic_plan, args.repeat)

    clean = all([import_check("hybridctl.commands.app"), import_check("hybridctl.core.deploy.stackconfig"),
                 import_check("hybridctl.drivers.pulumi")])
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
