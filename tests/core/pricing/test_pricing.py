"""pricing/: the one statement of the prices. The solver's arrays give, column by column, the very floats
rates.py gives for the same replica; a plan's recorded costs are rates.py's; the totals and the showback
read a plan file without numpy."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.planner import plan
from hybridctl.core.placement.units import PoolTable
from hybridctl.core.pricing import rates, totals
from hybridctl.core.pricing.arrays import column_costs, pool_rework, rework_factors
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

CLI = Path(__file__).resolve().parents[3] / "cli"


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.stem)
@pytest.mark.parametrize("cash", [True, False], ids=["cash", "amortized"])
def test_the_arrays_are_the_rates_of_each_replica(path: Path, cash: bool) -> None:
    inventory = load_inventory(path).inventory
    pools = pool_infos(inventory)
    table = PoolTable.of(pools)
    index = EligibilityIndex(inventory, pools)
    pairs = [(d, p) for d in demands(inventory) for p in index.eligible(d)]
    assert pairs
    # the solver's columns read each replica's hours with its rework on spot, as formulation.py does
    interruptions, provision = pool_rework(pools)
    hours = np.array([d.hours * float(rework_factors(d.workload, d.hours, interruptions[[p]], provision[[p]])[0])
                      for d, p in pairs])
    costs = column_costs(np.array([float(d.gpu_count) for d, _ in pairs]), hours,
                         np.array([p for _, p in pairs], dtype=np.int64), table, cash)
    assert costs.objective.tolist() == [rates.objective_usd_per_month(d, pools[p], 1, cash) for d, p in pairs]
    assert costs.amortized.tolist() == [rates.replica_usd_per_month(d, pools[p]) for d, p in pairs]
    assert table.committed_usd.tolist() == [rates.committed_pool_usd_per_month(p) for p in pools]


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.stem)
def test_a_plan_records_the_rates(path: Path) -> None:
    inventory = load_inventory(path).inventory
    result = plan(inventory, options=AT_PLAN_WEEK)
    pools = {p.name: p for p in pool_infos(inventory)}
    by_key = {d.key: d for d in demands(inventory)}
    for placement in result.placements:
        demand = by_key[placement.demand or placement.workload]
        assert placement.usd_per_month == rates.placement_usd_per_month(demand, pools[placement.pool],
                                                                        placement.replicas)
    assert result.compute_usd_per_month == totals.compute_usd_per_month(result.placements)
    assert result.data_usd_per_month == totals.data_usd_per_month(result.data_movements)
    by_workload = totals.usd_by_workload(result.placements, result.data_movements)
    assert round(sum(by_workload.values()), 2) == pytest.approx(
        result.compute_usd_per_month + result.data_usd_per_month, abs=0.01 * len(by_workload))
    assert totals.cost_change(result.total_usd_per_month, result.total_usd_per_month) == 0.0


def test_the_catalog_price_is_per_gpu() -> None:
    from hybridctl.core.inventory.catalog import catalog

    p5 = catalog().instances["p5.48xlarge"]
    assert rates.catalog_usd_per_gpu_hour(p5) == p5.usd_per_hour / 8


def test_a_plan_file_is_totalled_without_numpy() -> None:
    code = ("import sys; import hybridctl.core.pricing.showback, hybridctl.core.pricing.totals, "
            "hybridctl.core.plan.model; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], env={"PYTHONPATH": str(CLI)}, capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "False"
