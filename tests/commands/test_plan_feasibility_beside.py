"""`plan` runs loading's feasibility checks, and the inventory's digest, in a forked child beside the
planner for large inventories: an inventory that can never work is refused with the same message and
exit code as when they run first, and neither a plan nor a plan file comes out; a plan file records
the inventory's own digest either way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.operations import plan as plan_operation
from support.examples import write
from support.inproc import run_cli
from test_validate_revision2 import ERRORS

FEASIBILITY = ("node-shape", "replica-fits-no-pool", "ceiling-below-cost", "budget-below-committed", "spread-any-tier")


@pytest.mark.parametrize("case", FEASIBILITY)
def test_an_infeasible_inventory_is_refused_alike_beside_the_planner_or_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    text, code, fragment = next((e[1], e[2], e[4]) for e in ERRORS if e[0] == case)
    inventory = write(tmp_path, text)
    outcomes = []
    for workloads in (10**9, 0):  # checked first; checked in a child beside the planner
        monkeypatch.setattr(plan_operation, "BACKGROUND_FEASIBILITY_WORKLOADS", workloads)
        out = tmp_path / "plan.json"
        result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "state"))
        assert fragment in result.stderr and code in result.stderr, result.stderr
        assert result.stdout == "" and not out.exists() and not list(tmp_path.glob(".plan.json.*"))
        outcomes.append((result.code, result.stderr))
    assert outcomes[0] == outcomes[1]
    assert outcomes[0][0] == run_cli("validate", str(inventory)).code


def test_the_plan_file_records_the_inventory_s_digest_worked_out_beside_the_planner_or_first(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = Path(__file__).resolve().parents[2] / "inventories" / "cloud-burst.yaml"
    expected = inventory_digest(load_inventory(inventory).inventory)
    files = []
    for workloads in (10**9, 0):  # worked out first; worked out in a child beside the planner
        monkeypatch.setattr(plan_operation, "BACKGROUND_FEASIBILITY_WORKLOADS", workloads)
        out = tmp_path / f"plan-{workloads}.json"
        assert run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "state")).code == 0
        assert json.loads(out.read_text())["inventory_digest"] == expected
        files.append(out.read_bytes())
    assert files[0] == files[1]
