"""A plan over its budget can be presented (issue 44, item 3; spec, "Budget").

`policies.budget_action: fail` (the default): `plan --out` still exits 1, but writes the plan whole, marked
`over_budget`, so that `show`, `cost` and `report` present it with an OVER BUDGET mark; `apply` refuses it
(exit 1) unless `--allow-over-budget`. Before, the plan file was not written, and nothing could show the plan
that needs the budget conversation.

`budget_action: shed`: the planner keeps within the budget by leaving the lowest tier's work out, naming
"budget" and the cash it would have cost; fixed work is never shed (a fleet whose fixed tier alone is over
the budget fails as with `fail`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.plan.serialize import PlanFileError, content_digest, plan_from_json
from support.hostile import assert_refused, cloud_document, run, snapshot, write_json

OVER = "the optimal plan costs $1,168.00/month (cash), over the monthly budget of $1,000.00"
MARK = "OVER BUDGET by $168.00: apply refuses this plan without --allow-over-budget"


@pytest.fixture
def over_budget_file(tmp_path: Path) -> tuple[Path, Path]:
    """(inventory, plan file) of the cloud document at a $1,000 budget: its always-on api costs $1,168."""
    inventory = write_json(tmp_path / "inventory.yaml", cloud_document(budget=1_000.0))
    out = tmp_path / "plan.json"
    result = run("plan", inventory, "--out", out, "--state", tmp_path / "state")
    assert_refused(result, OVER, f"plan written to {out}, marked over budget: apply refuses it without "
                   "--allow-over-budget", codes=frozenset({1}))
    return inventory, out


def test_plan_out_writes_the_plan_marked_over_budget(over_budget_file: tuple[Path, Path]) -> None:
    _, out = over_budget_file
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["over_budget"] is True and document["format_version"] == 4
    assert document["total_usd_per_month"] == 1168.0 and document["budget_usd_per_month"] == 1000.0
    assert [p["replicas"] for p in document["placements"]] == [2]  # the plan whole, not cut to the budget
    assert plan_from_json(out.read_text(encoding="utf-8"), verify_digest=True).over_budget


def test_show_cost_and_report_present_it_over_budget(over_budget_file: tuple[Path, Path], tmp_path: Path) -> None:
    _, out = over_budget_file
    shown = run("show", out)
    assert shown.code == 0 and f"budget:    $1,000.00/month: {MARK}" in shown.output
    markdown = run("show", out, "--format", "markdown")  # the pull-request comment (the action's)
    assert f"Budget $1,000.00/month (**{MARK}**) · " in markdown.output.splitlines()[1]
    cost = run("cost", out)
    assert cost.code == 0 and f"total: $1,168.00/month, budget $1,000.00/month: {MARK}" in " ".join(
        cost.output.split())
    as_json = json.loads(run("cost", out, "--format", "json").output)
    assert (as_json["over_budget"], as_json["budget_usd_per_month"], as_json["total_usd_per_month"]) == \
        (True, 1000.0, 1168.0)
    report = tmp_path / "report.html"
    assert run("report", out, "--out", report).code == 0
    html = report.read_text(encoding="utf-8")
    assert f'data-figure="over-budget"><b>{MARK}</b>' in html
    assert "$1,168.00 of $1,000.00: OVER BUDGET by $168.00" in html


def test_apply_refuses_a_plan_marked_over_budget_unless_allowed(over_budget_file: tuple[Path, Path],
                                                                 tmp_path: Path) -> None:
    inventory, out = over_budget_file
    state = tmp_path / "state"
    refused = run("apply", out, "--inventory", inventory, "--state", state, "--auto-approve")
    assert_refused(refused, OVER, "apply takes the plan as it is with --allow-over-budget", codes=frozenset({1}))
    assert snapshot(state) == {}
    applied = run("apply", out, "--inventory", inventory, "--state", state, "--auto-approve", "--allow-over-budget")
    assert applied.code == 0, applied.output
    assert snapshot(state) != {}


def test_apply_of_an_inventory_over_budget_takes_the_same_flag(tmp_path: Path) -> None:
    inventory = write_json(tmp_path / "inventory.yaml", cloud_document(budget=1_000.0))
    assert_refused(run("apply", inventory, "--state", tmp_path / "a", "--auto-approve"), OVER, codes=frozenset({1}))
    applied = run("apply", inventory, "--state", tmp_path / "b", "--auto-approve", "--allow-over-budget")
    assert applied.code == 0, applied.output


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(over_budget=False), "over_budget is false, but the plan's total $1,168.00 is over its budget"),
    (lambda d: d.update(over_budget="yes"), "over_budget must be true or false"),
    (lambda d: d.pop("over_budget"), "over_budget must be true or false (got None)"),
])
def test_the_mark_is_checked_when_read(over_budget_file: tuple[Path, Path], change: Any, words: str) -> None:
    """A plan file whose mark was taken off (its digest made again, as a forger would) is refused: apply reads
    the mark, and an older hybridctl, which knows no mark, refuses format 4 outright."""
    _, out = over_budget_file
    document = json.loads(out.read_text(encoding="utf-8"))
    change(document)
    document["content_digest"] = content_digest(document)
    with pytest.raises(PlanFileError, match=words.replace("$", r"\$").replace("(", r"\(").replace(")", r"\)")):
        plan_from_json(json.dumps(document), verify_digest=True)


def clinic(budget: float, action: str = "shed") -> dict[str, Any]:
    """Owned L4s ($2,920 a month whatever runs) and AWS on-demand and spot: an always-on api (6 GPUs, fixed)
    on the owned pool, a 4 × 200 h training run (burst) of which 2 fit beside it and 2 go on-demand ($160
    each), and a 4 × 100 h preemptible sweep (opportunistic) on spot ($30 each): $3,360 a month in all."""
    def aws_pool(name: str, kind: str, price: float) -> dict[str, Any]:
        return {"name": name, "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 16, "capacity_type": kind,
                "usd_per_gpu_hour": price}

    return {
        "version": 1, "name": "clinic", "regions": ["eu-users"],
        "policies": {"monthly_budget_usd": budget, "budget_action": action},
        "sites": [
            {"name": "dc", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.02,
             "latency_ms": {"eu-users": 10}, "hosts": [{"name": "gpu-01", "address": "10.0.0.11", "pool": "own"}],
             "pools": [{"name": "own", "gpu": "L4", "gpus": 8, "capacity_type": "reserved", "usd_per_gpu_hour": 0.5}]},
            {"name": "aws", "kind": "cloud", "provider": "aws", "region": "eu-west-1", "cluster": "k8s-aws",
             "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
             "pools": [aws_pool("od", "on_demand", 0.8), aws_pool("spot", "spot", 0.3)]}],
        "workloads": [
            {"name": "api", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1}, "replicas": 6},
            {"name": "train", "type": "training", "gpu": {"types": ["L4"], "count": 1}, "replicas": 4,
             "hours_per_month": 200},
            {"name": "sweep", "type": "experiment", "gpu": {"types": ["L4"], "count": 1}, "replicas": 4,
             "hours_per_month": 100, "preemptible": True, "checkpoint_minutes": 30}]}


def test_shed_drops_the_lowest_tier_and_names_the_budget(tmp_path: Path) -> None:
    inventory = write_json(tmp_path / "inventory.yaml", clinic(3_250.0))
    out = tmp_path / "plan.json"
    result = run("plan", inventory, "--out", out, "--state", tmp_path / "state")
    assert result.code == 0, result.output
    document = json.loads(out.read_text(encoding="utf-8"))
    assert document["over_budget"] is False and document["total_usd_per_month"] == 3240.0
    assert {(p["workload"], p["pool"]): p["replicas"] for p in document["placements"]} == \
        {("api", "own"): 6, ("train", "own"): 2, ("train", "od"): 2}
    [shed] = document["unplaced"]
    assert (shed["workload"], shed["replicas"]) == ("sweep", 4)
    assert shed["reason"] == ("budget: 4 × 1 L4 left out to keep within the monthly budget of $3,250.00 "
                              "(policies.budget_action: shed); they would have cost $120.00/month of cash ($30.00 "
                              "a replica at spot, the cheapest pool with room: its own machines)")
    assert "sweep (4): budget: 4 × 1 L4 left out" in result.output


def test_shed_where_the_fixed_tier_alone_is_over_the_budget_fails_as_fail_does(tmp_path: Path) -> None:
    """The api alone needs one on-demand machine beyond the owned pool ($584): a $3,000 budget leaves $80."""
    document = clinic(3_000.0)
    document["workloads"][0]["replicas"] = 9
    inventory = write_json(tmp_path / "inventory.yaml", document)
    out = tmp_path / "plan.json"
    result = run("plan", inventory, "--out", out, "--state", tmp_path / "state")
    assert_refused(result, "over the monthly budget of $3,000.00", "marked over budget", codes=frozenset({1}))
    written = json.loads(out.read_text(encoding="utf-8"))
    assert written["over_budget"] is True and written["unplaced"] == []  # shown whole: nothing shed
