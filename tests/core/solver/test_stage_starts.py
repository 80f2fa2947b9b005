"""What a priority stage starts from (priority.py, refine.py): the answer the stages before it kept, and for a
timed model whose route's answer the stages solve again, that answer, not a whole MIP's proof of it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from _pytest.monkeypatch import MonkeyPatch
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.formulation import formulate
from hybridctl.core.placement.units import PoolTable, build_units
from hybridctl.core.solver import highs_run
from hybridctl.core.solver import solve as solve_module
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Model
from hybridctl.core.solver.refine import improve
from hybridctl.core.solver.solve import Solution, solve
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

    monkeypatch.setattr(solve_module, "_timed", lambda _: True)
    monkeypatch.setattr(solve_module, "TIMED_ROUTE_MIN_COLUMNS", 0)
    monkeypatch.setattr(solve_module, "_lp_guided", lambda *_: routed)
    monkeypatch.setattr(highs_run, "run", counted)
    assert solve(model, effort=Effort(), gap=0.0, restaged=lambda _: True) is routed and whole_mips == []
    assert solve(model, effort=Effort(), gap=0.0, restaged=lambda _: False).method == "mip-timed"
    assert whole_mips == [model.columns]
