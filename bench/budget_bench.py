"""What `policies.budget_action: shed` costs and keeps on a generated fleet (issue 44, item 3).

Plans the fleet without a budget, then with a budget of its committed pools plus --share of the rest of its
cash, under shed: prints the CPU seconds of each, the GPU-hours of each tier before and after, the budget
left unspent, how many unplaced replicas name the budget, and the independent checker's verdict. Usage:

    .venv/bin/python bench/budget_bench.py --size 10000x300 --seed 1 --share 0.9
    .venv/bin/python bench/budget_bench.py --size 1000x100 --seed 1 --share 0.8 --scheduled 0.3
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIERS = ("fixed", "burst", "opportunistic")


def main() -> None:
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.core.plan.model import Plan
    from hybridctl.core.week.segments import IsoWeek
    from inventory_gen import generate

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="1000x100", help="WORKLOADSxPOOLS")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--share", type=float, default=0.9, help="of the non-committed cash the budget allows")
    parser.add_argument("--scheduled", type=float, default=0.0, help="share of workloads with a schedule")
    args = parser.parse_args()
    workloads, pools = (int(n) for n in args.size.split("x"))
    options = PlanOptions(week=IsoWeek(2026, 48))
    document = generate(workloads, pools, args.seed, scheduled=args.scheduled)
    document.setdefault("policies", {}).pop("monthly_budget_usd", None)
    began = time.process_time()
    free = plan(Inventory.model_validate(document), options=options)
    free_s = time.process_time() - began
    budget = round(free.committed_usd_per_month + args.share * (free.total_usd_per_month - free.committed_usd_per_month), 2)
    document["policies"].update(monthly_budget_usd=budget, budget_action="shed")
    inventory = Inventory.model_validate(document)
    began = time.process_time()
    shed = plan(inventory, options=options)
    shed_s = time.process_time() - began

    def gpu_hours(p: Plan, tier: str) -> float:
        return sum(pl.gpus * pl.hours_per_month for pl in p.placements if pl.tier == tier)

    print(f"{args.size} seed {args.seed}: without a budget ${free.total_usd_per_month:,.2f} in {free_s:.2f} CPU-s; "
          f"budget ${budget:,.2f}: ${shed.total_usd_per_month:,.2f} (${budget - shed.total_usd_per_month:,.2f} unspent, "
          f"over budget: {shed.over_budget}) in {shed_s:.2f} CPU-s, {shed.solver.status}")
    for tier in TIERS:
        print(f"  {tier}: {gpu_hours(free, tier):,.0f} -> {gpu_hours(shed, tier):,.0f} GPU-h a month")
    named = sum(1 for u in shed.unplaced if u.reason.startswith("budget:"))
    print(f"  unplaced: {len(shed.unplaced)}, {named} of them for the budget; checker: "
          f"{len(check_plan(inventory, shed))} violation(s); max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MiB")


if __name__ == "__main__":
    main()
