"""Opportunistic work runs in what the others leave (spec, "Tier priority", revision 4): it never moves a
fixed or burst replica to dearer capacity, and the checker refuses a plan where it did, by planning the
inventory without its opportunistic workloads and comparing."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hybridctl.core.checker.check import check_plan
from hybridctl.core.checker.verify import opportunistic_violations
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.model import Placement, Plan
from support.cases import cloud, inventory, onprem, owned, placed, rented, work

DGX_USD = 8 * 730 * 2.1  # the owned DGX, paid whatever runs on it: $12,264 a month


def _dgx() -> dict[str, Any]:
    return dict(owned("dgx", "H100", 8, 2.1), gpus_per_node=8)


def _hospital() -> Inventory:
    # the fleet: an always-on clinical service and a 100-hour embedding job, each of 8 GPUs; only one fits
    # the owned DGX, and the embedding job may not rent
    return inventory(
        [onprem("hospital", "US", _dgx()), cloud("aws", "US", rented("p5-od", "H100", "p5.48xlarge", 64, 7.6))],
        [work("clinical", types=["H100"], count=8, hours=730, kind="realtime_inference", tier="fixed"),
         work("embed", types=["H100"], count=8, hours=100, kind="embedding", tier="opportunistic")],
        cost_model="cash")


def test_an_opportunistic_job_never_moves_the_fixed_service_off_the_owned_dgx() -> None:
    # revision 3 maximized the opportunistic GPU-hours before cost: embed took the DGX and the service rented a
    # p5 for $56,648 a month, its reason "dgx is full: its 8 GPUs are held by embed"
    inv = _hospital()
    result = plan(inv)
    assert placed(result) == {"clinical": {"dgx": 1}}
    assert result.total_usd_per_month == DGX_USD
    [missing] = result.unplaced
    assert missing.workload == "embed"
    assert "8 by fixed-tier workloads" in missing.reason
    assert check_plan(inv, result) == []
    assert opportunistic_violations(inv, result, PlanOptions()) == []


def test_everything_placed_at_least_cash_still_keeps_the_service_where_it_is_cheapest_alone() -> None:
    # the service could also rent a cheap L-machine at $1/GPU-h, the job only a dear one at $10: the least cash
    # of the whole ($5,840 + the DGX) puts the job on the DGX and the service on the rented machine; alone the
    # service runs on the DGX for nothing more, so it stays there and the job rents ($8,000)
    inv = inventory(
        [onprem("hospital", "US", _dgx()),
         cloud("cheap", "US", rented("cheap-od", "H100", "p5.48xlarge", 8, 1.0)),
         cloud("dear", "US", rented("dear-od", "H100", "p5.48xlarge", 8, 10.0))],
        [work("clinical", types=["H100"], count=8, hours=730, kind="realtime_inference", tier="fixed"),
         work("embed", types=["H100"], count=8, hours=100, kind="embedding", tier="opportunistic",
              sites=["hospital", "dear"])],
        cost_model="cash", allow_on_demand_for_opportunistic=True)
    result = plan(inv)
    assert placed(result) == {"clinical": {"dgx": 1}, "embed": {"dear-od": 1}}
    assert result.total_usd_per_month == DGX_USD + 8 * 100 * 10.0
    assert not result.unplaced
    assert check_plan(inv, result) == []
    assert opportunistic_violations(inv, result, PlanOptions()) == []


def _sharing(embed_sites: list[str]) -> Inventory:
    # 4-GPU always-on replicas on 8-GPU rented machines: two replicas in one pool share one machine
    return inventory(
        [cloud("near", "US", rented("near-od", "H100", "p5.48xlarge", 8, 1.0)),
         cloud("far", "US", rented("far-od", "H100", "p5.48xlarge", 8, 1.5))],
        [work("clinical", types=["H100"], count=4, hours=730, kind="realtime_inference", tier="fixed"),
         work("embed", types=["H100"], count=4, hours=730, kind="embedding", tier="opportunistic",
              sites=embed_sites)],
        cost_model="cash", allow_on_demand_for_opportunistic=True)


def test_an_opportunistic_replica_never_draws_a_service_onto_a_dearer_shared_machine() -> None:
    # one machine in `far` for both ($8,760) is less cash than one in each ($5,840 + $8,760), but alone the
    # service's machine is the one in `near`
    inv = _sharing(["far"])
    result = plan(inv)
    assert placed(result) == {"clinical": {"near-od": 1}, "embed": {"far-od": 1}}
    assert result.total_usd_per_month == 8 * 730 * 1.0 + 8 * 730 * 1.5
    assert opportunistic_violations(inv, result, PlanOptions()) == []


def test_an_opportunistic_replica_fills_the_spare_gpus_of_the_machine_the_service_needs() -> None:
    # the machine the service pays for alone has 4 GPUs spare: the job runs there for nothing more
    inv = _sharing(["near", "far"])
    result = plan(inv)
    assert placed(result) == {"clinical": {"near-od": 1}, "embed": {"near-od": 1}}
    assert result.total_usd_per_month == 8 * 730 * 1.0
    assert check_plan(inv, result) == []
    assert opportunistic_violations(inv, result, PlanOptions()) == []


def _moved(result: Plan, workload: str, pool: str, site: str, usd: float) -> Placement:
    [pl] = [p for p in result.placements if p.workload == workload]
    return replace(pl, pool=pool, site=site, usd_per_month=usd)


def test_the_checker_refuses_a_plan_where_opportunistic_work_moved_the_service() -> None:
    # revision 3's plan of the hospital, built by hand from the good one: the service rents, the job has the DGX
    inv = _hospital()
    good = plan(inv)
    service = _moved(good, "clinical", "p5-od", "aws", 8 * 730 * 7.6)
    job = Placement(workload="embed", tier="opportunistic", site="hospital", pool="dgx", replicas=1, gpus=8,
                    usd_per_month=8 * 100 * 2.1, demand="embed", gpu_type="H100", gpus_per_replica=8,
                    hours_per_month=100)
    bad = replace(good, placements=(service, job), unplaced=())
    [problem] = opportunistic_violations(inv, bad, PlanOptions())
    assert "$56,648.00 a month priced alone, $12,264.00 without the opportunistic workloads" in problem


def test_the_checker_refuses_a_plan_where_opportunistic_work_left_a_fixed_replica_unplaced() -> None:
    inv = inventory(
        [onprem("hospital", "US", _dgx())],
        [work("clinical", types=["H100"], count=8, hours=730, kind="realtime_inference", tier="fixed"),
         work("embed", types=["H100"], count=8, hours=100, kind="embedding", tier="opportunistic")],
        cost_model="cash")
    good = plan(inv)
    assert placed(good) == {"clinical": {"dgx": 1}}
    job = Placement(workload="embed", tier="opportunistic", site="hospital", pool="dgx", replicas=1, gpus=8,
                    usd_per_month=8 * 100 * 2.1, demand="embed", gpu_type="H100", gpus_per_replica=8,
                    hours_per_month=100)
    [service] = good.placements
    bad = replace(good, placements=(job,), unplaced=(replace(good.unplaced[0], workload="clinical",
                                                             demand="clinical", tier="fixed"),))
    [problem] = opportunistic_violations(inv, bad, PlanOptions())
    assert "the fixed tier places 0 GPU-hours" in problem and "5,840" in problem
    assert opportunistic_violations(inv, good, PlanOptions()) == []
    assert service.pool == "dgx"


def test_a_placed_service_is_never_said_to_be_kept_off_a_pool_by_opportunistic_work() -> None:
    # the service reads 20 TB held in the cloud: alone it runs there, where its data is, and the job then takes
    # the DGX; the service's reason is its data, never "dgx is full: its 8 GPUs are held by embed"
    inv = inventory(
        [onprem("hospital", "US", _dgx()),
         cloud("aws", "US", rented("p5-od", "H100", "p5.48xlarge", 64, 7.6), egress=0.09)],
        [work("clinical", types=["H100"], count=8, hours=730, kind="realtime_inference", tier="fixed",
              datasets=["scans"], data_passes_per_month=30),
         work("embed", types=["H100"], count=8, hours=100, kind="embedding", tier="opportunistic")],
        [{"name": "scans", "site": "aws", "size_gb": 20000, "sensitivity": "internal"}],
        cost_model="cash")
    result = plan(inv)
    assert placed(result) == {"clinical": {"p5-od": 1}, "embed": {"dgx": 1}}
    [service] = [p for p in result.placements if p.workload == "clinical"]
    assert "embed" not in service.reason and "full" not in service.reason
    assert "keeps its data local" in service.reason
