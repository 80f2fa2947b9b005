"""`policies.failover_max_price_ratio` (the spec's "Incidents are cash too", revision 4): in a failover, burst and
opportunistic work moves only to a pool whose price per GPU-hour is at most the ratio (default 2) times its rate in
the applied plan; otherwise it waits, unplaced, with a reason that names the ratio and the price that kept it.
Fixed work is never held back by it.

The finding: a 200-GPU-hour opportunistic embedding job on an owned L4 at $0.70/GPU-h ($140 a month) moved, when its
site was lost, onto spot at three times its price. Here: dc-a owns one L4 at $0.70 (embed), dc-b one at $0.50
(api, always on, fixed); the cloud rents L4 spot at $2.10 (3 × $0.70) and on demand at $2.10 (4.2 × $0.50).
"""

from __future__ import annotations

from typing import Any

import pytest
from failover_helpers import load
from hybridctl.core.checker.failover_price import price_ratio_violations
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import replan
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.operations.inventory import inventory_schema
from support.cases import cash_inventory, cloud, owned, placed, rented, solve, work
from support.failover_runs import failed_over

BOTH_LOST = parse_events(["site-lost dc-a", "site-lost dc-b"])


def fleet(embed_tier: str = "opportunistic", **policies: Any):
    return cash_inventory(
        [{"name": "dc-a", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
          "latency_ms": {"users": 10}, "pools": [owned("a-l4", "L4", 1, 0.70)]},
         {"name": "dc-b", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
          "latency_ms": {"users": 10}, "pools": [owned("b-l4", "L4", 1, 0.50)]},
         cloud("cloud", "EU", rented("spot-l4", "L4", "g6.xlarge", 8, 2.10, "spot"),
               rented("od-l4", "L4", "g6.xlarge", 8, 2.10, "on_demand"))],
        [work("embed", types=["L4"], hours=200, kind="embedding", tier=embed_tier, preemptible=True,
              checkpoint_minutes=30, sites=["dc-a", "cloud"]),
         work("api", types=["L4"], hours=730, kind="realtime_inference", sites=["dc-b", "cloud"])], **policies)


@pytest.mark.parametrize("tier", ["opportunistic", "burst"])
def test_work_that_would_rent_above_the_ratio_waits_and_says_why(tier: str) -> None:
    inventory = fleet(tier)
    base = solve(inventory)
    assert placed(base) == {"embed": {"a-l4": 1}, "api": {"b-l4": 1}}
    after = replan(inventory, base, BOTH_LOST).after
    # before: embed on spot at $2.10, three times the $0.70 it paid
    assert "embed" not in placed(after)
    (waiting,) = [u for u in after.unplaced if u.workload == "embed"]
    assert waiting.reason.startswith("no eligible pool: deferred: the cheapest pool left costs $2.10/GPU-hour, and "
                                     "in a failover it moves only to a pool of at most $1.40/GPU-hour "
                                     "(policies.failover_max_price_ratio 2 × the $0.70 it paid in the applied plan)")
    # fixed work is never held back: api moves to on demand at 4.2 × its rate
    assert placed(after)["api"] == {"od-l4": 1}


def test_a_ratio_that_allows_the_price_lets_it_move() -> None:
    inventory = fleet(failover_max_price_ratio=3)
    after = replan(inventory, solve(inventory), BOTH_LOST).after
    assert placed(after)["embed"] == {"spot-l4": 1}


def test_a_price_spike_on_its_own_pool_makes_it_wait() -> None:
    inventory = fleet()
    base = solve(inventory)
    after = replan(inventory, base, parse_events(["site-lost dc-a", "price spot-l4=1.40"])).after
    assert placed(after)["embed"] == {"spot-l4": 1}  # $1.40: 2 × $0.70 exactly
    after = replan(inventory, base, parse_events(["site-lost dc-a", "price spot-l4=1.41"])).after
    assert "embed" not in placed(after)


def test_the_failover_pipeline_checks_it_and_the_checker_finds_a_move_above_it() -> None:
    inventory = fleet(failover_max_price_ratio=3)
    base = solve(inventory)
    _, result = failed_over(inventory, base, BOTH_LOST)  # checked by the pipeline at ratio 3: no problem
    assert placed(result.after)["embed"] == {"spot-l4": 1}
    assert price_ratio_violations(base, result.after, 3) == []
    assert price_ratio_violations(base, result.after, 2) == [
        "embed (opportunistic) runs in spot-l4 at $2.1000/GPU-hour, more than policies.failover_max_price_ratio 2 × "
        "the $0.7000 it paid in the applied plan"]


def _inventory_with(ratio: object) -> dict[str, Any]:
    return {"version": 1, "name": "ratio", "regions": ["eu-users"], "policies": {"failover_max_price_ratio": ratio},
            "sites": [], "datasets": [], "workloads": []}


@pytest.mark.parametrize(("ratio", "words"), [(0.5, "at least 1"), (1001, "upper bound of 1000"), ("2", "number")])
def test_a_bad_ratio_is_an_error_at_its_line(ratio: object, words: str) -> None:
    with pytest.raises(InvalidInventoryError) as caught:
        load(_inventory_with(ratio))
    (error,) = caught.value.diagnostics
    assert "policies.failover_max_price_ratio" in error.message and words in error.message
    assert error.location is not None and error.location.line == 6  # the policy's own line of the YAML


def test_the_policy_defaults_to_2_and_is_in_the_schema() -> None:
    assert load(_inventory_with(1)).policies.failover_max_price_ratio == 1
    assert fleet().policies.failover_max_price_ratio == 2
    schema = inventory_schema()["$defs"]["Policies"]["properties"]["failover_max_price_ratio"]
    assert (schema["default"], schema["minimum"], schema["maximum"], schema["type"]) == (2, 1, 1000, "number")


def test_when_the_cheaper_pools_are_full_the_reason_still_names_the_ratio() -> None:
    # embed may also use dc-b's $0.50 L4, which api holds: it waits, and says spot's price is what keeps it
    inventory = cash_inventory(
        [{"name": "dc-a", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
          "latency_ms": {"users": 10}, "pools": [owned("a-l4", "L4", 1, 0.70)]},
         {"name": "dc-b", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
          "latency_ms": {"users": 10}, "pools": [owned("b-l4", "L4", 1, 0.50)]},
         cloud("cloud", "EU", rented("spot-l4", "L4", "g6.xlarge", 8, 2.10, "spot"))],
        [work("embed", types=["L4"], hours=200, kind="embedding", tier="opportunistic", preemptible=True,
              checkpoint_minutes=30),
         work("api", types=["L4"], hours=730, kind="realtime_inference", sites=["dc-b"])])
    base = solve(inventory)
    assert placed(base) == {"embed": {"a-l4": 1}, "api": {"b-l4": 1}}
    after = replan(inventory, base, parse_events(["site-lost dc-a"])).after
    (waiting,) = after.unplaced
    assert waiting.workload == "embed"
    assert waiting.reason.endswith("; deferred rather than rent spot-l4 at $2.10/GPU-hour: in a failover it moves only to a "
                                   "pool of at most $1.40/GPU-hour (policies.failover_max_price_ratio 2 × the $0.70 "
                                   "it paid in the applied plan)")
