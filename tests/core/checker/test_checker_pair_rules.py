"""The checker works out the rules a pool breaks once per pool and kind of workload: two workloads
that differ in any input of those rules must each get their own verdict.

For each input, a twin of a workload that differs in that input alone is placed in the same pool
right after it: the twin's violations must be those it has when checked alone, and differ from
the original's (so that reusing the original's verdict would show).
"""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory, Sensitivity, TierChoice, Workload, WorkloadType
from hybridctl.core.plan.model import Placement, Plan, SolverReport
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES

BASE = "research-sweeps"  # H100 × 8, experiment, preemptible: at home on p5 spot
POOL, SITE = "use1-p5-spot", "aws-us-east-1"


def _inventory() -> Inventory:
    inventory = load_inventory(EXAMPLES / "cloud-burst.yaml").inventory
    patients = inventory.datasets[0].model_copy(update={"name": "patients", "sensitivity": Sensitivity.RESTRICTED,
                                                        "residency": None, "copies": []})
    return inventory.model_copy(update={"datasets": [*inventory.datasets, patients]})


def _gpu(w: Workload, **change: Any) -> dict[str, Any]:
    return {"gpu": w.gpu.model_copy(update=change)}


VARIATIONS: dict[str, tuple[Any, Any]] = {
    # input: (the original's change, the twin's further change), each a function of the workload
    "gpu types": (lambda w: {}, lambda w: _gpu(w, types=["A100"])),
    "gpu count": (lambda w: {}, lambda w: _gpu(w, count=16)),
    "multi_node": (lambda w: _gpu(w, count=16, multi_node=True), lambda w: _gpu(w, multi_node=False)),
    "type": (lambda w: _gpu(w, count=16), lambda w: {"type": WorkloadType.TRAINING}),
    "preemptible": (lambda w: {}, lambda w: {"preemptible": False}),
    "tier": (lambda w: {}, lambda w: {"tier": TierChoice.BURST}),
    "datasets": (lambda w: {}, lambda w: {"datasets": ["patients"]}),
    "latency": (lambda w: {}, lambda w: {"latency": {"region": "us-users", "p95_ms": 5.0}}),
    "sites": (lambda w: {}, lambda w: {"sites": ["dc-ashburn"]}),
}


def _placement(w: Workload) -> Placement:
    return Placement(w.name, "opportunistic", SITE, POOL, 1, w.gpu.count, 0.0, demand=w.name)


def _violations(inventory: Inventory, workloads: list[Workload], name: str) -> list[str]:
    plan = Plan(inventory_name=inventory.name, inventory_digest="", placements=tuple(map(_placement, workloads)),
                unplaced=(), data_movements=(), pools=(), solver=SolverReport("optimal", 0.0, 0.0, 0.0, 0.0, "test"),
                compute_usd_per_month=0.0, data_usd_per_month=0.0, budget_usd_per_month=None)
    edited = inventory.model_copy(update={"workloads": [*inventory.workloads, *workloads]})
    return [v for v in check_plan(edited, plan) if v.startswith(f"{name} in {POOL}:")]


@pytest.mark.parametrize("rule_input", sorted(VARIATIONS))
def test_a_twin_differing_in_one_rule_input_gets_its_own_verdict(rule_input: str) -> None:
    inventory = _inventory()
    base = next(w for w in inventory.workloads if w.name == BASE)
    original_change, twin_change = VARIATIONS[rule_input]
    original = base.model_copy(update={"name": "original", **original_change(base)})
    twin = Workload.model_validate({**original.model_dump(), "name": "twin", **twin_change(original)})
    alone = _violations(inventory, [twin], "twin")
    assert alone != [v.replace("original", "twin", 1) for v in _violations(inventory, [original], "original")]
    assert _violations(inventory, [original, twin], "twin") == alone
