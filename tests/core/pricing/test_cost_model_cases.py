"""Hand-computed cases for the rules of inventory revision 2: node shape, whole machines, committed
versus pay-per-use pools, cash versus amortized, copies, max_sensitivity, spread over pool failure
domains, and the showback that allocates every dollar."""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.core.placement.planner import budget_violation
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.showback import IDLE_COMMITTED, CostDimension, showback
from support.cases import cash_inventory as inventory
from support.cases import cloud, onprem, owned, placed, rented, solve, work


def pool_of(result: Plan, name: str) -> Any:
    return next(p for p in result.pools if p.pool == name)


class TestNodeShape:
    def test_a_replica_wider_than_the_machine_goes_where_it_fits(self) -> None:
        # 4 L40S per replica: g6e.xlarge has 1 GPU per machine (cheaper per GPU), g6e.12xlarge has 4
        inv = inventory([cloud("c", "US", rented("small", "L40S", "g6e.xlarge", 16, 1.80),
                               rented("large", "L40S", "g6e.12xlarge", 16, 2.60))],
                        [work("llm", types=["L40S"], count=4, kind="realtime_inference", hours=730)])
        result = solve(inv)
        assert placed(result) == {"llm": {"large": 1}}
        assert pool_of(result, "large").machines == 1
        assert result.total_usd_per_month == pytest.approx(4 * 730 * 2.60)

    def test_no_pool_of_the_right_shape_leaves_it_unplaced_with_the_reason(self) -> None:
        inv = inventory([cloud("c", "US", rented("small", "L40S", "g6e.xlarge", 16, 1.80))],
                        [work("llm", types=["L40S"], count=4, kind="realtime_inference", hours=730)])
        result = solve(inv)
        assert placed(result) == {}
        assert result.unplaced[0].reason.startswith("no eligible pool: node shape:")

    def test_multi_node_training_spans_whole_machines_only(self) -> None:
        sites = [onprem("dc", "EU", {**owned("h100", "H100", 32, 2.0), "gpus_per_node": 8})]
        whole = solve(inventory(sites, [work("train", types=["H100"], count=16)]))  # training: multi_node default
        assert placed(whole) == {"train": {"h100": 1}}
        partial = solve(inventory(sites, [work("train", types=["H100"], count=12)]))
        assert placed(partial) == {}
        assert "node shape" in partial.unplaced[0].reason
        single = solve(inventory(sites, [{**work("train", types=["H100"], count=16),
                                          "gpu": {"types": ["H100"], "count": 16, "multi_node": False}}]))
        assert placed(single) == {}


class TestWholeMachines:
    def test_always_on_replicas_share_machines(self) -> None:
        # g6.12xlarge: 4 L4 per machine. 3 always-on 1-GPU replicas of two workloads share one machine.
        sites = [cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 16, 1.25))]
        result = solve(inventory(sites, [
            work("a", types=["L4"], kind="realtime_inference", hours=730, replicas=2),
            work("b", types=["L4"], kind="realtime_inference", hours=730)]))
        pool = pool_of(result, "l4x4")
        assert (pool.machines, pool.always_on_machines) == (1, 1)
        assert result.pay_per_use_usd_per_month == pytest.approx(4 * 730 * 1.25)  # $3,650: the whole machine
        assert result.compute_usd_per_month == pytest.approx(3 * 730 * 1.25)  # amortized: 3 GPUs
        five = solve(inventory(sites, [work("a", types=["L4"], kind="realtime_inference", hours=730, replicas=5)]))
        assert pool_of(five, "l4x4").machines == 2
        assert five.total_usd_per_month == pytest.approx(2 * 4 * 730 * 1.25)

    def test_part_time_replicas_own_their_machines(self) -> None:
        # a 1-GPU, 100-hour job on a 4-GPU machine pays the whole machine while it runs
        sites = [cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 16, 1.25))]
        result = solve(inventory(sites, [work("job", types=["L4"], replicas=2, hours=100)]))
        assert pool_of(result, "l4x4").machines == 2 and pool_of(result, "l4x4").always_on_machines == 0
        assert result.total_usd_per_month == pytest.approx(2 * 4 * 100 * 1.25)

    def test_the_quota_counts_whole_machines(self) -> None:
        # 8 GPUs of quota = 2 machines: two part-time 1-GPU replicas take both, the third does not fit
        sites = [cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 8, 1.25))]
        result = solve(inventory(sites, [work("job", types=["L4"], replicas=3, hours=100)]))
        assert placed(result) == {"job": {"l4x4": 2}}
        assert [(u.workload, u.replicas) for u in result.unplaced] == [("job", 1)]

    def test_the_planner_prefers_the_machine_size_that_rounds_least(self) -> None:
        # 1 always-on GPU: a 1-GPU machine at $1.40 beats a quarter of a 4-GPU machine at $1.00
        sites = [cloud("c", "US", rented("l4x1", "L4", "g6.xlarge", 8, 1.40),
                       rented("l4x4", "L4", "g6.12xlarge", 8, 1.00))]
        result = solve(inventory(sites, [work("api", types=["L4"], kind="realtime_inference", hours=730)]))
        assert placed(result) == {"api": {"l4x1": 1}}
        assert result.total_usd_per_month == pytest.approx(730 * 1.40)


class TestCommittedPools:
    def test_owned_capacity_fills_first_under_cash(self) -> None:
        # owned H100 amortized at $3/h, on-demand at $2/h: the owned GPUs are paid for anyway
        sites = [onprem("dc", "US", owned("own", "H100", 8, 3.0)),
                 cloud("c", "US", rented("od", "H100", "p5.48xlarge", 64, 2.0))]
        workloads = [work("train", types=["H100"], count=8, hours=100)]
        cash = solve(inventory(sites, workloads))
        assert placed(cash) == {"train": {"own": 1}}
        assert cash.placements[0].reason.startswith("committed capacity, paid for whether used or not")
        assert cash.committed_usd_per_month == pytest.approx(8 * 730 * 3.0)  # $17,520
        assert cash.pay_per_use_usd_per_month == 0.0
        assert cash.idle_committed_usd_per_month == pytest.approx(8 * 730 * 3.0 - 8 * 100 * 3.0)
        assert cash.total_usd_per_month == pytest.approx(17520.0)
        amortized = solve(inventory(sites, workloads, cost_model="amortized"))
        assert placed(amortized) == {"train": {"od": 1}}  # today's behaviour: the lower price per GPU-hour
        assert amortized.total_usd_per_month == pytest.approx(8 * 100 * 2.0)

    def test_reserved_cloud_pools_are_committed(self) -> None:
        sites = [cloud("c", "US", rented("res", "H100", "p5.48xlarge", 8, 4.0, "reserved"),
                       rented("od", "H100", "p5.48xlarge", 64, 2.0))]
        result = solve(inventory(sites, [work("train", types=["H100"], count=8, hours=100)]))
        assert placed(result) == {"train": {"res": 1}}
        assert result.total_usd_per_month == pytest.approx(8 * 730 * 4.0)

    def test_among_equal_cash_the_lowest_amortized_wins(self) -> None:
        sites = [onprem("dc", "US", owned("dear", "L4", 8, 2.0), owned("cheap", "L4", 8, 1.0))]
        result = solve(inventory(sites, [work("job", types=["L4"], replicas=3)]))
        assert placed(result) == {"job": {"cheap": 3}}
        assert result.total_usd_per_month == pytest.approx(8 * 730 * 3.0)  # both pools, whatever is used

    def test_the_budget_is_compared_with_cash(self) -> None:
        # the work costs $100 amortized, but the owned pool costs $2,920 a month whatever runs
        inv = inventory([onprem("dc", "EU", owned("l4", "L4", 4, 1.0))], [work("w", types=["L4"])],
                        monthly_budget_usd=1000)
        result = solve(inv)
        assert budget_violation(result) == ("the optimal plan costs $2,920.00/month (cash), over the monthly "
                                            "budget of $1,000.00 (policies.monthly_budget_usd)")
        under_amortized = inventory([onprem("dc", "EU", owned("l4", "L4", 4, 1.0))], [work("w", types=["L4"])],
                                    monthly_budget_usd=1000, cost_model="amortized")
        assert budget_violation(solve(under_amortized)) is None


COPIED = {"name": "d", "site": "a", "size_gb": 1000, "sensitivity": "internal", "copies": ["b"]}


class TestData:
    def test_a_copy_is_read_without_egress(self) -> None:
        sites = [onprem("a", "EU", owned("a-l4", "L4", 4, 2.0), egress=0.10),
                 onprem("b", "EU", owned("b-l4", "L4", 4, 1.0), egress=0.02)]
        result = solve(inventory(sites, [work("w", types=["L4"], datasets=["d"])], [COPIED],
                                 cost_model="amortized"))
        assert placed(result) == {"w": {"b-l4": 1}}
        assert result.data_movements == ()

    def test_elsewhere_the_cheapest_holder_pays(self) -> None:
        sites = [onprem("a", "EU", owned("a-l4", "L4", 4, 9.0), egress=0.10),
                 onprem("b", "EU", owned("b-l4", "L4", 4, 9.0), egress=0.02),
                 onprem("c", "EU", owned("c-l4", "L4", 4, 1.0))]
        result = solve(inventory(sites, [work("w", types=["L4"], datasets=["d"])], [COPIED],
                                 cost_model="amortized"))
        assert placed(result) == {"w": {"c-l4": 1}}
        [movement] = result.data_movements
        assert (movement.from_site, movement.to_site, movement.usd_per_month) == ("b", "c", 20.0)  # 1000 GB × $0.02


RESTRICTED = [{"name": "d", "site": "dc", "size_gb": 1, "sensitivity": "restricted"}]


class TestMaxSensitivity:
    def test_restricted_data_stays_off_an_edge_box_by_default(self) -> None:
        sites = [onprem("dc", "EU", owned("dc-l4", "L4", 4, 5.0)),
                 onprem("shop", "EU", owned("shop-l4", "L4", 4, 0.5), kind="edge")]
        result = solve(inventory(sites, [work("w", types=["L4"], datasets=["d"], data_passes_per_month=0)],
                                 RESTRICTED, cost_model="amortized"))
        assert placed(result) == {"w": {"dc-l4": 1}}

    def test_an_edge_site_may_be_trusted_with_it(self) -> None:
        shop = {**onprem("shop", "EU", owned("shop-l4", "L4", 4, 0.5), kind="edge"), "max_sensitivity": "restricted"}
        sites = [onprem("dc", "EU", owned("dc-l4", "L4", 4, 5.0)), shop]
        result = solve(inventory(sites, [work("w", types=["L4"], datasets=["d"], data_passes_per_month=0)],
                                 RESTRICTED, cost_model="amortized"))
        assert placed(result) == {"w": {"shop-l4": 1}}

    def test_a_site_may_be_narrowed_below_its_default(self) -> None:
        lab = {**onprem("lab", "EU", owned("lab-l4", "L4", 4, 0.5)), "max_sensitivity": "internal"}
        sites = [onprem("dc", "EU", owned("dc-l4", "L4", 4, 5.0)), lab]
        confidential = [{"name": "d", "site": "dc", "size_gb": 1, "sensitivity": "confidential"}]
        result = solve(inventory(sites, [work("w", types=["L4"], datasets=["d"], data_passes_per_month=0)],
                                 confidential, cost_model="amortized"))
        assert placed(result) == {"w": {"dc-l4": 1}}


class TestSpread:
    def test_zones_as_pools_count_as_failure_domains_for_any_tier(self) -> None:
        az1 = {**rented("az1", "L4", "g6.xlarge", 8, 1.0), "failure_domain": "use1-az1"}
        az2 = {**rented("az2", "L4", "g6.xlarge", 8, 1.5), "failure_domain": "use1-az2"}
        sites = [cloud("c", "US", az1, az2)]
        serving = solve(inventory(sites, [work("api", types=["L4"], kind="realtime_inference", hours=730,
                                               replicas=3, spread=2)]))
        assert placed(serving) == {"api": {"az1": 2, "az2": 1}}
        batch = solve(inventory(sites, [work("batch", types=["L4"], replicas=2, spread=2)]))  # burst tier
        assert placed(batch) == {"batch": {"az1": 1, "az2": 1}}
        unspread = solve(inventory(sites, [work("batch", types=["L4"], replicas=2)]))
        assert placed(unspread) == {"batch": {"az1": 2}}


class TestShowback:
    def test_every_dollar_is_allocated_with_an_idle_committed_line(self) -> None:
        sites = [onprem("dc", "US", owned("own", "L4", 4, 1.0)),
                 cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 16, 1.25))]
        inv = inventory(sites, [
            work("a", types=["L4"], kind="realtime_inference", hours=730, replicas=5, team="search"),
            work("b", types=["L4"], replicas=1, hours=100, team="ads")])
        result = solve(inv)
        for by in CostDimension:
            lines = showback(result, by)
            assert sum(line.total_usd_per_month for line in lines) == pytest.approx(result.total_usd_per_month,
                                                                                    abs=0.05), by
        by_team = {line.key: line.total_usd_per_month for line in showback(result, CostDimension.team)}
        assert set(by_team) == {"search", "ads", IDLE_COMMITTED}
        # the 4 owned GPUs ($2,920 whatever runs) take b (it would pay a $500 machine of its own) and 3
        # of a's replicas; a's other 2 share one always-on cloud machine ($3,650)
        assert placed(result) == {"a": {"own": 3, "l4x4": 2}, "b": {"own": 1}}
        assert result.total_usd_per_month == pytest.approx(2920 + 3650)
        assert by_team[IDLE_COMMITTED] == pytest.approx(2920 - 3 * 730 - 100)
