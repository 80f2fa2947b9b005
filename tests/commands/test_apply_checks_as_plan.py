"""`apply` makes the checks `plan` makes (issue 34, finding 4), with the same messages and exit codes:
a plan over the monthly budget, or one that leaves fixed-tier work unplaced (any work, with
--fail-on-unplaced; none, with --allow-unplaced), is refused with exit 1 — whether apply planned it
from an inventory or read it from a plan file. And as Terraform's `plan -out` does when the plan
errors, `plan --out` then writes no plan file for unplaced work: it exits 1 and says why (a plan over
budget is written, marked over_budget, since inventory revision 4: test_over_budget_plans.py).

Before, `apply PLAN` skipped both checks, `plan --out` wrote the file it then refused, and
`apply INVENTORY` applied a plan with fixed-tier work unplaced.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.serialize import plan_to_json_utf8
from hybridctl.drivers.inventory_files import load_inventory
from support.hostile import assert_refused, cloud_document, run, snapshot, write_json

BUDGET = "the optimal plan costs $1,168.00/month (cash), over the monthly budget of $1,000.00"
UNPLACED = "1 fixed-tier workload(s) left with 4 replica(s) unplaced: api"


def over_budget() -> dict[str, Any]:
    return cloud_document(budget=1_000.0)


def fixed_unplaced() -> dict[str, Any]:
    document = cloud_document()
    document["workloads"][0]["replicas"] = 20  # 16 L4s in all: 4 replicas of the always-on api find none
    return document


def error_line(output: str) -> str:
    return next(line for line in output.splitlines() if line.startswith("error:"))


def test_plan_out_fails_and_writes_no_file(tmp_path: Path) -> None:
    """Fixed-tier work left unplaced: no plan file (a plan over budget is written, marked so:
    tests/commands/test_over_budget_plans.py)."""
    inventory = write_json(tmp_path / "inventory.yaml", fixed_unplaced())
    out = tmp_path / "plan.json"
    result = run("plan", inventory, "--out", out, "--state", tmp_path / "state")
    assert_refused(result, UNPLACED, f"no plan file written to {out}: apply would refuse this plan for the same reason",
                   codes=frozenset({1}))
    assert not out.exists() and not list(tmp_path.glob(".plan.json*"))


@pytest.mark.parametrize(("document", "message"), [(over_budget, BUDGET), (fixed_unplaced, UNPLACED)])
def test_apply_of_an_inventory_fails_as_plan_does(tmp_path: Path, document: Any, message: str) -> None:
    inventory = write_json(tmp_path / "inventory.yaml", document())
    planned = run("plan", inventory, "--state", tmp_path / "state")
    applied = run("apply", inventory, "--state", tmp_path / "state", "--auto-approve")
    assert planned.code == applied.code == 1, applied.output
    assert error_line(applied.output) == error_line(planned.output)
    assert_refused(applied, message, codes=frozenset({1}))
    assert snapshot(tmp_path / "state") == {}


def plan_file_of(tmp_path: Path, document: dict[str, Any]) -> tuple[Path, Path]:
    """The plan file `plan --out` wrote for this inventory before it checked the budget (an older hybridctl)."""
    inventory = write_json(tmp_path / "inventory.yaml", document)
    loaded = load_inventory(inventory).inventory
    made = dataclasses.replace(plan(loaded), inventory_digest=inventory_digest(loaded), base_serial=0)
    path = tmp_path / "plan.json"
    path.write_bytes(plan_to_json_utf8(made, plan_file=True))
    return inventory, path


@pytest.mark.parametrize(("document", "message"), [(over_budget, BUDGET), (fixed_unplaced, UNPLACED)])
def test_apply_of_a_plan_file_fails_as_plan_does(tmp_path: Path, document: Any, message: str) -> None:
    inventory, path = plan_file_of(tmp_path, document())
    result = run("apply", path, "--inventory", inventory, "--state", tmp_path / "state", "--auto-approve")
    assert_refused(result, message, codes=frozenset({1}))
    assert error_line(result.output) == error_line(run("plan", inventory, "--state", tmp_path / "s").output)
    assert snapshot(tmp_path / "state") == {}


def test_allow_unplaced_is_the_same_choice_for_plan_and_apply(tmp_path: Path) -> None:
    inventory = write_json(tmp_path / "inventory.yaml", fixed_unplaced())
    out = tmp_path / "plan.json"
    state = tmp_path / "state"
    assert run("plan", inventory, "--out", out, "--state", state, "--allow-unplaced").code == 0
    refused = run("apply", out, "--inventory", inventory, "--state", state, "--auto-approve")
    assert_refused(refused, UNPLACED, "pass --allow-unplaced to accept it", codes=frozenset({1}))
    assert snapshot(state) == {}
    applied = run("apply", out, "--inventory", inventory, "--state", state, "--auto-approve", "--allow-unplaced")
    assert applied.code == 0, applied.output


def test_fail_on_unplaced_refuses_any_unplaced_work(tmp_path: Path) -> None:
    document = cloud_document()
    document["workloads"].append({"name": "batch", "type": "training", "gpu": {"types": ["L4"], "count": 1},
                                  "replicas": 20, "hours_per_month": 100})  # burst: some of it waits
    inventory = write_json(tmp_path / "inventory.yaml", document)
    assert run("apply", inventory, "--state", tmp_path / "a", "--auto-approve").code == 0
    strict = run("apply", inventory, "--state", tmp_path / "b", "--auto-approve", "--fail-on-unplaced")
    assert_refused(strict, "workload(s) left with", "unplaced: batch", codes=frozenset({1}))
    both = run("apply", inventory, "--state", tmp_path / "c", "--allow-unplaced", "--fail-on-unplaced")
    assert_refused(both, "--allow-unplaced and --fail-on-unplaced contradict each other", codes=frozenset({2}))
