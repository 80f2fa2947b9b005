"""Failover and drill timings. Prints figures; asserts nothing.

    .venv/bin/python bench/failover_bench.py [--sizes 1000,10000] [--pools 300] [--seed 1]
        [--drill-size 10000] [--drill-scenarios N] [--workers N]

1. failover after the loss of the busiest sites, on seeded synthetic fleets
   (bench/inventory_gen.py): the base plan, then replan() from it, the whole failover
   (replan, runbook and its rollback, as `drill` builds them), and the failover as the command
   computes it from an applied state (failover_of_state: the applied plan parsed from the state
   while a child digests the inventory, then the replan, the runbook with apply's steps and the
   whole check; the figure is the last three, the parse is printed apart; nothing read from or
   written to files); target at 10,000 workloads ≤ 1 s.
2. `drill --standard` on a synthetic fleet of --drill-size workloads, as `hybridctl drill` runs
   it (scenarios spread over --workers processes); --drill-scenarios N runs an evenly spaced
   sample of N (the figure printed then says so, with the time per scenario and the total at
   that rate); target ≤ 30 s for all.
3. `drill --standard` on inventories/enterprise: in process, and as the CLI end to end.
4. with --cli-size N: `hybridctl failover site-lost SITE` end to end, as a new process, on a fleet of N
   workloads written to disk (its YAML, and a state that applied its plan), in each output format.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import time
from collections import Counter
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from hybridctl.__main__ import single_threaded_blas  # noqa: E402

single_threaded_blas()  # as the console script does, before numpy is imported

from inventory_gen import generate  # noqa: E402


def _fleet(workloads: int, pools: int, seed: int):  # type: ignore[no-untyped-def]
    from hybridctl.core.inventory.models import Inventory

    return Inventory.model_validate(generate(workloads, pools, seed))


def _applied_state(inventory, plan):  # type: ignore[no-untyped-def]
    """The state an apply of `plan` leaves: what it deployed, and the plan's digest."""
    from functools import reduce

    from hybridctl.core.deploy.stackconfig import plan_digest
    from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
    from hybridctl.drivers.statemodel import State
    from hybridctl.executor import record_deployed
    from hybridctl.operations.failover_compute import steps_builder

    document = plan_to_dict(plan, plan_file=True)
    copy = plan_from_dict(document)
    graph = steps_builder(inventory, None, None, None, applied=copy)(copy).graph
    return reduce(record_deployed, graph, State(serial=1, applied_plan=document, applied_plan_digest=plan_digest(copy),
                                                site_kinds={s.name: s.kind.value for s in inventory.sites}))


def _busiest_sites(inventory, plan, count: int) -> list[tuple[str, int]]:  # type: ignore[no-untyped-def]
    gpus_at = Counter[str]()
    for p in plan.placements:
        gpus_at[p.site] += p.gpus
    return gpus_at.most_common(count)


def bench_replan(workloads: int, pools: int, seed: int) -> None:
    import hybridctl.core.failover.pipeline as pipeline
    from hybridctl.core.failover.drill import run_scenario
    from hybridctl.core.failover.events import Event, EventKind
    from hybridctl.core.failover.impact import impacts
    from hybridctl.core.failover.replan import FailoverOptions, replan
    from hybridctl.core.failover.scenario import Scenario
    from hybridctl.core.memo import RunMemo
    from hybridctl.core.placement.planner import plan
    from hybridctl.core.plan.serialize import plan_from_dict
    from hybridctl.operations.failover_compute import failover_of_state

    inventory = _fleet(workloads, pools, seed)
    started = time.perf_counter()
    base = plan(inventory)
    base_s = time.perf_counter() - started
    timed = _Timed(pipeline, "failover")
    for site, gpus in _busiest_sites(inventory, base, 2):
        started, cpu = time.perf_counter(), time.process_time()
        result = replan(inventory, base, [Event(EventKind.SITE_LOST, site)])
        replan_s, replan_cpu = time.perf_counter() - started, time.process_time() - cpu
        changes = impacts(inventory, result)
        on_site = {p.workload for p in base.placements if p.site == site}
        healthy_moved = sum(1 for i in changes if i.workload not in on_site)
        statuses = Counter(i.status.value for i in changes)
        started, cpu = time.perf_counter(), time.process_time()
        scenario = run_scenario(inventory, base, Scenario(f"site-lost-{site}", (Event(EventKind.SITE_LOST, site),)),
                                FailoverOptions())
        whole_s, whole_cpu = time.perf_counter() - started, time.process_time() - cpu
        # as the failover command computes it from an applied state: its applied plan parsed (the inventory
        # digested beside), apply's steps for both plans (the failover plan's stacks tagged with its digest), then
        # the whole check. The state (the plan document apply recorded, what applying it deployed, and its
        # digest) is made first, from a copy of the base plan, so that nothing worked out above is reused.
        state = _applied_state(inventory, dataclasses.replace(base))
        started = time.perf_counter()
        runbook = failover_of_state(inventory, state, partial(plan_from_dict, dict(state.applied_plan)),
                                    [Event(EventKind.SITE_LOST, site)], refs=None, public_key=None,
                                    options=FailoverOptions(), memo=RunMemo())
        parse_s = timed.started - started
        command_s, command_cpu = timed.seconds, timed.cpu
        print(f"{workloads:>6} workloads, {len(base.pools)} pools: base plan {base_s:6.2f} s; "
              f"site-lost {site} ({gpus} GPUs): replan {replan_s:6.2f} s (CPU {replan_cpu:.2f} s) in {result.passes} pass(es), "
              f"solver {result.after.solver.status}; {dict(statuses)}; healthy workloads moved: {healthy_moved}; "
              f"failover with runbook and rollback {whole_s:6.2f} s (CPU {whole_cpu:.2f} s; {scenario.steps} + "
              f"{scenario.rollback_steps} "
              f"steps{'; ' + scenario.runbook_problem if scenario.runbook_problem else ''}); "
              f"as the failover command computes it {command_s:6.2f} s (CPU {command_cpu:.2f} s; "
              f"{len(runbook.steps)} steps; after the applied plan's parse, {parse_s:.2f} s)")


class _Timed:
    """Wall and CPU time of the last call of module.name (the command's own flow calls it)."""

    def __init__(self, module, name: str) -> None:  # type: ignore[no-untyped-def]
        self.started = self.seconds = self.cpu = 0.0
        original = getattr(module, name)

        def timed(*args, **kwargs):  # type: ignore[no-untyped-def]
            self.started, cpu = time.perf_counter(), time.process_time()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds, self.cpu = time.perf_counter() - self.started, time.process_time() - cpu

        setattr(module, name, timed)


def bench_fleet_drill(workloads: int, pools: int, seed: int, limit: int | None, workers: int | None) -> None:
    from functools import partial

    from hybridctl.core.failover.drill import drill
    from hybridctl.core.failover.scenario import standard_scenarios
    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.parallel import map_in_processes, worker_count

    inventory = _fleet(workloads, pools, seed)
    started, cpu = time.perf_counter(), time.process_time()
    base = plan(inventory)
    print(f"drill --standard, {workloads} workloads: base plan {time.perf_counter() - started:.1f} s "
          f"(CPU {time.process_time() - cpu:.1f} s), not counted below")
    scenarios = standard_scenarios(inventory)
    # an evenly spaced sample keeps the mix of big site losses and small edge scenarios
    chosen = scenarios[::max(1, len(scenarios) // limit)][:limit] if limit else scenarios
    started, cpu = time.perf_counter(), time.process_time()
    report = drill(inventory, base, chosen, map_scenarios=partial(map_in_processes, workers=workers))
    seconds = time.perf_counter() - started
    children = os.times()
    cpu_s = time.process_time() - cpu + children.children_user + children.children_system
    per = seconds / max(len(chosen), 1)
    built = sum(1 for r in report.results if r.runbook_problem is None)
    what = f"all {len(scenarios)}" if len(chosen) == len(scenarios) else f"{len(chosen)} of {len(scenarios)}"
    print(f"drill --standard, {workloads} workloads: {what} scenarios in {seconds:.1f} s on "
          f"{workers or worker_count()} worker(s) ({per:.2f} s per scenario; all {len(scenarios)} at that rate: "
          f"~{per * len(scenarios):.0f} s); CPU {cpu_s:.1f} s (this process and its workers); runbooks and "
          f"rollbacks built for {built}; passed: {report.passed}")


def bench_drill() -> None:
    from hybridctl.core.failover.drill import drill
    from hybridctl.core.failover.scenario import standard_scenarios
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.drivers.inventory_files import load_inventory
    from plan_bench import bench_week

    enterprise = ROOT / "inventories" / "enterprise"
    started = time.perf_counter()
    inventory = load_inventory(enterprise).inventory
    report = drill(inventory, plan(inventory, options=PlanOptions(week=bench_week())), standard_scenarios(inventory))
    in_process = time.perf_counter() - started
    slowest = max(report.results, key=lambda r: r.seconds)
    print(f"drill --standard enterprise, in process: {in_process:.2f} s for {len(report.results)} scenarios "
          f"(slowest {slowest.scenario.name} {slowest.seconds:.3f} s); passed: {report.passed}")
    # the drill command registers itself on import (also when app._register already imports it)
    command = [sys.executable, "-c", "import sys, hybridctl.commands.failover_cmds; "
               "from hybridctl.commands.app import run; run(sys.argv[1:])", "drill", str(enterprise), "--standard"]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    print(f"drill --standard enterprise, CLI end to end: {time.perf_counter() - started:.2f} s (exit {done.returncode})")
    if done.returncode not in (0, 1):
        print(done.stderr.strip()[-500:])


def bench_cli(workloads: int, pools: int, seed: int) -> None:
    """`hybridctl failover site-lost SITE` as a new process, from a state that applied the fleet's plan."""
    import tempfile

    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.state import StateStore
    from inventory_gen import to_yaml

    with tempfile.TemporaryDirectory(prefix="hctl-failover-cli-") as scratch:
        root = Path(scratch)
        (root / "inventory.yaml").write_text(to_yaml(generate(workloads, pools, seed)), encoding="utf-8")
        inventory = load_inventory(root / "inventory.yaml").inventory
        base = plan(inventory)
        state = dataclasses.replace(_applied_state(inventory, base), inventory_path=str(root / "inventory.yaml"))
        store = StateStore(root / "state")
        store.lock.acquire(command="bench")
        try:
            store.write(state)
        finally:
            store.lock.release()
        for site, _ in _busiest_sites(inventory, base, 2):
            for output in ("markdown", "json", "table"):
                command = [sys.executable, "-m", "hybridctl", "failover", "site-lost", site, "--state",
                           str(root / "state"), "--format", output]
                started = time.perf_counter()
                done = subprocess.run(command, capture_output=True, check=False, env=dict(os.environ, NO_COLOR="1"))
                print(f"{workloads:>6} workloads: `hybridctl failover site-lost {site} --format {output}` end to end "
                      f"{time.perf_counter() - started:.2f} s (exit {done.returncode}, {len(done.stdout):,} bytes out)")
                if done.returncode not in (0, 1):
                    print(done.stderr.decode(errors="replace").strip()[-500:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--drill-size", type=int, default=10_000, help="0: skip the fleet drill")
    parser.add_argument("--drill-scenarios", type=int, default=None, help="run an evenly spaced sample of N")
    parser.add_argument("--workers", type=int, default=None, help="default: the CPUs this process may use")
    parser.add_argument("--cli-size", type=int, default=0, help="0: skip the command end to end")
    args = parser.parse_args()
    for size in (int(s) for s in args.sizes.split(",") if s):
        bench_replan(size, args.pools, args.seed)
    if args.drill_size:
        bench_fleet_drill(args.drill_size, args.pools, args.seed, args.drill_scenarios, args.workers)
    bench_drill()
    if args.cli_size:
        bench_cli(args.cli_size, args.pools, args.seed)


if __name__ == "__main__":
    main()
