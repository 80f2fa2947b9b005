"""`plan` and `apply` treat a node roll (a new launch template version: EKS replaces every node) as a
destructive change with running machines: shown in red with its approval, refused on --auto-approve alone."""

from __future__ import annotations

import io

import pytest
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Placement, Plan, SolverReport
from hybridctl.errors import RefusedError
from hybridctl.operations.cloud_changes import approve_destructive, config_diff
from hybridctl.render.cloud_changes import render_cloud_changes
from rich.console import Console

INVENTORY = Inventory.model_validate({
    "version": 1, "name": "acme", "regions": ["us-users"],
    "sites": [{"name": "aws-use1", "kind": "cloud", "provider": "aws", "region": "us-east-1", "cluster": "ml-use1",
               "jurisdiction": "US", "egress_usd_per_gb": 0.09, "latency_ms": {"us-users": 15},
               "pools": [{"name": "use1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                          "capacity_type": "on_demand", "failure_domain": "use1-az4"}]}],
    "workloads": [{"name": "tune", "type": "fine_tuning", "gpu": {"types": ["H100"], "count": 8}, "hours_per_month": 100},
                  {"name": "pretrain", "type": "pretraining", "gpu": {"types": ["H100"], "count": 16},
                   "hours_per_month": 100}],
})


def plan_of(*placements: tuple[str, int]) -> Plan:
    placed = tuple(Placement(workload=w, tier="burst", site="aws-use1", pool="use1-p5-od", replicas=1, gpus=g,
                             usd_per_month=0.0) for w, g in placements)
    return Plan(inventory_name="acme", inventory_digest="sha256:inv", placements=placed, unplaced=(), data_movements=(),
                pools=(), solver=SolverReport("optimal", 0.0, 0.0, 0.0, 0.0), compute_usd_per_month=0.0,
                data_usd_per_month=0.0, tiers={w: "burst" for w, _ in placements})


APPLIED = plan_of(("tune", 8))
# 16-GPU replicas span two p5.48xlarge: the pool's launch template gets 32 EFA interfaces, a new version.
WITH_PRETRAINING = plan_of(("tune", 8), ("pretrain", 16))


def test_plan_lists_the_roll_as_destructive_with_its_approval() -> None:
    changes = config_diff(INVENTORY, WITH_PRETRAINING, APPLIED)
    (roll,) = [c for c in changes.rows if c.kind == "node-group"]
    assert (roll.action, roll.detail) == (
        "roll", "EFA interfaces 0→32 (EKS replaces every node, one at a time); min 0, desired 1→3, max 8")
    assert changes.destructive == (roll,) and roll.removes_machines
    out = io.StringIO()
    render_cloud_changes(Console(file=out, width=250), changes)
    assert "roll" in out.getvalue() and "apply needs approval (--allow-machine-removal)" in out.getvalue()


def test_apply_refuses_a_roll_on_auto_approve_alone() -> None:
    console = Console(file=io.StringIO(), width=250)
    with pytest.raises(RefusedError, match="delete, replace or roll node groups with running machines"):
        approve_destructive(console, INVENTORY, WITH_PRETRAINING, APPLIED, auto_approve=True, allow_machine_removal=False)
    approved = approve_destructive(console, INVENTORY, WITH_PRETRAINING, APPLIED, auto_approve=True,
                                   allow_machine_removal=True)
    assert [r.action for r in approved.rows] == ["roll"]


def test_a_previewed_launch_template_update_is_a_roll() -> None:
    from hybridctl.operations.cloud_changes import _previewed

    roll = _previewed("aws-gpu-pools", "s", "aws:ec2/launchTemplate:LaunchTemplate", "p5-lt", "update")
    assert (roll.action, roll.destructive, roll.removes_machines) == ("roll", True, True)
    tags = _previewed("aws-gpu-pools", "s", "aws:eks/nodeGroup:NodeGroup", "p5", "update")
    assert (tags.action, tags.destructive) == ("update", False)
