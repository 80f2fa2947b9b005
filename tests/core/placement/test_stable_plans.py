"""Stable plans (spec, "Plans are reproducible"; issue 44 item 5): an unchanged inventory planned against its own
plan gets that plan back, and a change moves only what it must.

SPILL, worked by hand: an owned 8-GPU H100 machine holds a day service (8 GPUs, Monday to Friday 08:00-20:00 UTC,
60 h) and, in the 108 hours left, one 8-GPU batch of 100 h a week; the other batch (100 h) and an embedding job
(50 h) spill onto a spot pool in AWS, where each pays its own machine for its hours, in whichever segments they
run: every spread of those hours costs the same, and the spot pool's weekly scaling schedule follows the spread.
Before this, planning SPILL against its own plan re-picked the spot hours (1 pool resized, a stack update), and so
did a price change on the owned pool, which touches no AWS work.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.deploy.scaling_schedule import pool_schedules
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.failover.events import parse_events
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.placement.previous_hours import previous_hours
from hybridctl.core.placement.timed_plan import plan_week
from hybridctl.core.plan.diff import diff_plans
from hybridctl.core.plan.model import Plan, PlanSegment
from hybridctl.core.plan.serialize import plan_to_dict
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from support.failover_runs import failed_over
from support.plan_week import AT_PLAN_WEEK

SPILL = """\
version: 1
name: spill
sites:
  - name: dc
    kind: onprem
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {}
    pools:
      - {name: own, gpu: H100, gpus: 8, gpus_per_node: 8, capacity_type: reserved, usd_per_gpu_hour: OWN_PRICE}
  - name: aws
    kind: cloud
    provider: aws
    region: us-east-1
    cluster: ml
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {}
    pools:
      - {name: spot, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: spot,
         usd_per_gpu_hour: 3.0, interruptions_per_day: 0.1}
workloads:
  - name: day-service
    type: realtime_inference
    gpu: {types: [H100], count: 8}
    sites: [dc]
    schedule:
      windows: [{days: mon-fri, from: "08:00", to: "20:00"}]
  - {name: batch-a, type: batch_inference, preemptible: true, checkpoint_minutes: 10, gpu: {types: [H100], count: 8},
     hours_per_month: 434.52}
  - {name: batch-b, type: batch_inference, preemptible: true, checkpoint_minutes: 10, gpu: {types: [H100], count: 8},
     hours_per_month: 434.52}
  - {name: embed, type: embedding, preemptible: true, checkpoint_minutes: 10, gpu: {types: [H100], count: 8},
     hours_per_month: 217.26}
"""


def spill(own_price: float = 2.0) -> Inventory:
    return load_sources([Source("spill.yaml", SPILL.replace("OWN_PRICE", f"{own_price}"))]).inventory


def _placements(result: Plan) -> list[object]:
    """The plan file's placements, hours per segment included, as written."""
    return plan_to_dict(result, plan_file=True)["placements"]  # type: ignore[no-any-return]


def _where_and_when(result: Plan) -> list[tuple[str, str, int, tuple[float, ...]]]:
    return [(p.workload, p.pool, p.replicas, p.segment_hours) for p in result.placements]


def _schedules(inventory: Inventory, result: Plan) -> dict[object, object]:
    (site,) = stack_configs(inventory, result, "sha256:test").gpu_pools
    return {p.name: p.schedule for p in site.node_pools}


@pytest.fixture(scope="module")
def spilled() -> tuple[Inventory, Plan]:
    inventory = spill()
    result = plan(inventory, options=AT_PLAN_WEEK)
    # as worked by hand: the spot pool's hours are the free choice the stability must keep
    assert sorted((p.workload, p.pool) for p in result.placements) == [
        ("batch-a", "own"), ("batch-b", "spot"), ("day-service", "own"), ("embed", "spot")]
    assert pool_schedules(inventory, result, {("aws", "spot"): 8})
    return inventory, result


def test_a_timed_plan_against_itself_comes_back_byte_for_byte(spilled: tuple[Inventory, Plan]) -> None:
    inventory, first = spilled
    again = plan(inventory, previous=first, options=AT_PLAN_WEEK)
    assert check_plan(inventory, again) == []
    assert _placements(again) == _placements(first)
    assert again.pools == first.pools
    assert not diff_plans(first, again).has_changes
    assert _schedules(inventory, again) == _schedules(inventory, first)
    # and against that plan again: still the same (nothing drifts from one review to the next)
    assert _placements(plan(inventory, previous=again, options=AT_PLAN_WEEK)) == _placements(first)


def test_the_enterprise_example_against_its_own_plan_comes_back() -> None:
    inventory = load_inventory(inventories_dir() / "enterprise").inventory
    first = plan(inventory, options=AT_PLAN_WEEK)
    assert first.segments and any(len(set(p.segment_hours)) > 2 for p in first.placements)  # deferrable hours
    again = plan(inventory, previous=first, options=AT_PLAN_WEEK)
    assert _placements(again) == _placements(first)
    assert again.pools == first.pools
    assert not diff_plans(first, again).has_changes


def test_a_price_change_on_premises_leaves_the_aws_schedule_alone(spilled: tuple[Inventory, Plan]) -> None:
    inventory, first = spilled
    dearer = spill(2.5)
    after = plan(dearer, previous=first, options=AT_PLAN_WEEK)
    assert check_plan(dearer, after) == []
    diff = diff_plans(first, after)
    assert not diff.workloads and not diff.pools and diff.cost_changed  # the price, and nothing else
    assert [p for p in _placements(after) if p["pool"] == "spot"] == [p for p in _placements(first) if p["pool"] == "spot"]
    assert _schedules(dearer, after) == _schedules(inventory, first)


def test_a_change_that_forces_hours_moves_only_those(spilled: tuple[Inventory, Plan]) -> None:
    # the embedding job needs 50 h more: its own hours grow where they fit, the batch on spot keeps its hours
    _, first = spilled
    longer = load_sources([Source("spill.yaml", SPILL.replace("OWN_PRICE", "2.0").replace(
        "hours_per_month: 217.26", "hours_per_month: 434.52"))]).inventory
    after = plan(longer, previous=first, options=AT_PLAN_WEEK)
    before = {p["workload"]: p for p in _placements(first)}
    now = {p["workload"]: p for p in _placements(after)}
    assert {w: now[w]["pool"] for w in now} == {w: before[w]["pool"] for w in before}
    for workload in ("batch-a", "batch-b", "day-service"):
        assert now[workload] == before[workload]
    assert sum(now["embed"]["segment_hours"]) == pytest.approx(2 * sum(before["embed"]["segment_hours"]), abs=1e-4)
    # none of its previous hours moved away: it only added some
    assert all(h >= b - 1e-6 for h, b in zip(now["embed"]["segment_hours"], before["embed"]["segment_hours"],
                                             strict=True))


@pytest.mark.parametrize("event", ["price own=x1.01", "capacity spot=-8"])
def test_a_failover_that_touches_no_workload_touches_no_pool(spilled: tuple[Inventory, Plan], event: str) -> None:
    # before, the replan re-picked the spot hours and the runbook scaled (or shrank) the AWS pools for nothing
    inventory, applied = spilled
    runbook, result = failed_over(inventory, applied, parse_events([event]))
    assert _where_and_when(result.after) == _where_and_when(applied)  # the price is the new one
    assert runbook.steps == ()


def test_hours_of_a_previous_plan_cut_otherwise_are_laid_on_by_the_clock(spilled: tuple[Inventory, Plan]) -> None:
    # a previous plan whose first two segments were one (a window edited since): its hours there are spread over
    # the week's two by their length, the others read as they are
    inventory, first = spilled
    week = plan_week(inventory, AT_PLAN_WEEK.week)
    assert week is not None
    ran = next(p.segment_hours for p in first.placements if p.workload == "embed")
    assert previous_hours(first, week)["embed"]["spot"] == ran
    one, two = first.segments[0], first.segments[1]
    merged = replace(first, segments=(PlanSegment(one.start_hour, two.end_hour), *first.segments[2:]),
                     placements=tuple(replace(p, segment_hours=(p.segment_hours[0] + p.segment_hours[1],
                                                                *p.segment_hours[2:])) for p in first.placements))
    laid = previous_hours(merged, week)["embed"]["spot"]
    both = ran[0] + ran[1]
    assert laid[:2] == pytest.approx((both * one.hours / (one.hours + two.hours),
                                      both * two.hours / (one.hours + two.hours)))
    assert laid[2:] == ran[2:]


def test_hours_moved_to_other_segments_are_a_change_and_the_spot_schedule_with_them(
        spilled: tuple[Inventory, Plan]) -> None:
    # the diff once saw GPUs and machines only: the embedding job's day and night hours swapped (both 12-hour
    # segments) left both unchanged, though the queues and the spot pool's scaling schedule follow the hours
    inventory, first = spilled
    assert first.segments[1].hours == first.segments[2].hours == 12

    def swapped(hours: tuple[float, ...]) -> tuple[float, ...]:
        return (hours[0], hours[2], hours[1], *hours[3:])

    moved = replace(first, placements=tuple(replace(p, segment_hours=swapped(p.segment_hours)) if p.workload == "embed"
                                            else p for p in first.placements))
    assert moved.pools == first.pools  # the same GPUs and machines at the busiest
    diff = diff_plans(first, moved)
    assert diff.has_changes
    assert [(c.workload, c.change, c.describe()) for c in diff.workloads] == [
        ("embed", "retimed", "spot×1: other hours in the week's segments")]
    (pool,) = diff.pools
    assert pool.pool == "spot" and pool.schedule_changed
    assert pool.describe() == "2 → 2 machines (9 → 9 GPUs in use); other machines per segment (scaling schedule)"
    assert _schedules(inventory, moved) != _schedules(inventory, first)  # what the stack would be told
    assert not diff_plans(first, first).has_changes
