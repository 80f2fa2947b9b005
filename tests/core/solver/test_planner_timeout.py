"""When the solver's safety net strikes the plan is still feasible, and says it is not proven.

The greedy start (start.py) is built from the model's own rows: checked here row by row on
generated revision-2 inventories (whole machines, data movement, spreads, cost ceilings), and
through the planner with the solver made to keep nothing at once (the safety net cannot be
made to strike on a small model any other way), against the independent checker.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import yaml
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.formulation import formulate
from hybridctl.core.placement.planner import plan
from hybridctl.core.placement.units import PoolTable, build_units, components
from hybridctl.core.solver import highs_run
from hybridctl.core.solver import solve as solve_module
from hybridctl.core.solver.effort import Effort
from hybridctl.core.solver.milp import Col
from hybridctl.core.solver.solve import _nothing_placed
from hybridctl.core.solver.start import greedy_start
from hybridctl.drivers.inventory_files import load_inventory
from inventory_gen import generate


# both have cost ceilings and spreads; seed 3 also has twins counted by patterns
@pytest.fixture(scope="module", params=[(300, 40, 2), (300, 40, 3)])
def inventory(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Inventory:
    path = tmp_path_factory.mktemp("inv") / "inventory.yaml"
    path.write_text(yaml.safe_dump(generate(*request.param), sort_keys=False))
    return load_inventory(path).inventory


def test_the_greedy_start_keeps_every_row_and_places_most_replicas(inventory: Inventory) -> None:
    pools = pool_infos(inventory)
    table = PoolTable.of(pools)
    units = build_units(demands(inventory), EligibilityIndex(inventory, pools), None, table)
    ceilings = {w.name: w.max_usd_per_month for w in inventory.workloads if w.max_usd_per_month is not None}
    for group in components(units):
        model = formulate([units[i] for i in group], table, ceilings, 100.0)
        start = greedy_start(model, _nothing_placed(model, model.lower, np.ones(model.columns, dtype=np.bool_)))
        entry_col = np.repeat(np.arange(model.columns), np.diff(model.starts))
        activity = np.bincount(model.index, weights=model.value * start[entry_col], minlength=model.rows)
        assert np.all(activity <= model.rows_upper + 1e-6)
        assert np.all(activity >= model.rows_lower - 1e-6)
        assert np.all((start >= model.lower - 1e-9) & (start <= model.upper + 1e-9))
        assert np.all(np.abs(start[model.integer] - np.round(start[model.integer])) < 1e-9)
        replicas = start[model.kind == Col.UNPLACED].sum() + start[model.kind == Col.PLACE].sum()
        assert start[model.kind == Col.PLACE].sum() >= 0.8 * replicas  # capacity is ~55 % used


def test_a_solver_that_keeps_nothing_still_gives_a_valid_plan_marked_time_limit(
        inventory: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    def out_of_time(*args: Any, **kwargs: Any) -> highs_run.Run:
        return highs_run.Run(None, float("inf"), float("-inf"), "time_limit")

    monkeypatch.setattr(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0)  # the LP-guided route, whose LP times out
    monkeypatch.setattr(highs_run, "run", out_of_time)
    result = plan(inventory)
    assert result.solver.status == "time_limit"
    assert "greedy" in result.solver.method
    assert check_plan(inventory, result) == []
    placed = sum(p.replicas for p in result.placements)
    assert placed >= 0.8 * (placed + sum(u.replicas for u in result.unplaced))
    assert result.solver.gap > 0  # not proven: the bound is the trivial one


def test_a_solver_stopped_before_its_first_bound_claims_no_proven_gap(
        inventory: Inventory, monkeypatch: pytest.MonkeyPatch) -> None:
    # HiGHS stopped before its root LP (by the safety net on a big model; here, deterministically, by a node
    # limit of 0) keeps the start and has no dual bound: the plan's bound must not become its own objective
    # (a time-limited plan read "gap 0.0000%" on the 10,000-workload bench fleet)
    highs = highs_run._highs

    def before_the_root(effort: Effort, gap: float, integer: bool) -> Any:
        solver = highs(effort, gap, integer)
        solver.setOptionValue("mip_max_nodes", 0)  # type: ignore[attr-defined]
        return solver

    monkeypatch.setattr(highs_run, "_highs", before_the_root)
    result = plan(inventory)
    assert result.solver.status != "optimal"
    assert result.solver.bound < result.solver.objective and result.solver.gap > 0
