"""Small inventories for tests, written as YAML text so that line numbers are meaningful."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.plan.model import Plan

EXAMPLES = Path(__file__).resolve().parents[2] / "inventories"
EXAMPLE_PATHS = sorted([*EXAMPLES.glob("*.yaml"), EXAMPLES / "enterprise"])


def planned_enterprise() -> tuple[Inventory, Plan]:
    """The enterprise example, and a plan of it for PLAN_WEEK (it has `schedule` windows)."""
    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.inventory_files import load_inventory
    from support.plan_week import AT_PLAN_WEEK

    inventory = load_inventory(EXAMPLES / "enterprise").inventory
    return inventory, plan(inventory, options=AT_PLAN_WEEK)


def without_windows(inventory: Inventory) -> Inventory:
    """The same fleet with every `schedule` removed, each workload keeping its hours a month: revision 2's
    model, where part-time work holds its GPUs all month (what the windows of the examples save against)."""
    return inventory.model_copy(update={"workloads": [
        w if w.schedule is None else w.model_copy(update={"schedule": None, "hours_per_month": w.hours})
        for w in inventory.workloads]})

BASE = """\
version: 1
name: test
regions: [eu-users, us-users]
sites:
  - name: dc-a
    kind: onprem
    jurisdiction: EU
    failure_domain: a
    egress_usd_per_gb: 0.02
    latency_ms: {eu-users: 10, us-users: 90}
    hosts:
      - {name: a-01, address: 10.0.0.1, pool: a-h100}
    pools:
      - {name: a-h100, gpu: H100, gpus: 16, capacity_type: reserved, usd_per_gpu_hour: 2.0}
      - {name: a-l4, gpu: L4, gpus: 8, capacity_type: reserved, usd_per_gpu_hour: 0.5}
  - name: aws-use1
    kind: cloud
    provider: aws
    region: us-east-1
    cluster: ml
    jurisdiction: US
    egress_usd_per_gb: 0.09
    latency_ms: {eu-users: 90, us-users: 10}
    pools:
      - {name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}
      - {name: use1-p5-spot, gpu: H100, instance_type: p5.48xlarge, max_gpus: 32, capacity_type: spot, usd_per_gpu_hour: 2.5}
datasets:
  - {name: ds-eu, site: dc-a, size_gb: 100, sensitivity: confidential, residency: [EU]}
workloads:
  - name: train
    type: training
    gpu: {types: [H100], count: 8}
    hours_per_month: 100
"""


def write(tmp_path: Path, text: str, name: str = "inventory.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path
