"""The price of revision 4's tier priority: on the generated bench fleets, the plan by revision 4's rule
(opportunistic work runs only in what the fixed and burst tiers leave) against the plan by revision 3's
(placed GPU-hours maximized tier by tier, opportunistic included, then cash).

Run:  .venv/bin/python bench/priority_price.py [--seeds 1 2 3] [--sizes 1000x100] [--scheduled 0 0.3]

For each fleet, a fresh interpreter per rule plans it with the default options (revision 3's rule is the same
planner without the stage of the others' cash alone, solver/priority.py's _others_first and
_opportunistic_beside_others turned off) and reports: the plan's cash a month, the fixed and burst tiers'
cash priced alone (checker/priority.py's alone_figures: what revision 4 holds at its least), the opportunistic
GPU-hours a month placed, and the planner's CPU seconds. Prints a markdown table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "cli"))


def one(workloads: int, pools: int, seed: int, scheduled: float, revision: int) -> dict[str, float]:
    from hybridctl.core.checker.priority import alone_figures
    from hybridctl.core.checker.rules import OPPORTUNISTIC, PairRules
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.core.solver import priority
    from hybridctl.drivers.inventory_files import load_inventory
    from inventory_gen import generate, to_yaml
    from plan_bench import bench_week

    if revision == 3:
        priority._others_first = lambda rank, r: False  # type: ignore[assignment]
        priority._opportunistic_beside_others = lambda units, model, values: False  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(to_yaml(generate(workloads, pools, seed, scheduled)))
        inventory = load_inventory(path).inventory
    began = time.process_time()
    result = plan(inventory, options=PlanOptions(week=bench_week()))
    cpu = time.process_time() - began
    rules = PairRules(inventory, {d.name: d for d in inventory.datasets})
    workloads_by_name = {w.name: w for w in inventory.workloads}
    pools_by_name = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    alone = alone_figures(result, workloads_by_name, pools_by_name, rules)
    opportunistic = sum(pl.gpus * workloads_by_name[pl.workload].hours for pl in result.placements
                        if rules.tier(workloads_by_name[pl.workload]) == OPPORTUNISTIC)
    return {"cash": result.total_usd_per_month, "alone": alone.cash, "fixed": alone.fixed, "burst": alone.burst,
            "opportunistic": opportunistic, "cpu": cpu, "unplaced": float(sum(u.replicas for u in result.unplaced))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--sizes", nargs="+", default=["1000x100"])
    parser.add_argument("--scheduled", type=float, nargs="+", default=[0.0, 0.3])
    parser.add_argument("--one", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        w, p, seed, share, revision = args.one
        print(json.dumps(one(int(w), int(p), int(seed), float(share), int(revision))))
        return
    print("| workloads × pools | scheduled | seed | rev 3 $/month | rev 4 $/month | price of rev 4 | "
          "fixed+burst alone rev 3 / rev 4 | opportunistic GPU-h rev 3 / rev 4 | unplaced replicas rev 3 / rev 4 | "
          "plan CPU-s rev 3 / rev 4 |")
    print("|" + "---|" * 10)
    for size in args.sizes:
        workloads, pools = (int(x) for x in size.split("x"))
        for share in args.scheduled:
            for seed in args.seeds:
                figures = {}
                for revision in (3, 4):
                    out = subprocess.run([sys.executable, __file__, "--one", str(workloads), str(pools), str(seed),
                                          str(share), str(revision)], check=True, capture_output=True, text=True)
                    figures[revision] = json.loads(out.stdout.strip().splitlines()[-1])
                old, new = figures[3], figures[4]
                price = new["cash"] - old["cash"]
                print(f"| {workloads:,} × {pools} | {100 * share:.0f} % | {seed} | {old['cash']:,.0f} | "
                      f"{new['cash']:,.0f} | {price:+,.0f} ({100 * price / old['cash']:+.1f} %) | "
                      f"{old['alone']:,.0f} / {new['alone']:,.0f} | {old['opportunistic']:,.0f} / "
                      f"{new['opportunistic']:,.0f} | {old['unplaced']:.0f} / {new['unplaced']:.0f} | "
                      f"{old['cpu']:.2f} / {new['cpu']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
