"""A node group follows its launch template's latest version, and a new version rolls every node
(eks_model.rolls): an unrelated plan change must leave every launch template byte-identical."""

from __future__ import annotations

import json

from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
from hybridctl.core.inventory.models import Dataset, Inventory, Workload
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import synth_stack
from hybridctl.paths import inventories_dir, stacks_dir

LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"


def launch_templates(inventory: Inventory) -> tuple[str, dict[str, str]]:
    """The plan's digest, and each launch template's inputs as bytes, as `synth` and `apply` declare them."""
    plan_ = plan(inventory)
    configs = stack_configs(inventory, plan_)  # tagged with the plan's own digest, as apply does
    runs = [synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in configs.gpu_pools]
    return plan_digest(plan_), {f"{r.stack}/{t.name}": json.dumps(t.inputs, sort_keys=True)
                                for r in runs for t in r.of_type(LAUNCH_TEMPLATE)}


def with_onprem_audit(inventory: Inventory) -> Inventory:
    """One more workload that can only run on premises: it reads restricted data kept in Ashburn."""
    return inventory.model_copy(update={
        "datasets": [*inventory.datasets, Dataset.model_validate(
            {"name": "ledger", "site": "dc-ashburn", "size_gb": 50, "sensitivity": "restricted"})],
        "workloads": [*inventory.workloads, Workload.model_validate(
            {"name": "ledger-audit", "type": "batch_inference", "gpu": {"types": ["L40S"], "count": 1},
             "hours_per_month": 40, "datasets": ["ledger"]})],
    })


def test_an_unrelated_onprem_workload_leaves_every_launch_template_of_cloud_burst_byte_identical() -> None:
    inventory = load_inventory(inventories_dir() / "cloud-burst.yaml").inventory
    digest, before = launch_templates(inventory)
    changed = with_onprem_audit(inventory)
    other_digest, after = launch_templates(changed)
    assert {p.site for p in plan(changed).placements if p.workload == "ledger-audit"} == {"dc-ashburn"}
    assert digest != other_digest  # the plan did change
    assert len(before) == 3
    assert after == before
