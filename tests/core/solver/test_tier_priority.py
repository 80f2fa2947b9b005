"""Tier priority (spec, "Tier priority"): a lower-tier replica never holds capacity a higher-tier
replica needs; placed GPU-hours are maximized tier by tier, then cost; an unplaced replica's reason
never blames a lower tier's capacity."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _pytest.monkeypatch import MonkeyPatch
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement import planner as planner_module
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.formulation import formulate
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.placement.units import PoolTable, Unit, build_units
from hybridctl.core.plan.model import Placement, Unplaced
from hybridctl.core.solver import highs_run
from hybridctl.core.solver import priority as priority_module
from hybridctl.core.solver import refine as refine_module
from hybridctl.core.solver import solve as solve_module
from hybridctl.core.solver.effort import MIP_CHECKS, MIP_NODES, Effort
from hybridctl.core.solver.milp import FloatArray, Model
from hybridctl.core.solver.priority import by_priority
from hybridctl.core.solver.solve import Solution, _nothing_placed
from support.cases import cloud, inventory, onprem, owned, placed, rented, work
from support.generated import generated


def _clinic(burst_hours: float = 730) -> Inventory:
    # the fleet: a 64-GPU burst pretraining run fits the whole on-demand quota; the
    # clinical service's second replica must go to the other failure domain, the same quota
    return inventory(
        [onprem("dc", "US", owned("h100-owned", "H100", 8, 1.0), domain="dc-row"),
         cloud("aws", "US", rented("p5-od", "H100", "p5.48xlarge", 64, 6.88))],
        [work("triage", types=["H100"], count=8, replicas=2, hours=730, kind="realtime_inference", tier="fixed"),
         work("pretrain", types=["H100"], count=64, hours=burst_hours, kind="pretraining", tier="burst",
              gpu={"types": ["H100"], "count": 64, "multi_node": True})],
        cost_model="cash")


def test_a_burst_run_never_holds_the_quota_a_fixed_replica_needs() -> None:
    inv = _clinic()
    result = plan(inv)
    assert placed(result).get("triage") == {"h100-owned": 1, "p5-od": 1}
    assert [(u.workload, u.replicas) for u in result.unplaced] == [("pretrain", 1)]
    assert check_plan(inv, result) == []


def test_the_reason_of_an_unplaced_fixed_replica_never_blames_a_lower_tier() -> None:
    # triage's ceiling pays for one replica of 8 GPUs ($5,840 a month), not two; the burst run then
    # takes the GPUs left: what blocks triage's second replica is its ceiling, not the burst run
    inv = inventory(
        [onprem("dc", "US", owned("h100-owned", "H100", 16, 1.0))],
        [work("triage", types=["H100"], count=8, replicas=2, hours=730, kind="realtime_inference", tier="fixed",
              max_usd_per_month=6000),
         work("pretrain", types=["H100"], count=8, hours=730, kind="pretraining", tier="burst")],
        cost_model="cash")
    result = plan(inv)
    assert placed(result) == {"triage": {"h100-owned": 1}, "pretrain": {"h100-owned": 1}}
    [missing] = result.unplaced
    assert "burst" not in missing.reason and "pretrain" not in missing.reason
    assert "max_usd_per_month" in missing.reason
    assert check_plan(inv, result) == []


def test_the_checker_refuses_a_lower_tier_holding_what_a_higher_tier_needed() -> None:
    # the plan the penalty weights made before: the burst run on the whole quota, triage short a replica
    inv = _clinic()
    good = plan(inv)
    [on_demand] = [p for p in good.placements if p.workload == "triage" and p.pool == "p5-od"]
    [owned_triage] = [p for p in good.placements if p.workload == "triage" and p.pool != "p5-od"]
    burst = Placement(workload="pretrain", tier="burst", site="aws", pool="p5-od", replicas=1, gpus=64,
                      usd_per_month=64 * 730 * 6.88, demand="pretrain", gpu_type="H100", gpus_per_replica=64,
                      hours_per_month=730)
    bad = replace(good, placements=(burst, owned_triage),
                  unplaced=(Unplaced("triage", "made up", 1, "fixed", "triage"),))
    assert on_demand.replicas == 1
    problems = check_plan(inv, bad)
    assert any(p.startswith("tier priority: triage (fixed)") and "pretrain (burst) holds 64 GPUs in p5-od" in p
               for p in problems), problems
    assert not any(p.startswith("tier priority") for p in check_plan(inv, good))


def test_the_first_solve_and_the_priority_stages_share_the_plans_one_effort(monkeypatch: MonkeyPatch) -> None:
    # each run's work is its own and the safety net's deadline the plan's: no stage gets "what the first solve
    # left", which made a plan depend on how long the first solve took on the machine of the day
    efforts: list[Effort] = []
    first_solve = planner_module.solve

    def solve(model: Model, *, effort: Effort, gap: float, previous: FloatArray | None = None) -> Solution:
        efforts.append(effort)
        return first_solve(model, effort=effort, gap=gap, previous=previous)

    def stages(units: list[Unit], model: Model, first: Solution, *, effort: Effort, gap: float) -> Solution:
        efforts.append(effort)
        return by_priority(units, model, first, effort=effort, gap=gap)

    monkeypatch.setattr(planner_module, "solve", solve)
    monkeypatch.setattr(planner_module, "by_priority", stages)
    inv = _clinic()
    result = plan(inv, options=PlanOptions(time_limit_s=30.0))
    assert len(efforts) == 2 and efforts[0] is efforts[1]
    assert (efforts[0].mip_nodes, efforts[0].mip_checks) == (MIP_NODES, MIP_CHECKS)
    assert check_plan(inv, result) == []


def test_a_start_within_the_gap_of_the_lp_bound_is_kept_without_the_mip(monkeypatch: MonkeyPatch) -> None:
    # priority's last stage asks for the LP first: where it proves the start, the MIP's cuts would only prove it again
    integer_runs: list[bool] = []
    run = highs_run.run

    def counted(*args: Any, **kwargs: Any) -> Any:
        integer_runs.append(kwargs["integer"])
        return run(*args, **kwargs)

    inv = _clinic()
    pools = pool_infos(inv)
    table = PoolTable.of(pools)
    model = formulate(build_units(demands(inv), EligibilityIndex(inv, pools), None, table), table, {}, 100.0, cash=True)
    best = solve_module.solve(model, effort=Effort(), gap=0.0)
    nothing = _nothing_placed(model, model.lower, np.ones(model.columns, dtype=np.bool_))
    monkeypatch.setattr(highs_run, "run", counted)

    kept = refine_module.improve(model, best.values, effort=Effort(), gap=0.5, bound_first=True)
    assert (kept.method, kept.status, integer_runs) == ("lp-bound", "optimal", [False])
    assert np.array_equal(kept.values, best.values) and kept.bound <= kept.objective

    integer_runs.clear()  # a start far from the bound: the LP proves nothing, and the MIP improves it
    improved = refine_module.improve(model, nothing, effort=Effort(), gap=1e-4, bound_first=True)
    assert integer_runs == [False, True] and improved.method == "mip"
    assert improved.objective == pytest.approx(best.objective)


def test_a_tier_stage_cut_short_still_leaves_no_lower_tier_holding_what_a_higher_one_fits_in(
        monkeypatch: MonkeyPatch) -> None:
    # the safety net strikes in the whole MIP of each tier stage (a pathological fleet): the penalised
    # first answer keeps the burst run on the quota triage's second replica needs, which the checker refuses
    def cut_short(model: Model, start: Any, *, effort: Effort, gap: float, **options: Any) -> Solution:
        if gap == 0.0:  # a tier stage; the last stage (the cost alone) runs as ever
            return Solution(start, float(model.cost @ start), -np.inf, "time_limit", "mip-start")
        return stage(model, start, effort=effort, gap=gap, **options)

    stage = priority_module._stage
    monkeypatch.setattr(priority_module, "_stage", cut_short)
    inv = _clinic()
    result = plan(inv)
    assert result.solver.status == "time_limit"
    assert placed(result).get("triage") == {"h100-owned": 1, "p5-od": 1}
    assert check_plan(inv, result) == []


def test_a_generated_fleets_tier_stages_cut_short_keep_the_spec_order(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    # seed 1 of the generator: with its tier stages cut short and no local stage, the first answer leaves
    # 20 burst replicas unplaced while opportunistic work holds GPUs where they fit
    def cut_short(model: Model, start: Any, *, effort: Effort, gap: float, **options: Any) -> Solution:
        if gap == 0.0:
            return Solution(start, float(model.cost @ start), -np.inf, "time_limit", "mip-start")
        return stage(model, start, effort=effort, gap=gap, **options)

    stage = priority_module._stage
    monkeypatch.setattr(priority_module, "_stage", cut_short)
    inv = generated(tmp_path, 300, 40, 1)
    result = plan(inv)
    assert result.solver.status == "time_limit" and result.unplaced
    assert check_plan(inv, result) == []
