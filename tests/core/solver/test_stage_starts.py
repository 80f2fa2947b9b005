"""What a priority stage starts from (priority.py, refine.py): the answer the stages before it kept, and for a
timed model whose route's answer the stages solve again, that answer, not a whole MIP's proof of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import yaml
from _pytest.monkeypatch import MonkeyPatch
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement import planner as planner_module
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.formulation import formulate
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.placement.tiers import Tier
from hybridctl.core.placement.units import PoolTable, Unit, build_units
from hybridctl.core.solver import highs_run, priority
from hybridctl.core.solver import solve as solve_module
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Col, Model
from hybridctl.core.solver.refine import improve
from hybridctl.core.solver.solve import Solution, solve, units_of
from hybridctl.core.week.segments import IsoWeek
from hybridctl.drivers.inventory_files import load_inventory
from inventory_gen import generate
from support.generated import generated


def _model(inv: Inventory) -> Model:
    pools = pool_infos(inv)
    table = PoolTable.of(pools)
    units = build_units(demands(inv), EligibilityIndex(inv, pools), None, table)
    ceilings = {w.name: w.max_usd_per_month for w in inv.workloads if w.max_usd_per_month is not None}
    return formulate(units, table, ceilings, 100.0, cash=True)


def test_a_stage_whose_mip_finds_only_as_good_keeps_its_start(tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    # a stage prices only its own objective: an answer of equal value may put everything else anywhere (on the
    # bench's 1,000 x 100 scheduled seed 3 the fixed tier's stage handed the last one a start $591,000 dearer)
    model = _model(generated(tmp_path, 60, 8, 1))
    start = solve(model, effort=Effort(), gap=0.0).values
    elsewhere = np.where(start > 0.5, 0.0, start)  # what the stage's objective does not see

    def as_good(*_: Any, **__: Any) -> highs_run.Run:
        return highs_run.Run(elsewhere, float(model.cost @ start), float(model.cost @ start), "optimal")

    monkeypatch.setattr(highs_run, "run", as_good)
    kept = improve(model, start, effort=Effort(), gap=0.0)
    assert np.array_equal(kept.values, start) and kept.method == "mip-start"


def test_a_timed_route_answer_the_stages_solve_again_is_not_proven_by_a_whole_mip(
        tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    # the stages solve the model again from the first answer and prove their own: on 1,000 x 100 scheduled
    # (seed 1) the whole MIP's proof of the route's answer was 2 of 10 CPU-s, and the stages changed it
    model = _model(generated(tmp_path, 60, 8, 1))
    routed = Solution(model.lower.copy(), float(model.cost @ model.lower), 0.0, "gap_limit", "lp-fix-mip")
    whole_mips: list[int] = []
    run = highs_run.run

    def counted(*args: Any, **kwargs: Any) -> highs_run.Run:
        whole_mips.append(len(args[1]))
        return run(*args, **kwargs)

    monkeypatch.setattr(solve_module, "is_timed", lambda _: True)
    monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    monkeypatch.setattr(solve_module, "_lp_guided", lambda *_: routed)
    monkeypatch.setattr(highs_run, "run", counted)
    assert solve(model, effort=Effort(), gap=0.0, restaged=lambda _: True) is routed and whole_mips == []
    assert solve(model, effort=Effort(), gap=0.0, restaged=lambda _: False).method == "mip-timed"
    assert whole_mips == [model.columns]


def test_a_timed_models_stages_after_the_cash_alone_start_from_the_opportunistic_units_solved_alone(
        tmp_path: Path, monkeypatch: MonkeyPatch) -> None:
    # the cash-alone stage leaves opportunistic replicas wherever (they cost nothing there) and the tier's stage
    # leaves their cost wherever: the stage after each starts from a MIP over the opportunistic units alone
    path = tmp_path / "inventory.yaml"
    path.write_text(yaml.safe_dump(generate(300, 40, 1, 0.3), sort_keys=False))
    inv = load_inventory(path).inventory
    staged: list[tuple[list[Unit], Model]] = []
    starts: list[tuple[Model, np.ndarray]] = []
    stages, over = planner_module.by_priority, priority.improve_over

    def watched(units: list[Unit], model: Model, first: Solution, **given: Any) -> Solution:
        staged.append((units, model))
        return stages(units, model, first, **given)

    def recorded(model: Model, start: np.ndarray, free: np.ndarray, **given: Any) -> Solution:
        starts.append((model, free))
        return over(model, start, free, **given)

    monkeypatch.setattr(planner_module, "by_priority", watched)
    monkeypatch.setattr(priority, "improve_over", recorded)
    result = plan(inv, options=PlanOptions(week=IsoWeek(2026, 48)))
    assert check_plan(inv, result) == []
    ((units, model),) = staged
    opportunistic = np.array([units[u].tier is Tier.OPPORTUNISTIC if u < len(units) else False for u in model.unit])
    theirs = units_of(model, opportunistic & (model.kind == Col.PLACE)) | (model.unit >= model.demand_rows)
    assert len(starts) == 2  # before the opportunistic tier's stage and before the last
    for stage_model, free in starts:
        assert np.array_equal(free[:model.columns], theirs) and free[model.columns:].all()
        assert stage_model.columns >= model.columns
