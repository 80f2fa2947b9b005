"""CLOCK, a timed fleet worked by hand for scheduled scaling (issue 31 item 5): tests/core/deploy/
test_scaling_schedule.py says what it gives (the times, UTC) and tests/stacks/test_scaling_schedule_stack.py
what the aws-gpu-pools program declares for it.

Its last two pools do not divide evenly into machines (tests/core/week/test_segment_machines.py works them by
hand): on rent-a100 (8 GPUs a machine) 3 x 4 GPUs of shards share 2 machines 17:00-21:00 UTC each weekday, and
big-eval's three 4-GPU replicas run one each for 2 of those hours; on rent-l4 (4 GPUs a machine) 3 x 1 GPU of
tiny-api share 1 machine 03:00-06:00 UTC each weekday, and tiny-batch's two 1-GPU replicas run one each for
1 of those hours. Their windows are in UTC, apart from the first three workloads' windows and leads, so the
first three pools' segments and resizes are as they were without them."""

from __future__ import annotations

from functools import cache

from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.week.segments import parse_iso_week

CLOCK = """\
version: 1
name: clock
sites:
  - name: aws
    kind: cloud
    provider: aws
    region: us-east-1
    cluster: ml
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {}
    provision_minutes: 30
    pools:
      - {name: rent, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand,
         usd_per_gpu_hour: 10.0}
      - {name: rent-spot, gpu: H100, instance_type: p5.48xlarge, max_gpus: 32, capacity_type: spot,
         usd_per_gpu_hour: 4.0, interruptions_per_day: 0}
      - {name: rent-a100, gpu: A100-40GB, instance_type: p4d.24xlarge, max_gpus: 64, capacity_type: on_demand,
         usd_per_gpu_hour: 3.0}
      - {name: rent-l4, gpu: L4, instance_type: g6.12xlarge, max_gpus: 32, capacity_type: on_demand,
         usd_per_gpu_hour: 1.0}
workloads:
  - name: day-service
    type: realtime_inference
    gpu: {types: [H100], count: 8}
    replicas: 2
    schedule:
      windows: [{days: mon-fri, from: "09:00", to: "17:00", tz: Europe/Amsterdam}]
  - name: nightly
    type: batch_inference
    gpu: {types: [H100], count: 8}
    preemptible: true
    checkpoint_minutes: 10
    schedule:
      windows: [{days: mon-fri, from: "22:00", to: "02:00"}]
  - name: weekly-report
    type: batch_inference
    gpu: {types: [H100], count: 8}
    preemptible: true
    checkpoint_minutes: 10
    schedule:
      windows: [{days: mon, from: "00:00", to: "03:00"}]
  - name: shards
    type: realtime_inference
    gpu: {types: [A100-40GB], count: 4}
    replicas: 3
    schedule:
      windows: [{days: mon-fri, from: "17:00", to: "21:00"}]
  - name: big-eval
    type: evaluation
    gpu: {types: [A100-40GB], count: 4}
    replicas: 3
    hours_per_month: 43.452381
    schedule:
      windows: [{days: mon-fri, from: "17:00", to: "21:00"}]
  - name: tiny-api
    type: realtime_inference
    gpu: {types: [L4], count: 1}
    replicas: 3
    schedule:
      windows: [{days: mon-fri, from: "03:00", to: "06:00"}]
  - name: tiny-batch
    type: evaluation
    gpu: {types: [L4], count: 1}
    replicas: 2
    hours_per_month: 21.726190
    schedule:
      windows: [{days: mon-fri, from: "03:00", to: "06:00"}]
"""

@cache
def clock() -> Inventory:
    return load_sources([Source("clock.yaml", CLOCK)]).inventory


@cache
def planned(week: str) -> Plan:
    result = plan(clock(), options=PlanOptions(week=parse_iso_week(week)))
    assert not result.unplaced and result.week == week
    assert sorted((pl.workload, pl.pool) for pl in result.placements) == [
        ("big-eval", "rent-a100"), ("day-service", "rent"), ("nightly", "rent-spot"), ("shards", "rent-a100"),
        ("tiny-api", "rent-l4"), ("tiny-batch", "rent-l4"), ("weekly-report", "rent-spot")]
    return result
