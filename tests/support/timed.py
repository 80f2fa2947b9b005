"""A fleet worked by hand for the time rules (inventory revision 3): tests/core/week/test_plan_time.py
says what the planner must make of it."""

from __future__ import annotations

from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from support.plan_week import AT_PLAN_WEEK

HAND = """\
version: 1
name: hand
sites:
  - name: dc
    kind: onprem
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {}
    pools:
      - {name: own, gpu: H100, gpus: 16, gpus_per_node: 8, capacity_type: reserved, usd_per_gpu_hour: 2.0}
  - name: aws
    kind: cloud
    provider: aws
    region: us-east-1
    cluster: ml
    jurisdiction: EU
    egress_usd_per_gb: 0
    latency_ms: {}
    pools:
      - {name: rent, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand,
         usd_per_gpu_hour: 10.0}
workloads:
  - name: day-service
    type: realtime_inference
    gpu: {types: [H100], count: 4}
    replicas: 3
    sites: [dc]
    schedule:
      windows: [{days: mon-fri, from: "08:00", to: "20:00"}]
  - name: batch
    type: batch_inference
    gpu: {types: [H100], count: 8}
    hours_per_month: HOURS
"""
WEEK = AT_PLAN_WEEK
OFF = (0, 2, 4, 6, 8, 10)  # the off-hours segments
DAY = (1, 3, 5, 7, 9)


def planned(weekly_hours: float, text: str = HAND) -> Plan:
    inventory = load_sources([Source("inv.yaml", text.replace("HOURS", f"{weekly_hours * 730 / 168:.6f}"))]).inventory
    return plan(inventory, options=WEEK)




def load(weekly_hours: float, text: str = HAND) -> Inventory:
    """HAND with the batch's hours a week."""
    return load_sources([Source("inv.yaml", text.replace("HOURS", f"{weekly_hours * 730 / 168:.6f}"))]).inventory
