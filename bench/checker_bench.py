"""What the plan checker costs: the CLI runs it after every plan and replan.

Prints, per size, the seconds to plan, the seconds to check that plan (best of --repeat), and
the check's share of plan + check. Usage:

    .venv/bin/python bench/checker_bench.py                    # 10000 workloads x 300 pools
    .venv/bin/python bench/checker_bench.py --sizes 1000x100 10000x300 --repeat 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))


def measure(workloads: int, pools: int, seed: int, repeat: int) -> dict[str, float | int]:
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.inventory_files import load_inventory
    from inventory_gen import generate, to_yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(to_yaml(generate(workloads, pools, seed)))
        inventory = load_inventory(path).inventory
    began = time.perf_counter()
    result = plan(inventory)
    plan_s = time.perf_counter() - began
    check_s = float("inf")
    violations = 0
    for _ in range(repeat):
        began = time.perf_counter()
        violations = len(check_plan(inventory, result))
        check_s = min(check_s, time.perf_counter() - began)
    return {"workloads": workloads, "pools": pools, "placements": len(result.placements), "plan_s": plan_s,
            "check_s": check_s, "violations": violations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["10000x300"], help="WORKLOADSxPOOLS")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"{'workloads':>9} {'pools':>5} {'placements':>10} {'plan s':>8} {'check s':>8} {'check share':>11} violations")
    for size in args.sizes:
        w, p = (int(x) for x in size.split("x"))
        r = measure(w, p, args.seed, args.repeat)
        share = r["check_s"] / (r["plan_s"] + r["check_s"])
        print(f"{r['workloads']:>9} {r['pools']:>5} {r['placements']:>10} {r['plan_s']:>8.2f} {r['check_s']:>8.3f} "
              f"{share:>10.1%} {r['violations']}")


if __name__ == "__main__":
    main()
