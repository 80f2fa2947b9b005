"""Whole machines for machine-sized gangs on committed pools (inventory revision 4, "Time"), worked by hand.

An owned H100 pool of 8-GPU machines, an always-on 2-GPU notebook (it takes one machine: the smaller
replicas that run a segment whole are packed into ceil(their GPUs / 8) machines), and 8-GPU jobs inside a
24-hour window on Monday. GPU-hours alone (revision 3) let two jobs of 19 h share the one free machine:
2 x 8 x 19 = 304 GPU-hours beside the notebook's 48 fit in 16 x 24 = 384; in machines they need
2 x 19 / 24 = 1.58 of the one machine left.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import LoadedInventory, load_sources
from hybridctl.core.placement.planner import plan
from hybridctl.core.solver import solve as solve_module
from support.plan_week import AT_PLAN_WEEK

MONDAY = '{days: mon, from: "00:00", to: "24:00"}'


def _text(gpus: int, smaller: list[int], jobs: int, weekly_hours: float, *, size: int = 8,
          window: str | None = MONDAY, cloud: bool = False) -> str:
    site = (["    kind: cloud", "    provider: aws", "    region: us-east-1", "    cluster: ml"] if cloud
            else ["    kind: onprem"])
    pool = (f"instance_type: p5.48xlarge, max_gpus: {gpus}" if cloud else f"gpus: {gpus}, gpus_per_node: 8")
    lines = ["version: 1", "name: gangs", "sites:", "  - name: dc", *site, "    jurisdiction: EU",
             "    egress_usd_per_gb: 0", "    latency_ms: {}", "    pools:",
             f"      - {{name: own, gpu: H100, {pool}, capacity_type: reserved, usd_per_gpu_hour: 2.0}}", "workloads:"]
    for i, count in enumerate(smaller):
        lines += [f"  - name: notebook-{i}", "    type: realtime_inference", f"    gpu: {{types: [H100], count: {count}}}"]
    for i in range(jobs):
        lines += [f"  - name: job-{'abcdefgh'[i]}", "    type: training",
                  f"    gpu: {{types: [H100], count: {size}{', multi_node: true' if size > 8 else ''}}}",
                  f"    hours_per_month: {weekly_hours * 730 / 168:.6f}"]
        if window is not None:
            lines += ["    schedule:", f"      windows: [{window}]"]
    return "\n".join(lines) + "\n"


def load(*args: Any, **kwargs: Any) -> LoadedInventory:
    """The inventory, loaded as validate loads it (its warnings kept)."""
    return load_sources([Source("inv.yaml", _text(*args, **kwargs))])


def capacity_warnings(loaded: LoadedInventory) -> list[str]:
    return [d.message for d in loaded.warnings if d.code == "demand-exceeds-capacity"]


def unplaced_jobs(loaded: LoadedInventory) -> list[str]:
    """The plan's unplaced workloads, checked; and validate's capacity warning says so exactly when there are."""
    result = plan(loaded.inventory, options=AT_PLAN_WEEK)
    assert check_plan(loaded.inventory, result) == []
    unplaced = [u.workload for u in result.unplaced]
    assert bool(capacity_warnings(loaded)) == bool(unplaced)
    return unplaced


def test_two_19_hour_jobs_do_not_share_the_one_free_machine() -> None:
    loaded = load(16, [2], 2, 19)
    inventory = loaded.inventory
    result = plan(inventory, options=AT_PLAN_WEEK)
    assert check_plan(inventory, result) == []
    assert [(u.workload, u.replicas) for u in result.unplaced] == [("job-b", 1)]
    (reason,) = [u.reason for u in result.unplaced]
    assert reason.endswith("; on committed pools a replica of 8 GPUs runs on whole machines of its own (0.79 on "
                           "average over its window): own leaves 1 machine beside its smaller whole-segment "
                           "replicas, 0.79 held by other machine-sized ones")
    # validate agrees: before, it counted 18 GPUs against 16 and plan placed all three
    assert capacity_warnings(loaded) == [
        "machine-sized replicas of H100 need 38.00 machine-hours in Mon 00:00-Tue 00:00 UTC, and the H100 pools' "
        "machines of 8 GPUs left beside the smaller replicas that run the whole segments give 24.00 (committed "
        "pools give a gang whole machines); some workloads will stay unplaced"]


def test_a_reserved_cloud_pool_counts_its_instance_types_machines() -> None:
    # reserved p5.48xlarge: 8 GPUs per node from the catalog, committed like an owned pool
    assert unplaced_jobs(load(16, [2], 2, 19, cloud=True)) == ["job-b"]
    assert unplaced_jobs(load(16, [2], 2, 12, cloud=True)) == []


@pytest.mark.parametrize(("gpus", "fits"), [(24, True), (16, False)])
def test_exact_fits_in_machines(gpus: int, fits: bool) -> None:
    # two jobs of 12 h in the 24 h window need 1 machine on average; three of 16 h need 2: the pool has
    # 2 machines beside the notebook at 24 GPUs (machines == need), 1 at 16 (need - 1)
    assert unplaced_jobs(load(gpus, [2], 3, 16)) == ([] if fits else ["job-b", "job-c"])
    assert unplaced_jobs(load(16, [2], 2, 12)) == []  # 2 x 12 / 24: exactly the one machine


def test_a_gang_of_16_gpus_takes_two_machines_while_it_runs() -> None:
    # 32 GPUs = 4 machines, the notebook packs into 1: 3 left; two 2-machine gangs need 2 x 2 x 18 / 24 = 3
    assert unplaced_jobs(load(32, [2], 2, 18, size=16)) == []
    # 19 h: 3.17 machines, though GPU-hours fit (48 + 2 x 16 x 19 = 656 of 768)
    assert unplaced_jobs(load(32, [2], 2, 19, size=16)) == ["job-b"]


def test_smaller_whole_segment_replicas_pack_into_whole_machines() -> None:
    # 8 GPUs of smaller replicas pack into one machine: two of 3 left for 2 x 20 / 24 = 1.67 machines of jobs
    assert unplaced_jobs(load(24, [2, 2, 4], 2, 20)) == []
    # 10 GPUs take two: one machine left (GPU-hours would fit: 240 + 320 of 576)
    assert unplaced_jobs(load(24, [2, 4, 4], 2, 20)) == ["job-b"]


def test_a_week_of_one_segment_counts_the_same_machines() -> None:
    # a 168-hour window: one segment; two jobs of 100 h a week need 1.19 of the one machine left
    every_day = '{days: mon-sun, from: "00:00", to: "24:00"}'
    assert unplaced_jobs(load(16, [2], 2, 100, window=every_day)) == ["job-b"]
    assert unplaced_jobs(load(16, [2], 2, 84, window=every_day)) == []


def test_gpus_beyond_whole_machines_hold_smaller_replicas_first() -> None:
    # 12 GPUs of 8 per node: one machine and 4 GPUs. Untimed (revision 2: every replica holds its GPUs all
    # month), a 4-GPU service beside an 8-GPU gang fits: floor((12 - 4) / 8) = 1 machine is left for the gang
    inventory = load(12, [4], 1, 168, window=None).inventory
    result = plan(inventory, options=AT_PLAN_WEEK)
    assert not result.segments and not result.unplaced
    assert check_plan(inventory, result) == []
    # timed, two 12-hour jobs share that one machine over the window, and a third does not fit
    assert unplaced_jobs(load(12, [4], 2, 12)) == []
    assert unplaced_jobs(load(12, [4], 3, 12)) == ["job-c"]


def test_the_checker_refuses_two_jobs_on_one_free_machine() -> None:
    loaded = load(16, [2], 2, 19)
    inventory = loaded.inventory
    result = plan(inventory, options=AT_PLAN_WEEK)
    (job_a,) = [pl for pl in result.placements if pl.workload == "job-a"]
    doubled = replace(result, placements=(*result.placements, replace(job_a, workload="job-b", demand="job-b")),
                      unplaced=())
    problems = check_plan(inventory, doubled)
    assert "whole machines: pool own's machine-sized replicas hold 1.58 machines of 8 GPUs in segment 1 " \
           "(Mon 00:00-Tue 00:00 UTC), where the 2 GPUs of smaller whole-segment replicas leave 1" in problems
    # GPU-hours alone hold: 2 + 2 x 8 x 19 / 24 = 14.67 of 16
    assert not any(p.startswith("pool own: segment") for p in problems)


@pytest.mark.parametrize("route", ["whole", "lp-guided"])
def test_the_solver_routes_keep_the_machines(monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    # the LP-guided route starts from a repaired start (timed_start.py settles f like a pay-per-use pool's
    # machines) and the greedy one raises it (start.py): either way the rule holds
    if route == "lp-guided":
        monkeypatch.setattr(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0)
        monkeypatch.setattr(solve_module, "TIMED_DIRECT_MIP_MAX_COLUMNS", 0)
        monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    assert unplaced_jobs(load(24, [2, 4, 4], 2, 20)) == ["job-b"]
    assert unplaced_jobs(load(32, [2], 2, 19, size=16)) == ["job-b"]
    assert unplaced_jobs(load(24, [2, 2, 4], 2, 20)) == []
