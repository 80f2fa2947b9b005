"""Cost ceilings that no placement can break are left out of the model, so that their workloads
merge with their twins (exact: the row could never bind); a ceiling that can bind still holds."""

from __future__ import annotations

from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.eligibility import EligibilityIndex, demands, pool_infos
from hybridctl.core.placement.planner import plan
from hybridctl.core.placement.units import PoolTable, build_units
from support.cases import inventory, onprem, owned, placed, work

# two pools: 2 GPUs at $1/GPU-hour and 4 at $3; a replica of 1 GPU for 100 h costs $100 or $300
SITES = [onprem("dc", "EU", owned("cheap", "L4", 2, 1.0), owned("dear", "L4", 4, 3.0))]


def _units(inv: Inventory) -> list[tuple[str, ...]]:
    pools = pool_infos(inv)
    units = build_units(demands(inv), EligibilityIndex(inv, pools), {}, PoolTable.of(pools))
    return sorted(tuple(sorted(d.key for d in u.members)) for u in units)


def test_ceilings_above_the_dearest_placement_merge_twins_and_a_binding_one_keeps_its_unit() -> None:
    # worst case of 2 replicas: 2 x $300 = $600 (a ceiling of exactly that counts as binding: tolerance)
    inv = inventory(SITES, [work("a", types=["L4"], replicas=2, max_usd_per_month=601.0),
                            work("b", types=["L4"], replicas=2, max_usd_per_month=10_000.0),
                            work("c", types=["L4"], replicas=2),
                            work("d", types=["L4"], replicas=2, max_usd_per_month=599.0),
                            # another eligibility signature that leaves the same pools: still a twin
                            work("e", types=["L4"], replicas=2, latency={"region": "users", "p95_ms": 500})])
    assert _units(inv) == [("a", "b", "c", "e"), ("d",)]


def test_a_binding_ceiling_still_holds_in_the_plan() -> None:
    # 4 replicas want 4 GPUs: 2 fit at $100 each, the other 2 cost $300 each; $700 allows only one of those
    inv = inventory(SITES, [work("capped", types=["L4"], replicas=4, max_usd_per_month=700.0),
                            work("free", types=["L4"], replicas=1, max_usd_per_month=1_000.0)])
    result = plan(inv)
    assert check_plan(inv, result) == []
    assert sum(placed(result)["capped"].values()) == 3
    assert sum(p.usd_per_month for p in result.placements if p.workload == "capped") <= 700.0
