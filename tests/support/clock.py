"""CLOCK, a timed fleet worked by hand for scheduled scaling (issue 31 item 5): tests/core/deploy/
test_scaling_schedule.py says what it gives (the times, UTC) and tests/stacks/test_scaling_schedule_stack.py
what the aws-gpu-pools program declares for it."""

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
"""

@cache
def clock() -> Inventory:
    return load_sources([Source("clock.yaml", CLOCK)]).inventory


@cache
def planned(week: str) -> Plan:
    result = plan(clock(), options=PlanOptions(week=parse_iso_week(week)))
    assert not result.unplaced and result.week == week
    assert sorted((pl.workload, pl.pool) for pl in result.placements) == [
        ("day-service", "rent"), ("nightly", "rent-spot"), ("weekly-report", "rent-spot")]
    return result
