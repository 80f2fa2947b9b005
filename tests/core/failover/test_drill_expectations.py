"""A drill gate a real fleet can pass (issue 32, item 4): a scenario file chooses the built-in scenarios and
states each one's expected losses and allowed over-budget; `--standard` does not halve a 1-GPU pool; each
row's verdict agrees with its columns (never "FAIL · 0 min · RTO met"); over budget is a column."""

from __future__ import annotations

from pathlib import Path

import pytest
from failover_helpers import cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.drill import run_scenario
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.expectations import ScenarioExpectation
from hybridctl.core.failover.replan import FailoverOptions
from hybridctl.core.failover.scenario import (
    Scenario,
    ScenarioError,
    parse_scenario_file,
    standard_scenarios,
    unhalvable_pools,
)
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.render.failover import _result_cells, over_budget_text, rto_text

CLINICS = Path(__file__).parents[2] / "data" / "drill" / "clinics.yaml"


def _ocr_fleet():
    # ocr (fixed, no rto_minutes) can only run on L4: losing dc-a loses it
    return inventory([onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]), onprem("dc-b", [pool("b-h100", "H100", 2, 3.0)])],
                     [workload("ocr", "realtime_inference", ["L4"])])


def _lost(site: str, expect: ScenarioExpectation | None = None) -> Scenario:
    return Scenario(f"lost-{site}", (Event(EventKind.SITE_LOST, site),), expect=expect)


class TestVerdictAgreesWithColumns:
    def test_a_fixed_workload_down_is_not_rto_met_nor_0_min(self) -> None:
        inv = _ocr_fleet()
        result = run_scenario(inv, plan(inv), _lost("dc-a"), FailoverOptions())
        assert not result.passed
        _moves, _degraded, lost, _delta, over, recovery, rto = _result_cells(result)
        assert rto == rto_text(result)
        assert lost == "ocr (fixed)"
        assert rto == "1 fixed missed"  # was "met": ocr has no rto_minutes, yet its loss fails the gate
        assert recovery == "1 fixed down"  # was "0 min": nothing recovers
        assert over == "—"

    def test_an_expected_loss_passes_and_says_expected(self) -> None:
        inv = _ocr_fleet()
        result = run_scenario(inv, plan(inv), _lost("dc-a", ScenarioExpectation(losses=["ocr"])), FailoverOptions())
        assert result.passed and result.gate_failures == []
        cells = _result_cells(result)
        assert cells[2] == "ocr (fixed, expected)" and cells[6] == "1 down, expected" and cells[5] == "—"


class TestOverBudget:
    @staticmethod
    def fleet():
        # cash before: a-l4, committed, 2 GPUs × $1 × 730 h = $1,460. dc-a lost: a-l4 is still paid, and ocr runs
        # on one g6.xlarge (1 GPU) at $2 × 730 h = $1,460: $2,920 against a budget of $2,500, $420 over
        return inventory([onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]),
                          cloud("aws-b", [cloud_pool("b-g6", "L4", "g6.xlarge", 8, 2.0, "on_demand")])],
                         [workload("ocr", "realtime_inference", ["L4"])],
                         monthly_budget_usd=2500.0, cost_model="cash")

    def test_over_budget_is_a_figure_and_a_warning_without_an_allowance(self) -> None:
        inv = self.fleet()
        result = run_scenario(inv, plan(inv), _lost("dc-a"), FailoverOptions())
        assert result.usd_per_month_after == 2920.0
        assert result.over_budget_usd_per_month == 420.0
        assert result.passed and result.budget_problem
        assert over_budget_text(result) == "! $420.00 (not gated)"

    @pytest.mark.parametrize(("allowed", "passes", "text"), [
        (500.0, True, "$420.00 (within $500.00 allowed)"),
        (100.0, False, "$420.00 (over $100.00 allowed)"),
    ])
    def test_an_allowance_gates_it(self, allowed: float, passes: bool, text: str) -> None:
        inv = self.fleet()
        expect = ScenarioExpectation(over_budget_usd_per_month=allowed)
        result = run_scenario(inv, plan(inv), _lost("dc-a", expect), FailoverOptions())
        assert result.passed is passes
        assert over_budget_text(result) == text
        if not passes:
            assert result.gate_failures == ["$420.00/month over budget, more than the $100.00 its expectations allow"]


class TestStandard:
    def test_one_gpu_pools_are_not_halved(self) -> None:
        inv = load_inventory(CLINICS).inventory
        names = [s.name for s in standard_scenarios(inv)]
        assert "capacity-l4-half" not in names  # clinic-a-l4 is the only L4 pool, and has 1 GPU
        (half,) = [s for s in standard_scenarios(inv) if s.name == "capacity-l40s-half"]
        assert sorted(e.target for e in half.events) == ["lis-l40s", "main-l40s", "use1-g6e-od"]
        assert unhalvable_pools(inv) == ["clinic-a-l4"]

    def test_a_file_can_choose_built_ins_and_add_none(self) -> None:
        scenarios, choices = parse_scenario_file(
            "version: 1\nstandard:\n  include: [site-lost-*]\n  exclude: [site-lost-aws-*]\n", "s.yaml")
        assert scenarios == [] and choices.standard is not None
        assert choices.standard.chooses("site-lost-dc-main")
        assert not choices.standard.chooses("site-lost-aws-us-east-1")
        assert not choices.standard.chooses("link-down-clinic-a")


class TestFileErrors:
    @pytest.mark.parametrize(("text", "line", "fragment"), [
        ("version: 1\nstandard: {}\nexpect:\n  x:\n    losses: ocr\n", 5, "expect.x: losses: Input should be a valid list"),
        ("version: 1\nstandard: {}\nexpect:\n  x: {over_budget_usd_per_month: -1}\n", 4,
         "greater than or equal to 0"),
        ("version: 1\nstandard: {}\nexpect:\n  x: {lossses: [a]}\n", 4, "lossses: Extra inputs are not permitted"),
        ("version: 1\nstandard: {include: []}\n", 2, "standard: include: List should have at least 1 item"),
        ("version: 1\nstandard: {}\nexpect: [a]\n", 3, "`expect` must be a mapping"),
        ("version: 1\n", 1, "`scenarios` must be a non-empty list"),
    ])
    def test_each_error_names_the_line(self, text: str, line: int, fragment: str) -> None:
        with pytest.raises(ScenarioError) as caught:
            parse_scenario_file(text, "s.yaml")
        assert caught.value.location is not None and caught.value.location.line == line, caught.value.location
        assert fragment in caught.value.message, caught.value.message
