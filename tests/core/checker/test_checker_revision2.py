"""The independent checker on the rules of inventory revision 2: a valid plan passes, and the same
plan broken one rule at a time is flagged, naming the rule."""

from __future__ import annotations

import dataclasses
from typing import Any

from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import budget_violation, plan
from hybridctl.core.plan.model import DataMovement, Plan
from support.cases import cash_inventory as inventory
from support.cases import cloud, onprem, owned, rented, work


def valid(inv: Inventory) -> Plan:
    result = plan(inv)
    assert result.unplaced == ()
    assert check_plan(inv, result) == []
    return result


def move(result: Plan, workload: str, **changes: Any) -> Plan:
    placements = tuple(dataclasses.replace(p, **changes) if p.workload == workload else p for p in result.placements)
    return dataclasses.replace(result, placements=placements)


def flagged(inv: Inventory, broken: Plan, rule: str) -> None:
    problems = check_plan(inv, broken)
    assert any(rule in p for p in problems), problems


def test_node_shape() -> None:
    inv = inventory([cloud("c", "US", rented("small", "L40S", "g6e.xlarge", 16, 1.8),
                           rented("large", "L40S", "g6e.12xlarge", 16, 2.6))],
                    [work("llm", types=["L40S"], count=4, kind="realtime_inference", hours=730)])
    result = valid(inv)
    flagged(inv, move(result, "llm", pool="small", usd_per_month=4 * 730 * 1.8), "node shape")


def test_max_sensitivity() -> None:
    inv = inventory([onprem("dc", "EU", owned("dc-l4", "L4", 4, 5.0)),
                     onprem("shop", "EU", owned("shop-l4", "L4", 4, 0.5), kind="edge")],
                    [work("w", types=["L4"], datasets=["d"], data_passes_per_month=0)],
                    [{"name": "d", "site": "dc", "size_gb": 1, "sensitivity": "restricted"}])
    result = valid(inv)
    flagged(inv, move(result, "w", site="shop", pool="shop-l4", usd_per_month=50.0), "max_sensitivity")


def test_spread_over_pool_failure_domains() -> None:
    az1 = {**rented("az1", "L4", "g6.xlarge", 8, 1.0), "failure_domain": "use1-az1"}
    az2 = {**rented("az2", "L4", "g6.xlarge", 8, 1.5), "failure_domain": "use1-az2"}
    inv = inventory([cloud("c", "US", az1, az2)],
                    [work("batch", types=["L4"], replicas=2, spread=2)])
    result = valid(inv)
    both_in_az1 = move(result, "batch", pool="az1", usd_per_month=100.0)
    flagged(inv, both_in_az1, "spread")


def test_copies_are_read_without_egress_and_elsewhere_from_the_cheapest_holder() -> None:
    inv = inventory([onprem("a", "EU", owned("a-l4", "L4", 4, 2.0), egress=0.10),
                     onprem("b", "EU", owned("b-l4", "L4", 4, 1.0), egress=0.02),
                     onprem("c", "EU", owned("c-l4", "L4", 4, 9.0))],
                    [work("w", types=["L4"], datasets=["d"])],
                    [{"name": "d", "site": "a", "size_gb": 1000, "sensitivity": "internal", "copies": ["b"]}],
                    cost_model="amortized")
    result = valid(inv)
    assert result.data_movements == ()
    # charging egress at a holder of a copy is wrong
    charged = dataclasses.replace(result, data_movements=(DataMovement("w", "d", "a", "b", 1000, 100.0),))
    flagged(inv, charged, "data movement")
    # at a site without a copy, reading from the dearer holder is wrong too ($100 instead of $20)
    elsewhere = move(result, "w", site="c", pool="c-l4", usd_per_month=900.0)
    dear = dataclasses.replace(elsewhere, data_movements=(DataMovement("w", "d", "a", "c", 1000, 100.0),))
    flagged(inv, dear, "data movement")


def test_whole_machines_in_the_quota() -> None:
    inv = inventory([cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 8, 1.25))],
                    [work("job", types=["L4"], replicas=3, hours=100)])
    result = plan(inv)
    assert check_plan(inv, result) == []  # 2 placed (2 machines of the quota's 2), 1 unplaced
    three = move(result, "job", replicas=3, gpus=3, usd_per_month=375.0)
    three = dataclasses.replace(three, unplaced=())
    flagged(inv, three, "whole machines")


def test_machines_and_pool_costs_reported() -> None:
    inv = inventory([onprem("dc", "US", owned("own", "L4", 4, 1.0)),
                     cloud("c", "US", rented("l4x4", "L4", "g6.12xlarge", 16, 1.25))],
                    [work("a", types=["L4"], kind="realtime_inference", hours=730, replicas=6)])
    result = valid(inv)

    def with_pool(name: str, **changes: Any) -> Plan:
        return dataclasses.replace(result, pools=tuple(dataclasses.replace(p, **changes) if p.pool == name else p
                                                       for p in result.pools))

    flagged(inv, with_pool("l4x4", machines=0), "machines")
    flagged(inv, with_pool("l4x4", usd_per_month=1.0), "pool cost")
    flagged(inv, with_pool("own", usd_per_month=1.0), "committed cost")
    flagged(inv, with_pool("own", amortized_usd_per_month=0.0), "idle committed cost")
    flagged(inv, dataclasses.replace(result, cost_model="amortized"), "cost model")


def test_budget_under_the_cost_model() -> None:
    inv = inventory([onprem("dc", "EU", owned("l4", "L4", 4, 1.0))], [work("w", types=["L4"])],
                    monthly_budget_usd=3000)
    result = valid(inv)
    assert budget_violation(result) is None
    over = inventory([onprem("dc", "EU", owned("l4", "L4", 4, 1.0))], [work("w", types=["L4"])],
                     monthly_budget_usd=2000)
    assert budget_violation(plan(over)) is not None
