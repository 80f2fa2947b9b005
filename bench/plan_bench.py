"""How fast and how good the planner is, against its LP bound and a greedy baseline.

Run:  .venv/bin/python bench/plan_bench.py [--seeds 1 2 3] [--sizes 1000x100 10000x300] [--scheduled 0 0.3]
      .venv/bin/python bench/plan_bench.py --cost-of-time --scheduled 0.3 [--sizes ...] [--seeds ...]

For each size (workloads x pools) and seed, a fresh interpreter generates the seeded
inventory (bench/inventory_gen.py), loads it as the CLI does (parse, validate, checks), plans
it with the default options, and reports: the plan's wall and CPU time, objective (cost plus
the penalty on unplaced replicas), the LP bound of the model and the gap to it, the bound the
planner proved, unplaced workloads, the process's peak memory (maxrss: generation, loading
and planning together), the violations check_plan() finds (must be 0), and, on the same
inventory, the cost and unplaced count of the greedy baseline (bench/greedy.py). Then the
validation time of the inventories and the time of `hybridctl --help` (best of 5), which
are issue 2's figures. Prints markdown tables. `--scheduled 0 0.3` measures today's fleets (0) beside
fleets with 30 % of their workloads scheduled (inventory revision 3).

`--cost-of-time`: the cost of time, for each scheduled share above 0: the same fleet planned with its
windows and without them (each workload keeps its hours a month), the saving in dollars and in rented
GPU-hours a month (pay-per-use pools' cash / their price per GPU-hour; committed pools are paid either way).

CPU time is shown beside wall time because the benchmark machine is often shared: the
solver runs in one thread, so CPU time is what the plan costs when the machine is idle.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridctl.core.week.segments import IsoWeek

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "cli"))


def bench_week() -> IsoWeek:
    """The week every scheduled fleet is planned for: a fixed one, so that figures taken on different
    days compare (a week with a daylight-saving change has other segments)."""
    from hybridctl.core.week.segments import IsoWeek

    return IsoWeek(2026, 48)


def _lp_bound(inventory: object) -> float:
    import numpy as np
    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
    from hybridctl.core.placement.formulation import formulate
    from hybridctl.core.placement.planner import DEFAULT_MOVE_THRESHOLD_USD
    from hybridctl.core.placement.timed_plan import plan_week
    from hybridctl.core.placement.units import PoolTable, build_units, components
    from hybridctl.core.pricing.rates import committed_total_usd_per_month
    from hybridctl.core.solver import highs_run
    from hybridctl.core.solver.effort import Effort
    from hybridctl.core.solver.milp import Model

    assert isinstance(inventory, Inventory)
    pools = pool_infos(inventory)
    table = PoolTable.of(pools)
    week = plan_week(inventory, bench_week())  # a scheduled fleet's bound is of the timed model
    units = build_units(demands(inventory), EligibilityIndex(inventory, pools), None, table, week=week)
    ceilings = {w.name: w.max_usd_per_month for w in inventory.workloads if w.max_usd_per_month is not None}
    cash = inventory.policies.cost_model.value == "cash"
    # the committed pools are a constant of the cash objective, which the plan's objective includes
    constant = committed_total_usd_per_month(pools) if cash else 0.0

    def relaxation_bound(model: Model) -> float:  # the LP relaxation's optimum: a proven lower bound
        run = highs_run.run(model, np.arange(model.columns, dtype=np.int64), model.lower, integer=False,
                            effort=Effort(), gap=0.0)
        if run.values is None:
            raise RuntimeError(f"the LP relaxation was not solved (status {run.status})")
        return float(run.bound)

    return constant + sum(relaxation_bound(formulate([units[i] for i in group], table, ceilings,
                                                     DEFAULT_MOVE_THRESHOLD_USD, cash=cash, week=week))
                          for group in components(units))


def one(workloads: int, pools: int, seed: int, scheduled: float = 0.0, gap: float | None = None,
        providers: tuple[str, ...] = ("aws",)) -> dict[str, object]:
    """Measure one instance in this process (run in a fresh interpreter per instance)."""
    from greedy import greedy
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.placement.planner import DEFAULT_GAP, PlanOptions, plan
    from hybridctl.drivers.inventory_files import load_inventory
    from inventory_gen import generate, to_yaml

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(to_yaml(generate(workloads, pools, seed, scheduled, providers)))
        began = time.perf_counter()
        inventory = load_inventory(path).inventory
        validate_s = time.perf_counter() - began
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    began, began_cpu = time.perf_counter(), time.process_time()
    result = plan(inventory, options=PlanOptions(week=bench_week(), gap=DEFAULT_GAP if gap is None else gap))
    wall, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    rss_planned = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    lp = _lp_bound(inventory)
    baseline = greedy(inventory)
    objective = result.solver.objective
    return {
        "workloads": workloads, "pools": pools, "seed": seed, "validate_s": validate_s, "scheduled": scheduled,
        "segments": len(result.segments) or 1,
        "plan_s": wall, "plan_cpu_s": cpu, "objective": objective, "lp_bound": lp,
        "gap_lp": max(0.0, (objective - lp) / objective), "gap": result.solver.gap, "status": result.solver.status,
        "method": result.solver.method, "unplaced": len(result.unplaced),
        "unplaced_replicas": sum(u.replicas for u in result.unplaced),
        "cost": result.total_usd_per_month, "violations": len(check_plan(inventory, result)),
        "rss_loaded_mib": rss_loaded / 1024, "rss_mib": rss_planned / 1024,
        "greedy_cost": baseline.total_usd, "greedy_unplaced": baseline.unplaced_demands,
        "greedy_unplaced_replicas": baseline.unplaced_replicas,
    }


def _rented_gpu_hours(result: object) -> float:
    """GPU-hours a month the plan pays in pay-per-use pools (their cash / price per GPU-hour)."""
    from hybridctl.core.plan.model import Plan

    assert isinstance(result, Plan)
    return sum(p.usd_per_month / p.usd_per_gpu_hour for p in result.pools if not p.committed and p.usd_per_gpu_hour)


def cost_of_time(workloads: int, pools: int, seed: int, scheduled: float) -> dict[str, object]:
    """The same scheduled fleet planned with its windows and without them (each workload keeps its hours a
    month, and runs them anywhere in the month: revision 2's model, where a part-time replica holds its GPUs
    all month): what planning with a clock saves. Run in a fresh interpreter per instance."""
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.drivers.inventory_files import load_inventory
    from inventory_gen import generate, to_yaml

    fleet = generate(workloads, pools, seed, scheduled)
    figures: dict[str, object] = {"workloads": workloads, "pools": pools, "seed": seed, "scheduled": scheduled}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(to_yaml(fleet))
        timed = load_inventory(path).inventory
        hours = {w.name: w.hours for w in timed.workloads}  # the windows' default hours made explicit
        for w in fleet["workloads"]:
            if w.pop("schedule", None) is not None:
                w["hours_per_month"] = hours[w["name"]]
        path.write_text(to_yaml(fleet))
        untimed = load_inventory(path).inventory
    for label, inventory in (("timed", timed), ("untimed", untimed)):
        began = time.perf_counter()
        result = plan(inventory, options=PlanOptions(week=bench_week()))
        figures[f"{label}_s"] = time.perf_counter() - began
        figures[f"{label}_usd"] = result.total_usd_per_month
        figures[f"{label}_rented_gpu_hours"] = _rented_gpu_hours(result)
        figures[f"{label}_unplaced_replicas"] = sum(u.replicas for u in result.unplaced)
        figures[f"{label}_status"] = result.solver.status
    return figures


def _print_cost_of_time(rows: list[dict[str, object]]) -> None:
    print("| workloads × pools | scheduled | seed | with windows $/month | without $/month | saving $/month | "
          "rented GPU-h/month with | without | saving GPU-h | unplaced replicas with / without | plan s with / without |")
    print("|" + "---|" * 11)
    for r in rows:
        t_usd, u_usd = float(r["timed_usd"]), float(r["untimed_usd"])  # type: ignore[arg-type]
        t_gh, u_gh = float(r["timed_rented_gpu_hours"]), float(r["untimed_rented_gpu_hours"])  # type: ignore[arg-type]
        print(f"| {r['workloads']:,} × {r['pools']} | {100 * float(r['scheduled']):.0f} % | {r['seed']} | "  # type: ignore[arg-type]
              f"{t_usd:,.0f} | {u_usd:,.0f} | {u_usd - t_usd:,.0f} ({100 * (u_usd - t_usd) / u_usd:.1f} %) | "
              f"{t_gh:,.0f} | {u_gh:,.0f} | {u_gh - t_gh:,.0f} | {r['timed_unplaced_replicas']} / "
              f"{r['untimed_unplaced_replicas']} | {float(r['timed_s']):.2f} / {float(r['untimed_s']):.2f} |")  # type: ignore[arg-type]


def _help_seconds(runs: int) -> float:
    exe = Path(sys.executable).with_name("hybridctl")
    command = [str(exe), "--help"] if exe.exists() else [sys.executable, "-m", "hybridctl", "--help"]
    best = float("inf")
    for _ in range(runs):
        began = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True)
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--sizes", nargs="+", default=["1000x100", "10000x300"])
    parser.add_argument("--scheduled", type=float, nargs="+", default=[0.0], metavar="SHARE",
                        help="shares of the fleet with schedule windows (0.3: 30 %%), each measured beside the others")
    parser.add_argument("--cost-of-time", action="store_true",
                        help="for each scheduled share above 0: the fleet planned with and without its windows")
    parser.add_argument("--gap", type=float, default=None,
                        help="the planner's relative MIP gap, as `plan --gap` (default: the planner's own)")
    parser.add_argument("--providers", nargs="+", default=["aws"], choices=["aws", "gcp", "azure"],
                        help="the cloud regions' providers, region i on the i-th (mod their number): "
                             "`--providers aws gcp azure` for a three-cloud fleet (inventory revision 4)")
    parser.add_argument("--time-cost-one", nargs=4, help=argparse.SUPPRESS)
    parser.add_argument("--one", nargs=4, metavar=("WORKLOADS", "POOLS", "SEED", "SCHEDULED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(int(args.one[0]), int(args.one[1]), int(args.one[2]), float(args.one[3]), args.gap,
                             tuple(args.providers))))
        return
    if args.time_cost_one:
        print(json.dumps(cost_of_time(int(args.time_cost_one[0]), int(args.time_cost_one[1]),
                                      int(args.time_cost_one[2]), float(args.time_cost_one[3]))))
        return
    if args.cost_of_time:
        costs = []
        for size in args.sizes:
            workloads, pools = (int(n) for n in size.split("x"))
            for share in (s for s in args.scheduled if s > 0):
                for seed in args.seeds:
                    out = subprocess.run([sys.executable, __file__, "--time-cost-one", str(workloads), str(pools),
                                          str(seed), str(share)], check=True, capture_output=True, text=True).stdout
                    costs.append(json.loads(out.strip().splitlines()[-1]))
        _print_cost_of_time(costs)
        return
    rows = []
    for size in args.sizes:
        workloads, pools = (int(n) for n in size.split("x"))
        for share in args.scheduled:
            for seed in args.seeds:
                gap = [] if args.gap is None else ["--gap", str(args.gap)]
                out = subprocess.run([sys.executable, __file__, "--one", str(workloads), str(pools), str(seed),
                                      str(share), *gap, "--providers", *args.providers], check=True,
                                     capture_output=True, text=True).stdout
                rows.append(json.loads(out.strip().splitlines()[-1]))
                print(f"measured {workloads} x {pools} seed {seed} scheduled {share}", file=sys.stderr)
    print("| workloads × pools | scheduled (segments) | seed | plan s (wall) | plan s (CPU) | objective | LP bound | gap to LP | "
          "proven gap | status | unplaced (replicas) | peak RSS MiB | violations | plan $/month | "
          "greedy $/month | greedy unplaced (replicas) | plan / greedy cost |")
    print("|" + "---|" * 17)
    for r in rows:
        print(f"| {r['workloads']:,} × {r['pools']} | {100 * r['scheduled']:.0f} % ({r['segments']}) | {r['seed']} | {r['plan_s']:.2f} | {r['plan_cpu_s']:.2f} | "
              f"{r['objective']:,.0f} | {r['lp_bound']:,.0f} | {100 * r['gap_lp']:.3f} % | {100 * r['gap']:.3f} % | "
              f"{r['status']} | {r['unplaced']} ({r['unplaced_replicas']}) | {r['rss_mib']:.0f} | "
              f"{r['violations']} | {r['cost']:,.0f} | {r['greedy_cost']:,.0f} | "
              f"{r['greedy_unplaced']} ({r['greedy_unplaced_replicas']}) | {r['cost'] / r['greedy_cost']:.3f} |")
    print()
    print("| figure | value |")
    print("|---|---|")
    for size in args.sizes:
        workloads, pools = (int(n) for n in size.split("x"))
        times = [r["validate_s"] for r in rows if r["workloads"] == workloads and r["pools"] == pools
                 and r["scheduled"] == args.scheduled[0]]
        print(f"| validate (load_inventory) {workloads:,} × {pools}, median of {len(times)} | "
              f"{statistics.median(times):.2f} s |")
    print(f"| `hybridctl --help`, best of 5 | {_help_seconds(5):.2f} s |")


if __name__ == "__main__":
    main()
