"""How long `hybridctl synth` takes on an example inventory, and where the time goes.

Run:  .venv/bin/python bench/synth_bench.py [--example enterprise] [--repeat 3]

Prints, in one fresh interpreter: the import of pulumi + pulumi_aws + pulumi_kubernetes (paid
once per synth), planning the example, then per stack and in total the time to run the stack
programs under Pulumi's mocks (median and best of --repeat runs), and the time to write the
output directory; then the wall time of the whole `hybridctl synth` command in a subprocess.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--example", default="enterprise")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    began = time.perf_counter()
    import pulumi  # noqa: F401
    import pulumi_aws  # noqa: F401
    import pulumi_kubernetes  # noqa: F401
    print(f"import pulumi, pulumi_aws, pulumi_kubernetes: {time.perf_counter() - began:.2f} s")

    from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.synth import synth_stack
    from hybridctl.drivers.synth_write import write_synth
    from hybridctl.paths import inventories_dir, stacks_dir
    from plan_bench import bench_week

    began = time.perf_counter()
    inventory = load_inventory(inventories_dir() / args.example).inventory
    the_plan = plan(inventory, options=PlanOptions(week=bench_week()))
    configs = stack_configs(inventory, the_plan)
    print(f"load + plan + stack_configs of {args.example}: {time.perf_counter() - began:.2f} s")

    specs = [*configs.gpu_pools, *configs.queues]
    totals = []
    for round_ in range(args.repeat):
        runs, round_began = [], time.perf_counter()
        for spec in specs:
            t = time.perf_counter()
            runs.append(synth_stack(spec.project, spec.stack_name, spec.values(), stacks_dir()))
            if round_ == 0:
                print(f"  {spec.stack_name}: {len(runs[-1].resources)} resources, {time.perf_counter() - t:.2f} s "
                      "(first run: includes importing the stack's modules)")
        totals.append(time.perf_counter() - round_began)
    print(f"all {len(specs)} stacks under mocks: median {statistics.median(totals):.2f} s, best {min(totals):.2f} s "
          f"({sum(len(r.resources) for r in runs)} resources)")
    with tempfile.TemporaryDirectory() as out:
        t = time.perf_counter()
        write_synth(Path(out), runs, plan_digest=plan_digest(the_plan), inventory=inventory.name)
        print(f"write the output directory: {time.perf_counter() - t:.2f} s")
        t = time.perf_counter()
        done = subprocess.run([str(Path(sys.executable).parent / "hybridctl"), "synth",
                               str(inventories_dir() / args.example), "--out", str(Path(out) / "cli")],
                              capture_output=True, text=True, check=False)
        print(f"`hybridctl synth {args.example}` end to end: {time.perf_counter() - t:.2f} s (exit {done.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
