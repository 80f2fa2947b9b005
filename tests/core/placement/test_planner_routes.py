"""Every route through the planner, reached on purpose and checked against an oracle.

test_planner_properties.py covers the common case. Its generator rarely or never makes:
- spreads of 3 or more domains with up to 5 replicas (the planner's per-domain binaries);
- the exact re-solve (twins that pay data movement, merged, and handed back at a loss);
- federated work, fallbacks, a previous plan, pools priced by the catalog.
Here each is made on purpose: the first two against the brute-force oracle, the rest against
the independent checker and invariants that hold whatever the prices.
"""

from __future__ import annotations

from typing import Any
from unittest.mock import patch

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import replan
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement import patterns as patterns_module
from hybridctl.core.placement import planner as planner_module
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.model import Plan
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_planner_properties import (
    LP_ROUTE_TOLERANCE,
    _load,
    _validatable,
    brute_force,
    lp_route_against_brute_force,
    plan_objective,
    same,
)


def _pool(name: str, kind: str, capacity: int, price: float | None, gpu: str = "L4") -> dict[str, Any]:
    if kind == "cloud":
        pool: dict[str, Any] = {"name": name, "gpu": gpu, "instance_type": {"L4": "g6.xlarge", "T4": "g4dn.xlarge"}[gpu],
                                "max_gpus": capacity, "capacity_type": "on_demand"}
    else:
        pool = {"name": name, "gpu": gpu, "gpus": capacity, "capacity_type": "reserved"}
    if price is not None:
        pool["usd_per_gpu_hour"] = price
    return pool


def _site(i: int, kind: str, pools: list[dict[str, Any]], *, domain: str | None = None, latency: int = 10,
          egress: float = 0.0) -> dict[str, Any]:
    site: dict[str, Any] = {"name": f"s{i}", "kind": kind, "jurisdiction": "EU", "egress_usd_per_gb": egress,
                            "latency_ms": {"users": latency}, "pools": pools}
    if domain:
        site["failure_domain"] = domain
    if kind == "cloud":
        site.update(provider="aws", region="eu-west-1", cluster=f"k{i}")
    return site


# --- spreads of 3 or more -------------------------------------------------------------------------


@st.composite
def spread_inventories(draw: st.DrawFn) -> dict[str, Any]:
    n_sites = draw(st.integers(3, 5))
    sites = []
    for i in range(n_sites):
        kind = draw(st.sampled_from(["onprem", "onprem", "cloud"]))
        price = draw(st.sampled_from([0.5, 1.0, 1.5, 2.5]))
        sites.append(_site(i, kind, [_pool(f"p{i}", kind, draw(st.integers(1, 5)), price)],
                           domain=draw(st.sampled_from([None, None, "shared"])),
                           latency=draw(st.sampled_from([10, 30, 60]))))
    workloads = []
    for w in range(draw(st.integers(1, 2))):
        workload: dict[str, Any] = {"name": f"w{w}", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                                    "replicas": draw(st.integers(3, 5))}
        if draw(st.booleans()):
            workload["latency"] = {"region": "users", "p95_ms": 30}  # sites at exactly 30 ms are inside
        workloads.append(workload)
    return {"version": 1, "name": "spread", "regions": ["users"],
            "policies": {"spread_fixed_across": draw(st.integers(3, 4))}, "sites": sites, "datasets": [],
            "workloads": workloads}


@settings(max_examples=80, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(spread_inventories())
def test_spreads_of_three_or_more_are_valid_and_optimal(raw: dict[str, Any]) -> None:
    raw = _validatable(raw)
    assume(raw["workloads"])
    inventory = _load(raw)
    result = plan(inventory, options=PlanOptions(gap=0.0))
    assert check_plan(inventory, result) == []
    optimum = brute_force(inventory)
    assert same(plan_objective(inventory, result), optimum)


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(spread_inventories())
def test_spreads_of_three_or_more_on_the_lp_guided_route(raw: dict[str, Any]) -> None:
    _, _, optimum, got = lp_route_against_brute_force(raw)
    assert same((*got[:3], 0.0), (*optimum[:3], 0.0))  # tier priority is exact
    assert optimum[3] - 0.01 <= got[3] <= optimum[3] * (1 + LP_ROUTE_TOLERANCE) + 0.01


def test_a_spread_of_three_fills_three_domains_even_when_one_is_dearer() -> None:
    """Hand-worked: s0 and s1 share a domain and are cheap; the third domain must be paid for."""
    inventory = _load({"version": 1, "name": "spread3", "regions": ["users"], "policies": {"spread_fixed_across": 3},
                       "sites": [_site(0, "onprem", [_pool("p0", "onprem", 4, 1.0)], domain="d"),
                                 _site(1, "onprem", [_pool("p1", "onprem", 4, 1.0)], domain="d"),
                                 _site(2, "onprem", [_pool("p2", "onprem", 4, 1.0)], domain="e"),
                                 _site(3, "onprem", [_pool("p3", "onprem", 4, 3.0)])],
                       "datasets": [],
                       "workloads": [{"name": "api", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                                      "replicas": 5}]})
    result = plan(inventory)
    assert check_plan(inventory, result) == []
    domains = {"p0": "d", "p1": "d", "p2": "e", "p3": "s3"}
    assert len({domains[p.pool] for p in result.placements}) == 3
    assert sum(p.replicas for p in result.placements if p.pool == "p3") == 1  # one replica, no more, at $3
    assert result.compute_usd_per_month == 730 * (4 * 1.0 + 3.0)


# --- the exact re-solve ---------------------------------------------------------------------------


def twins_that_must_split() -> Inventory:
    """Two twins of 3 replicas read a dataset at s0 (no L4 there). s1, s2, s3 hold 2 L4 each, and
    each placement site pays $100 of movement once per workload. The merged model counts one payment
    per site (3 × $100), but 3 replicas cannot sit in one 2-GPU site: every twin pays at two sites,
    so 4 × $100 at the least. Handing the merged answer back loses $100 against its own count."""
    return _load({
        "version": 1, "name": "twins", "regions": ["users"],
        "sites": [_site(0, "onprem", [_pool("home-t4", "onprem", 1, 1.0, gpu="T4")], egress=0.1),
                  *(_site(i, "onprem", [_pool(f"p{i}", "onprem", 2, 1.0)]) for i in (1, 2, 3))],
        "datasets": [{"name": "ds", "site": "s0", "size_gb": 1000, "sensitivity": "internal"}],
        "workloads": [{"name": name, "type": "training", "gpu": {"types": ["L4"], "count": 1}, "replicas": 3,
                       "hours_per_month": 100, "datasets": ["ds"]} for name in ("a", "b")]})


def _recorded_plan(inventory: Inventory, patterns_max: int) -> tuple[Plan, list[bool]]:
    """The plan, and merge_egress of every build_units call (a second call is the exact re-solve)."""
    calls: list[bool] = []
    real = planner_module.build_units

    def recording(*args: Any, merge_egress: bool = True, **kwargs: Any) -> Any:
        calls.append(merge_egress)
        return real(*args, merge_egress=merge_egress, **kwargs)

    with patch.object(planner_module, "build_units", recording), \
            patch.object(patterns_module, "PATTERNS_MAX", patterns_max):
        return plan(inventory, options=PlanOptions(gap=0.0)), calls


class TestTheExactResolve:
    """Twins counted per site (a relaxation; here with patterns turned off) are re-solved unmerged."""

    def test_is_reached_and_proves_the_optimum(self) -> None:
        inventory = twins_that_must_split()
        result, calls = _recorded_plan(inventory, patterns_max=0)
        assert calls == [True, False]  # merged first, then unmerged: the exact re-solve ran
        assert check_plan(inventory, result) == []
        # 6 replicas × 100 h × $1 = 600 compute; 4 payments × 1000 GB × $0.10 = 400 movement
        assert (result.compute_usd_per_month, result.data_usd_per_month) == (600.0, 400.0)
        assert same(plan_objective(inventory, result), brute_force(inventory))
        # the unmerged model's bound closes the gap the merged relaxation left open
        assert (result.solver.status, result.solver.gap) == ("optimal", 0.0)

    def test_without_it_the_gap_would_stay_open(self) -> None:
        with patch.object(planner_module, "EXACT_RESOLVE_MAX_COLUMNS", 0), \
                patch.object(patterns_module, "PATTERNS_MAX", 0):
            result = plan(twins_that_must_split(), options=PlanOptions(gap=0.0))
        assert result.solver.gap > 0.0  # this is what the re-solve is for


def test_twin_patterns_count_the_split_exactly_without_a_re_solve() -> None:
    """With patterns (patterns.py) the merged model is exact: it counts the fourth payment itself,
    hands back what it counted, and proves the optimum on its own."""
    inventory = twins_that_must_split()
    result, calls = _recorded_plan(inventory, patterns_max=patterns_module.PATTERNS_MAX)
    assert calls == [True]  # no re-solve was needed
    assert check_plan(inventory, result) == []
    assert (result.compute_usd_per_month, result.data_usd_per_month) == (600.0, 400.0)
    assert same(plan_objective(inventory, result), brute_force(inventory))
    assert (result.solver.status, result.solver.gap) == ("optimal", 0.0)


# --- federated work, fallbacks, a previous plan, catalog prices ----------------------------------


@st.composite
def mixed_inventories(draw: st.DrawFn) -> dict[str, Any]:
    n_sites = draw(st.integers(2, 4))
    sites = []
    for i in range(n_sites):
        kind = draw(st.sampled_from(["onprem", "cloud", "edge"]))
        pools = [_pool(f"p{i}{j}", "cloud" if kind == "cloud" else kind, draw(st.integers(1, 4)),
                       # a cloud pool without a price takes the catalog's list price
                       None if kind == "cloud" and draw(st.booleans()) else draw(st.sampled_from([0.4, 0.9, 2.0])),
                       gpu=draw(st.sampled_from(["L4", "T4"])))
                 for j in range(draw(st.integers(1, 2)))]
        sites.append(_site(i, kind, pools, egress=draw(st.sampled_from([0.0, 0.05])),
                           domain=draw(st.sampled_from([None, "shared"]))))
    datasets = [{"name": f"ds{d}", "site": draw(st.sampled_from(sites))["name"], "size_gb": 100,
                 "sensitivity": draw(st.sampled_from(["internal", "confidential"]))} for d in range(draw(st.integers(1, 3)))]
    workloads: list[dict[str, Any]] = []
    for w in range(draw(st.integers(2, 5))):
        kind = draw(st.sampled_from(["federated_training", "realtime_inference", "training", "experiment"]))
        workload: dict[str, Any] = {"name": f"w{w}", "type": kind, "replicas": draw(st.integers(1, 3)),
                                    "gpu": {"types": draw(st.sampled_from([["L4"], ["T4"], ["L4", "T4"]])),
                                            "count": draw(st.integers(1, 2))}}
        if kind != "realtime_inference":
            workload["hours_per_month"] = draw(st.sampled_from([100, 730]))
        if kind == "federated_training" or draw(st.booleans()):
            workload["datasets"] = draw(st.lists(st.sampled_from([d["name"] for d in datasets]), min_size=1,
                                                 max_size=2, unique=True))
        if kind == "realtime_inference" and draw(st.booleans()):
            workload["fallback"] = {"gpu": {"types": ["L4", "T4"], "count": 1}, "replicas": 1}
        workloads.append(workload)
    return {"version": 1, "name": "mixed", "regions": ["users"],
            "policies": {"spread_fixed_across": draw(st.sampled_from([1, 2]))}, "sites": sites, "datasets": datasets,
            "workloads": workloads}


def _placed(result: Plan) -> list[tuple[str, str, int]]:
    return sorted((p.demand or p.workload, p.pool, p.replicas) for p in result.placements)


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_inventories(), st.data())
def test_federated_fallbacks_previous_plan_and_catalog_prices(raw: dict[str, Any], data: st.DataObject) -> None:
    try:
        inventory = _load(raw)
    except InvalidInventoryError:  # the generator may make what validation rightly rejects
        assume(False)
    result = plan(inventory)
    assert check_plan(inventory, result) == []
    for w in inventory.workloads:
        if w.type.value == "federated_training":  # one trainer group per site holding its data
            homes = {d.site for d in inventory.datasets if d.name in w.datasets}
            keys = {p.demand for p in result.placements if p.workload == w.name} | {
                u.demand for u in result.unplaced if u.workload == w.name}
            assert keys == {f"{w.name}@{site}" for site in homes}
            assert all(p.site in homes for p in result.placements if p.workload == w.name)
    # planned again against itself, nothing moves and nothing costs more
    again = plan(inventory, previous=result)
    assert check_plan(inventory, again) == []
    assert _placed(again) == _placed(result)
    assert again.total_usd_per_month == pytest.approx(result.total_usd_per_month, abs=0.01)
    # a pool is lost: the failover plan (fallbacks included) is valid for the disrupted inventory
    pools = [p.name for s in inventory.sites for p in s.pools]
    lost = data.draw(st.sampled_from(pools))
    failover = replan(inventory, result, parse_events([f"pool-lost {lost}"]))
    assert check_plan(failover.disruption.inventory, failover.after) == []
    assert all(p.pool != lost for p in failover.after.placements)
    for p in failover.after.placements:
        if p.degraded:
            w = next(w for w in inventory.workloads if w.name == p.workload)
            assert w.fallback is not None and p.gpus == p.replicas * 1


def test_a_catalog_priced_pool_costs_the_list_price() -> None:
    """g6.xlarge lists at $0.805/h for its one L4: 100 h cost $80.50."""
    inventory = _load({"version": 1, "name": "catalog", "regions": ["users"],
                       "sites": [_site(0, "cloud", [_pool("od", "cloud", 2, None)])], "datasets": [],
                       "workloads": [{"name": "t", "type": "training", "gpu": {"types": ["L4"], "count": 1},
                                      "hours_per_month": 100}]})
    result = plan(inventory)
    assert check_plan(inventory, result) == []
    assert [(p.pool, p.usd_per_month) for p in result.placements] == [("od", 80.5)]


@st.composite
def twins_paying_movement(draw: st.DrawFn) -> dict[str, Any]:
    """Identical workloads of 3 replicas reading one dataset from a site without their GPU, over
    sites of a few GPUs with different prices: the merged twins are counted by patterns."""
    n_sites = draw(st.integers(2, 3))
    sites = [_site(0, "onprem", [_pool("home-t4", "onprem", 1, 1.0, gpu="T4")], egress=draw(st.sampled_from([0.05, 0.1])))]
    sites += [_site(i, "onprem", [_pool(f"p{i}", "onprem", draw(st.integers(1, 4)), draw(st.sampled_from([0.5, 1.0, 3.0])))])
              for i in range(1, n_sites + 1)]
    workload = {"type": "training", "gpu": {"types": ["L4"], "count": 1}, "replicas": 3, "hours_per_month": 100,
                "datasets": ["ds"]}
    return {"version": 1, "name": "twins", "regions": ["users"], "sites": sites,
            "datasets": [{"name": "ds", "site": "s0", "size_gb": draw(st.sampled_from([500, 5000])),
                          "sensitivity": "internal"}],
            "workloads": [dict(workload, name=f"w{i}") for i in range(draw(st.integers(2, 3)))]}


@settings(max_examples=25, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(twins_paying_movement())
def test_twins_counted_by_patterns_are_optimal_against_brute_force(raw: dict[str, Any]) -> None:
    try:
        inventory = _load(raw)
    except InvalidInventoryError:
        assume(False)
    with patch.object(planner_module, "EXACT_RESOLVE_MAX_COLUMNS", 0):  # patterns alone must be exact
        result = plan(inventory, options=PlanOptions(gap=0.0))
    assert check_plan(inventory, result) == []
    assert same(plan_objective(inventory, result), brute_force(inventory))
    assert result.solver.gap == 0.0
