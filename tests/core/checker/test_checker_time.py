"""The checker's time rules (checker_time.py), each broken on its own in a plan the planner made."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.checker.verify import plan_file_violations
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.solver import solve as solve_module
from support.cases import placements_of
from support.timed import DAY, HAND, WEEK, load


def swap(result: Plan, workload: str, pool: str, **changes: object) -> Plan:
    placements = tuple(replace(pl, **changes) if (pl.workload, pl.pool) == (workload, pool) else pl  # type: ignore[arg-type]
                       for pl in result.placements)
    return replace(result, placements=placements)


def one(result: Plan, workload: str) -> Placement:
    (found,) = placements_of(result, workload)
    return found


def test_the_planners_timed_plans_pass() -> None:
    for hours, text in ((100, HAND), (120, HAND), (120, HAND.replace("    sites: [dc]\n", ""))):
        inventory = load(hours, text)
        result = plan(inventory, options=WEEK)
        assert check_plan(inventory, result) == []
        assert plan_file_violations(result) == []


def test_a_replica_outside_its_window() -> None:
    inventory = load(100)
    result = plan(inventory, options=WEEK)
    hours = list(one(result, "day-service").segment_hours)
    hours[0] = 8.0  # Monday 00:00-08:00: before the service's window opens
    problems = check_plan(inventory, swap(result, "day-service", "own", segment_hours=tuple(hours)))
    assert "day-service in own: runs 8 h in segment 1 (Mon 00:00-Mon 08:00 UTC), outside its windows" in problems


def test_a_whole_window_replica_that_skips_part_of_it() -> None:
    inventory = load(100)
    result = plan(inventory, options=WEEK)
    hours = list(one(result, "day-service").segment_hours)
    hours[DAY[0]] = 6.0
    problems = check_plan(inventory, swap(result, "day-service", "own", segment_hours=tuple(hours)))
    assert any("runs its whole windows, and not all of segment 2" in p for p in problems)


def test_a_segment_over_capacity() -> None:
    inventory = load(100)
    result = plan(inventory, options=WEEK)
    batch = one(result, "batch")
    # move the batch's hours into Saturday-Sunday (52 h) and Monday morning... and 40 h into the weekdays' days,
    # where 12 of 16 GPUs run the service: the GPU-hours break capacity, and the gang does not fit
    hours = [0.0] * len(result.segments)
    hours[10], hours[1] = 52.0, 12.0
    hours[0], hours[2], hours[4] = 8.0, 12.0, 12.0
    hours[3] = 4.0
    problems = check_plan(inventory, swap(result, "batch", batch.pool, segment_hours=tuple(hours)))
    assert "pool own: segment 2 holds 20.00 GPUs (GPU-hours / 12 h), capacity 16" in problems
    assert any(p.startswith("gang: batch runs in segment 2 of pool own") for p in problems)
    assert any("segment 2 holds 20.00 GPUs" in p for p in plan_file_violations(
        swap(result, "batch", batch.pool, segment_hours=tuple(hours))))


def _burst_batch() -> str:
    """The service free to rent, and the batch a burst run (training): its GPU-hours rank before the service's cash,
    so a service replica rents. As opportunistic work (revision 4) the batch would wait instead."""
    return HAND.replace("    sites: [dc]\n", "").replace("type: batch_inference", "type: training")


def test_a_quota_broken_in_one_segment() -> None:
    text = _burst_batch()
    result = plan(load(120, text), options=WEEK)
    assert [pl.replicas for pl in result.placements if pl.pool == "rent"] == [1]
    # the same plan against a quota of one machine, and its rented service doubled to 2 machines (12 GPUs)
    tight = load(120, text.replace("max_gpus: 64", "max_gpus: 8"))
    problems = check_plan(tight, swap(result, "day-service", "rent", replicas=3, gpus=12))
    assert "pool rent: segment 2 holds 2.00 machines (GPU-hours / 12 h), capacity 1" in problems
    assert not any("pool rent: segment 1 " in p for p in problems)  # outside the window nothing runs


def test_deferrable_hours_short() -> None:
    inventory = load(100)
    result = plan(inventory, options=WEEK)
    batch = one(result, "batch")
    hours = list(batch.segment_hours)
    hours[10] -= 10.0
    problems = check_plan(inventory, swap(result, "batch", "own", segment_hours=tuple(hours)))
    assert any(p.startswith("batch in own: 90 h a week placed, it needs 100") for p in problems)


def test_segments_that_are_not_the_weeks_cut() -> None:
    inventory = load(100)
    result = plan(inventory, options=WEEK)
    assert check_plan(inventory, replace(result, week="2026-W26")) == []  # UTC windows: the same cut
    moved = replace(result, segments=result.segments[:1] + tuple(
        replace(s, start_hour=s.start_hour + (1 if i == 0 else 0)) for i, s in enumerate(result.segments[1:])))
    assert any(p.startswith("segments: ") for p in check_plan(inventory, moved))


def test_a_large_timed_model_is_solved_whole_with_its_hours(monkeypatch: pytest.MonkeyPatch) -> None:
    # above the direct MIP's size a model goes LP first and fixes the units the LP places; leaving the
    # rest unplaced zeroed a kept batch's hours (a 120 h batch placed for 0 h): a timed model is solved
    # whole, and its hours stay as solved, never rounded to whole hours
    # (the route's answer now seeds the whole MIP, which keeps it when it is already proven)
    monkeypatch.setattr(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0)
    monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    inventory = load(120, _burst_batch())
    result = plan(inventory, options=WEEK)
    assert result.solver.method.split(" ")[0] in {"mip-timed", "lp-fix-mip"}
    assert any(h % 1 for h in one(result, "batch").segment_hours)
    assert check_plan(inventory, result) == []
