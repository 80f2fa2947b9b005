"""The checker runs after every plan and every replan the CLI makes, as the README says.

The planner is made to return a plan that breaks a rule (one placement priced below its pool);
every command that plans must then stop with exit 70 (a bug in hybridctl), name the broken
rule, and neither show nor save the plan.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.failover import replan as replan_module
from hybridctl.core.failover.replan import Replan
from hybridctl.core.placement import planner
from hybridctl.core.plan.model import Plan
from hybridctl.operations import plan as plan_operation
from support.apply_cli import SUPPORT_DIR, write_inventory
from support.inproc import run_cli

INTERNAL_ERROR = 70
_REAL_PLAN = planner.plan


def document() -> dict[str, Any]:
    def region(name: str, price: float) -> dict[str, Any]:
        return {"name": name, "kind": "cloud", "provider": "aws", "region": f"eu-{name}", "cluster": f"k8s-{name}",
                "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
                "pools": [{"name": f"{name}-g6", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 8,
                           "capacity_type": "on_demand", "usd_per_gpu_hour": price}]}

    return {"version": 1, "name": "checked", "regions": ["eu-users"], "sites": [region("aws-a", 0.8),
                                                                                region("aws-b", 1.0)],
            "workloads": [{"name": "api", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                           "replicas": 2}]}


def underpriced(result: Plan) -> Plan:
    """The plan with its first placement charged $1 less than its pool asks: the checker's 'costs' rule."""
    first = result.placements[0]
    return dataclasses.replace(result, placements=(
        dataclasses.replace(first, usd_per_month=first.usd_per_month - 1), *result.placements[1:]))


@pytest.fixture
def inventory(tmp_path: Path) -> Path:
    return write_inventory(tmp_path / "inventory.yaml", document())


@pytest.fixture
def broken_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    real = planner.plan
    monkeypatch.setattr(planner, "plan", lambda *args, **kwargs: underpriced(real(*args, **kwargs)))


def assert_flagged(result: Any, what: str) -> None:
    assert result.code == INTERNAL_ERROR, result.output
    assert f"PlanCheckFailed: the {what} breaks the spec's placement rules: api in aws-a-g6: costs 1168.00, " \
           "plan says 1167.00" in result.stderr, result.stderr


class TestPlan:
    def test_a_good_plan_passes(self, inventory: Path, tmp_path: Path) -> None:
        assert run_cli("plan", str(inventory), "--state", str(tmp_path / "s")).code == 0

    def test_a_bad_plan_is_exit_70_naming_the_rule_and_is_not_saved(self, inventory: Path, tmp_path: Path,
                                                                     broken_planner: None) -> None:
        out = tmp_path / "plan.json"
        result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "s"))
        assert_flagged(result, "plan")
        assert result.stdout == "" and not out.exists()

    @pytest.mark.parametrize("placements", [0, 10**9], ids=["checked-in-a-child", "checked-here"])
    def test_checked_beside_the_rest_or_not_a_bad_plan_is_neither_saved_nor_shown(
            self, inventory: Path, tmp_path: Path, broken_planner: None, monkeypatch: pytest.MonkeyPatch,
            placements: int) -> None:
        monkeypatch.setattr(plan_operation, "BACKGROUND_CHECK_PLACEMENTS", placements)
        out = tmp_path / "plan.json"
        for extra in ((), ("--format", "json"), ("--previous", str(self._good_plan(inventory, tmp_path)))):
            result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "s"), *extra)
            assert_flagged(result, "plan")
            assert result.stdout == "" and not out.exists()
            assert not list(tmp_path.glob(".plan.json.*")), "the staged plan file is left behind"

    @staticmethod
    def _good_plan(inventory: Path, tmp_path: Path) -> Path:
        good = tmp_path / "good.json"
        if not good.exists():
            with pytest.MonkeyPatch.context() as undo:
                undo.setattr(planner, "plan", _REAL_PLAN)
                assert run_cli("plan", str(inventory), "--out", str(good), "--state", str(tmp_path / "g")).code == 0
        return good

    def test_cost_of_an_inventory(self, inventory: Path, broken_planner: None) -> None:
        assert_flagged(run_cli("cost", str(inventory)), "plan")

    def test_the_base_plan_of_a_drill(self, inventory: Path, broken_planner: None) -> None:
        result = run_cli("drill", str(inventory), "--format", "json")
        assert_flagged(result, "base plan of the drill")
        assert result.stdout == ""


class TestReplan:
    def test_every_drill_scenario_is_checked(self, inventory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        real = replan_module.replan

        def bad_replan(*args: Any, **kwargs: Any) -> Replan:
            result = real(*args, **kwargs)
            return dataclasses.replace(result, after=underpriced(result.after))

        monkeypatch.setattr(replan_module, "replan", bad_replan)  # the pipeline's replan, a drill's too
        result = run_cli("drill", str(inventory))
        assert result.code == INTERNAL_ERROR, result.output
        assert "PlanCheckFailed: the replan of scenario " in result.stderr
        assert "api in aws-b-g6: costs 1460.00, plan says 1459.00" in result.stderr  # aws-a lost: both at aws-b

    def test_failover(self, inventory: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.syspath_prepend(str(SUPPORT_DIR))
        monkeypatch.setenv("HYBRIDCTL_CLOUD_DRIVER", "recording_cloud:factory")
        state = str(tmp_path / "state")
        applied = run_cli("apply", str(inventory), "--state", state, "--auto-approve")
        assert applied.code == 0, applied.output
        real = replan_module.replan

        def bad_replan(*args: Any, **kwargs: Any) -> Replan:
            result = real(*args, **kwargs)
            return dataclasses.replace(result, after=underpriced(result.after))

        monkeypatch.setattr(replan_module, "replan", bad_replan)  # the failover command's replan
        result = run_cli("failover", "site-lost", "aws-a", "--state", state, "--format", "json")
        assert result.code == INTERNAL_ERROR, result.output
        assert "PlanCheckFailed: the failover plan breaks the spec's placement rules: api in aws-b-g6: costs " \
               "1460.00, plan says 1459.00" in result.stderr
        assert result.stdout == ""  # no runbook shown for a plan that breaks the rules
