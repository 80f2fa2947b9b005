"""Showback that adds up and is fair (the spec's Cost: Showback, revision 3), hand-worked.

tests/data/showback/hospital.yaml: clinical-notes-llm runs 2 H100 alone on an always-on p5.48xlarge (8 GPUs,
$4.00/GPU-h): the machine costs 8 × 730 × $4 = $23,360, its compute 2 × 730 × $4 = $5,840, and the 6 idle GPUs
($17,520) are its own to carry. model-eval fills a p5 of its own for 20 h: 8 × 20 × $4 = $640, no rounding.
Before revision 3 the pool's $17,520 of rounding was shared by compute: model-eval was billed $2,370.37 for
its $640 and clinical-notes-llm $21,629.63.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.serialize import plan_to_dict
from hybridctl.core.pricing.cents import allocate_cents, to_cents
from hybridctl.core.pricing.shares import idle_machines
from hybridctl.core.pricing.showback import IDLE_COMMITTED, CostDimension, placement_costs, showback
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.render.plan_summary import idle_machine_lines

HOSPITAL = Path(__file__).resolve().parents[2] / "data" / "showback" / "hospital.yaml"


@pytest.fixture(scope="module")
def hospital():
    inventory = load_inventory(HOSPITAL).inventory
    result = plan(inventory)
    assert check_plan(inventory, result) == []
    return result


def _thirds():
    """Three 1-GPU always-on replicas on one g6e.12xlarge (4 L40S) at $0.37/GPU-h: the machine costs
    4 × 730 × $0.37 = $1,080.40; each carries a third: $360.13333…"""
    document = {
        "version": 1, "name": "thirds", "regions": ["eu-users"], "policies": {"cost_model": "cash"},
        "sites": [{"name": "aws", "kind": "cloud", "provider": "aws", "region": "eu-central-1", "cluster": "k8s-aws",
                   "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
                   "pools": [{"name": "g6e", "gpu": "L40S", "instance_type": "g6e.12xlarge", "max_gpus": 8,
                              "capacity_type": "on_demand", "usd_per_gpu_hour": 0.37}]}],
        "datasets": [],
        "workloads": [{"name": n, "type": "realtime_inference", "gpu": {"types": ["L40S"], "count": 1},
                       "replicas": 1, "team": t} for n, t in (("a", "x"), ("b", "x"), ("c", "y"))]}
    return plan(load_sources([Source("thirds.yaml", yaml.safe_dump(document))]).inventory)


class TestAReplicaAloneOnAMachine:
    def test_it_carries_the_idle_gpus_of_its_machine(self, hospital) -> None:
        lines = {line.key: line for line in showback(hospital, CostDimension.workload)}
        notes = lines["clinical-notes-llm"]
        assert (notes.compute_usd_per_month, notes.idle_usd_per_month, notes.total_usd_per_month) == (
            23360.0, 17520.0, 23360.0)

    def test_a_job_that_fills_its_own_machine_carries_none(self, hospital) -> None:
        lines = {line.key: line for line in showback(hospital, CostDimension.workload)}
        assert (lines["model-eval"].total_usd_per_month, lines["model-eval"].idle_usd_per_month) == (640.0, 0.0)

    def test_owned_capacity_no_one_uses_is_a_line_of_its_own(self, hospital) -> None:
        lines = {line.key: line for line in showback(hospital, CostDimension.workload)}
        # dc-annex: 2 × 730 × $1.50 = $2,190, billing-coder uses 1 GPU ($1,095): $1,095 idle, 1 GPU
        assert (lines[IDLE_COMMITTED].total_usd_per_month, lines[IDLE_COMMITTED].gpus) == (1095.0, 1)
        assert {k: v.total_usd_per_month for k, v in lines.items()} == {
            "clinical-notes-llm": 23360.0, "er-triage": 1460.0, "billing-coder": 1095.0, "model-eval": 640.0,
            IDLE_COMMITTED: 1095.0}

    def test_the_summary_names_the_idle_machine(self, hospital) -> None:
        (machine,) = idle_machines(hospital)
        assert (machine.pool, machine.machines, machine.gpus_used, machine.workloads) == (
            "aws-p5", 1, 2, ("clinical-notes-llm",))
        assert idle_machine_lines(hospital) == [
            "1 machine of 8 H100 (aws-p5) at 2/8 GPUs for clinical-notes-llm: $17,520.00/month idle"]

    def test_a_cost_ceiling_still_bounds_compute_without_the_rounding(self) -> None:
        document = yaml.safe_load(HOSPITAL.read_text())
        notes = next(w for w in document["workloads"] if w["name"] == "clinical-notes-llm")
        notes["max_usd_per_month"] = 6000  # its compute $5,840 fits; its showback, $23,360, would not
        inventory = load_sources([Source("ceiling.yaml", yaml.safe_dump(document))]).inventory
        result = plan(inventory)
        assert check_plan(inventory, result) == []
        assert [p.pool for p in result.placements if p.workload == "clinical-notes-llm"] == ["aws-p5"]


class TestEveryViewAddsUpToTheTotal:
    @pytest.mark.parametrize("by", list(CostDimension))
    def test_the_hospital(self, hospital, by: CostDimension) -> None:
        lines = showback(hospital, by)
        assert to_cents(sum(line.total_usd_per_month for line in lines)) == to_cents(hospital.total_usd_per_month)

    @pytest.mark.parametrize("by", list(CostDimension))
    def test_thirds_of_a_machine_lose_no_cent(self, by: CostDimension) -> None:
        result = _thirds()
        assert result.total_usd_per_month == 1080.40
        lines = showback(result, by)
        assert sum(to_cents(line.total_usd_per_month) for line in lines) == 108_040
        if by is CostDimension.workload:  # rounded one by one: 3 × $360.13 = $1,080.39
            assert sorted(line.total_usd_per_month for line in lines) == [360.13, 360.13, 360.14]
        if by is CostDimension.team:
            assert {line.key: line.total_usd_per_month for line in lines} == {"x": 720.27, "y": 360.13}

    def test_the_placements_table_with_data_and_idle_committed(self, hospital) -> None:
        costs = placement_costs(hospital)
        by_workload = {p.workload: c for p, c in zip(hospital.placements, costs.placements, strict=True)}
        assert by_workload == {"clinical-notes-llm": 23360.0, "er-triage": 1460.0, "billing-coder": 1095.0,
                               "model-eval": 640.0}
        assert (costs.data_usd_per_month, costs.idle_committed_usd_per_month) == (0.0, 1095.0)
        assert sum(map(to_cents, costs.placements)) + 109_500 == to_cents(hospital.total_usd_per_month) == 2_765_000
        thirds = placement_costs(_thirds())
        assert sum(map(to_cents, thirds.placements)) == 108_040

    def test_the_plan_json_carries_the_showback(self, hospital) -> None:
        document = plan_to_dict(hospital)
        lines = document["showback"]["lines"]
        assert sum(to_cents(line["total_usd_per_month"]) for line in lines) == to_cents(document["total_usd_per_month"])
        notes = next(line for line in lines if line["workload"] == "clinical-notes-llm")
        assert notes["idle_pay_per_use_usd_per_month"] == 17520.0
        assert "showback" not in plan_to_dict(hospital, plan_file=True)  # a plan file is priced again when read


class TestLargestRemainder:
    def test_thirds(self) -> None:
        assert allocate_cents({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3}, 100) == {"a": 34, "b": 33, "c": 33}

    def test_the_largest_remainders_get_the_missing_cents(self) -> None:
        assert allocate_cents({"a": 0.104, "b": 0.206, "c": 0.69}, 100) == {"a": 10, "b": 21, "c": 69}

    def test_a_total_below_the_floors_takes_cents_back(self) -> None:
        assert sum(allocate_cents({"a": 1.0, "b": 1.0, "c": 1.0}, 297).values()) == 297

    def test_negative_changes(self) -> None:
        assert to_cents(-0.125) == -13 and to_cents(0.125) == 13
        assert sum(allocate_cents({"a": -1 / 3, "b": -2 / 3}, -100).values()) == -100


def test_the_pull_request_comment_adds_up_and_names_the_idle_machine(hospital) -> None:
    from hybridctl.render.plan import render_markdown

    text = render_markdown(hospital)
    assert "| clinical-notes-llm | fixed | aws-use1 | aws-p5 | 1 | 2 | $23,360.00 |" in text
    assert ("placements $26,555.00 + data movement $0.00 + idle committed $1,095.00 = total $27,650.00/month; "
            "idle pay-per-use: 1 machine of 8 H100 (aws-p5) at 2/8 GPUs for clinical-notes-llm: "
            "$17,520.00/month idle") in text
