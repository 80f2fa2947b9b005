"""Properties of the planner on random small inventories.

Every generated inventory goes through the real loader (parse, validate, semantic checks).
The plan must pass check_plan(), and it must cost exactly what a brute-force search finds:
every way of putting each workload's replicas into its eligible pools (or leaving them
unplaced) is tried, under the spec's rules, minimising the objective the planner documents:

    compute + data movement (once per site a workload uses, per remote dataset)
    + for each unplaced replica: gpus × hours × (2 × the dearest GPU-hour + 1) × tier weight
      (fixed 4, burst 2, opportunistic 1) + the workload's dearest data movement

The oracle is written from the spec, not from the planner's code: it shares no formulation, and
it takes the tier rules from the checker's own statement of them (checker_rules.py), not from
core/tiers.py, so a tier bug in the planner cannot hide in the oracle too. Cloud pools sometimes
leave their price to the catalog, and site latencies include the budget itself (50 ms).
The spread rule is read as the planner documents it for partial placements too: a fixed
workload never holds more than R - k + 1 of its R replicas in one failure domain, and when all
are placed they span k domains (k = spread_fixed_across, capped by R and by the domains
among its eligible pools).
"""

from __future__ import annotations

import itertools
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from unittest.mock import patch

import yaml
from hybridctl.core.catalog import catalog
from hybridctl.core.inventory.loader import load_inventory
from hybridctl.core.inventory.models import Inventory, Sensitivity, SiteKind, Workload
from hybridctl.core.plan import solve as solve_module
from hybridctl.core.plan.checker import check_plan
from hybridctl.core.plan.checker_rules import BURST, FIXED, OPPORTUNISTIC, spec_capacity_allowed, spec_tier
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.planner import PlanOptions, plan
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

TIER_WEIGHT = {FIXED: 4.0, BURST: 2.0, OPPORTUNISTIC: 1.0}
# The LP-guided route stops its restricted MIPs within STAGE_GAP of their own bound, over each
# unit's few cheapest candidate pools: not exact, but measured within this of the optimum.
LP_ROUTE_TOLERANCE = 0.01
INSTANCE = {"L4": "g6.xlarge", "T4": "g4dn.xlarge"}  # one GPU per node: no partial-node quotas
TYPES = ["training", "fine_tuning", "evaluation", "realtime_inference", "batch_inference", "experiment"]


@st.composite
def inventories(draw: st.DrawFn) -> dict[str, Any]:
    n_sites = draw(st.integers(2, 4))
    sites: list[dict[str, Any]] = []
    for i in range(n_sites):
        kind = draw(st.sampled_from(["onprem", "cloud", "edge"]))
        site: dict[str, Any] = {
            "name": f"s{i}", "kind": kind, "jurisdiction": draw(st.sampled_from(["EU", "US"])),
            "egress_usd_per_gb": draw(st.sampled_from([0.0, 0.02, 0.09])),
            "latency_ms": {"users": draw(st.sampled_from([5, 40, 50, 120]))}, "pools": []}
        domain = draw(st.sampled_from([None, None, "d0", "d1"]))
        if domain:
            site["failure_domain"] = domain
        if kind == "cloud":
            site.update(provider="aws", region="us-east-1", cluster=f"k{i}")
        sites.append(site)
    n_pools = draw(st.integers(max(2, n_sites), 5))
    for j in range(n_pools):
        site = sites[j] if j < n_sites else draw(st.sampled_from(sites))
        gpu = draw(st.sampled_from(["L4", "T4"]))
        price = draw(st.sampled_from([0.5, 0.8, 1.1, 2.0, 3.0]))
        capacity = draw(st.integers(1, 6))
        if site["kind"] == "cloud":
            cloud_pool = {"name": f"p{j}", "gpu": gpu, "instance_type": INSTANCE[gpu], "max_gpus": capacity,
                          "capacity_type": draw(st.sampled_from(["on_demand", "spot", "reserved"]))}
            if draw(st.integers(0, 3)):  # else the catalog's list price applies
                cloud_pool["usd_per_gpu_hour"] = price
            site["pools"].append(cloud_pool)
        else:
            site["pools"].append({"name": f"p{j}", "gpu": gpu, "gpus": capacity, "capacity_type": "reserved",
                                  "usd_per_gpu_hour": price})
    datasets: list[dict[str, Any]] = []
    for d in range(draw(st.integers(0, 3))):
        home = draw(st.sampled_from(sites))
        sensitivity = draw(st.sampled_from(["public", "confidential", "restricted"]))
        if sensitivity == "restricted" and home["kind"] == "cloud":
            sensitivity = "confidential"
        dataset: dict[str, Any] = {"name": f"ds{d}", "site": home["name"], "sensitivity": sensitivity,
                                   "size_gb": draw(st.sampled_from([10, 100, 1000]))}
        if draw(st.booleans()):
            dataset["residency"] = [home["jurisdiction"]]
        datasets.append(dataset)
    workloads: list[dict[str, Any]] = []
    for w in range(draw(st.integers(2, 6))):
        # twins (the same workload under another name) are common in fleets, and merged by the planner
        twin = workloads and draw(st.integers(0, 2)) == 0
        workloads.append({**workloads[-1], "name": f"w{w}"} if twin else _workload(draw, w, sites, datasets))
    policies = {"spread_fixed_across": draw(st.sampled_from([1, 2, 2, 3, 3])),
                "allow_on_demand_for_opportunistic": draw(st.booleans())}
    return {"version": 1, "name": "prop", "regions": ["users"], "policies": policies, "sites": sites,
            "datasets": datasets, "workloads": workloads}


def _workload(draw: st.DrawFn, w: int, sites: list[dict[str, Any]], datasets: list[dict[str, Any]]) -> dict[str, Any]:
    kind = draw(st.sampled_from(TYPES))
    workload: dict[str, Any] = {
        "name": f"w{w}", "type": kind, "replicas": draw(st.integers(2 if kind == "realtime_inference" else 1, 3)),
        "gpu": {"types": draw(st.sampled_from([["L4"], ["T4"], ["L4", "T4"]])), "count": draw(st.integers(1, 2))}}
    if kind != "realtime_inference":
        workload["hours_per_month"] = draw(st.sampled_from([50, 200, 730]))
    if kind in ("batch_inference", "experiment") and draw(st.booleans()):
        workload.update(preemptible=True, checkpoint_minutes=10)
    if datasets and draw(st.integers(0, 2)) > 0:
        workload["datasets"] = draw(st.lists(st.sampled_from([d["name"] for d in datasets]), min_size=1, max_size=2,
                                             unique=True))
        workload["data_passes_per_month"] = draw(st.sampled_from([0.5, 1.0]))
    if draw(st.integers(0, 3)) == 0:
        workload["latency"] = {"region": "users", "p95_ms": draw(st.sampled_from([50, 150]))}
    if draw(st.integers(0, 3)) == 0:
        workload["max_usd_per_month"] = draw(st.sampled_from([100, 500, 2000]))
    if draw(st.integers(0, 4)) == 0:
        workload["sites"] = draw(st.lists(st.sampled_from([s["name"] for s in sites]), min_size=1, unique=True))
    return workload


@dataclass(frozen=True)
class PoolFacts:
    name: str
    site: str
    domain: str
    gpus: int
    price: float


@dataclass(frozen=True)
class Need:
    """One workload as the oracle sees it."""

    workload: Workload
    tier: str
    eligible: tuple[PoolFacts, ...]
    egress_by_site: dict[str, float]
    spread: int
    penalty: float


def _pools(inventory: Inventory) -> list[PoolFacts]:
    instances = catalog().instances
    return [PoolFacts(p.name, s.name, s.failure_domain or s.name, p.gpus if p.gpus is not None else p.max_gpus or 0,
                      p.usd_per_gpu_hour if p.usd_per_gpu_hour is not None
                      else instances[p.instance_type or ""].usd_per_gpu_hour)
            for s in inventory.sites for p in s.pools]


def _eligible(inventory: Inventory, workload: Workload) -> list[PoolFacts]:
    sites = {s.name: s for s in inventory.sites}
    datasets = {d.name: d for d in inventory.datasets}
    tier = spec_tier(workload)
    found = []
    for facts, pool in zip(_pools(inventory), [p for s in inventory.sites for p in s.pools], strict=True):
        site = sites[facts.site]
        read = [datasets[n] for n in workload.datasets]
        if pool.gpu not in workload.gpu.types or not spec_capacity_allowed(tier, pool.capacity_type,
                                                                           workload.preemptible, inventory.policies):
            continue
        if any(d.sensitivity is Sensitivity.RESTRICTED and site.kind is SiteKind.CLOUD for d in read):
            continue
        if any(d.residency is not None and site.jurisdiction not in d.residency for d in read):
            continue
        if workload.latency and site.latency_ms.get(workload.latency.region, math.inf) > workload.latency.p95_ms:
            continue
        if workload.sites is not None and site.name not in workload.sites:
            continue
        found.append(facts)
    return found


def _spread(inventory: Inventory, workload: Workload, eligible: list[PoolFacts]) -> int:
    if spec_tier(workload) != FIXED:
        return 1
    return min(inventory.policies.spread_fixed_across, workload.replicas, len({p.domain for p in eligible}))


def _needs(inventory: Inventory) -> list[Need]:
    rates = {s.name: s.egress_usd_per_gb for s in inventory.sites}
    datasets = {d.name: d for d in inventory.datasets}
    dearest = max(p.price for p in _pools(inventory))
    needs = []
    for w in inventory.workloads:
        tier = spec_tier(w)
        eligible = _eligible(inventory, w)
        egress = {site: sum(datasets[n].size_gb * w.data_passes_per_month * rates[datasets[n].site]
                            for n in w.datasets if datasets[n].site != site) for site in {p.site for p in eligible}}
        penalty = w.gpu.count * w.hours * (2 * dearest + 1) * TIER_WEIGHT[tier] + max(egress.values(), default=0.0)
        needs.append(Need(w, tier, tuple(eligible), egress, _spread(inventory, w, eligible), penalty))
    return needs


def _options(need: Need) -> list[tuple[float, dict[str, int]]]:
    """Every allowed way to place one workload: (objective share, GPUs used per pool)."""
    w, replicas, g = need.workload, need.workload.replicas, need.workload.gpu.count
    options = []
    for counts in itertools.product(*[range(min(replicas, p.gpus // g) + 1) for p in need.eligible]):
        placed = sum(counts)
        if placed > replicas:
            continue
        used = [(p, n) for p, n in zip(need.eligible, counts, strict=True) if n]
        if need.spread >= 2:
            per_domain: dict[str, int] = {}
            for p, n in used:
                per_domain[p.domain] = per_domain.get(p.domain, 0) + n
            if max(per_domain.values(), default=0) > replicas - need.spread + 1:
                continue
            if placed == replicas and len(per_domain) < need.spread:
                continue
        cost = sum(n * g * w.hours * p.price for p, n in used) + sum(need.egress_by_site[s] for s in {p.site for p, _ in used})
        if w.max_usd_per_month is not None and cost > w.max_usd_per_month + 1e-6:
            continue
        options.append((cost + (replicas - placed) * need.penalty, {p.name: n * g for p, n in used}))
    return sorted(options, key=lambda o: o[0])


def brute_force(inventory: Inventory) -> float:
    needs = _needs(inventory)
    capacity = {p.name: p.gpus for p in _pools(inventory)}
    choices = [_options(n) for n in needs]
    floor_after = [sum(c[0][0] for c in choices[i:]) for i in range(len(choices) + 1)]
    best = math.inf

    def search(i: int, spent: float) -> None:
        nonlocal best
        if spent + floor_after[i] >= best - 1e-9:
            return
        if i == len(choices):
            best = spent
            return
        for value, used in choices[i]:
            if all(capacity[p] >= n for p, n in used.items()):
                for p, n in used.items():
                    capacity[p] -= n
                search(i + 1, spent + value)
                for p, n in used.items():
                    capacity[p] += n

    search(0, 0.0)
    return best


def plan_objective(inventory: Inventory, result: Plan) -> float:
    """The documented objective of a plan, priced from its placements by the oracle's rules."""
    needs = {n.workload.name: n for n in _needs(inventory)}
    prices = {p.name: p.price for p in _pools(inventory)}
    total = 0.0
    sites: dict[str, set[str]] = {}
    for pl in result.placements:
        need = needs[pl.workload]
        total += pl.replicas * need.workload.gpu.count * need.workload.hours * prices[pl.pool]
        sites.setdefault(pl.workload, set()).add(pl.site)
    for name, used in sites.items():
        total += sum(needs[name].egress_by_site[s] for s in used)
    return total + sum(u.replicas * needs[u.workload].penalty for u in result.unplaced)


def _load(raw: dict[str, Any]) -> Inventory:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        return load_inventory(path).inventory


def _validatable(raw: dict[str, Any]) -> dict[str, Any]:
    """Drop the workloads validation would reject: no eligible pool, or too few domains to spread."""
    probe = Inventory.model_validate(raw)
    keep = []
    for w, spec in zip(probe.workloads, raw["workloads"], strict=True):
        eligible = _eligible(probe, w)
        required = min(probe.policies.spread_fixed_across, w.replicas)
        if eligible and not (spec_tier(w) == FIXED and w.replicas >= 2 and required >= 2
                             and len({p.domain for p in eligible}) < required):
            keep.append(spec)
    return {**raw, "workloads": keep}


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_plan_is_valid_and_as_cheap_as_brute_force(raw: dict[str, Any]) -> None:
    raw = _validatable(raw)
    assume(raw["workloads"])
    inventory = _load(raw)  # raises if the generator made an inventory validation rejects
    result = plan(inventory, options=PlanOptions(gap=0.0))
    assert check_plan(inventory, result) == []
    optimum = brute_force(inventory)
    got = plan_objective(inventory, result)
    by_tier: dict[str, int] = {}
    for pl in result.placements:
        by_tier[pl.tier] = by_tier.get(pl.tier, 0) + pl.replicas
    assert math.isclose(got, optimum, rel_tol=1e-7, abs_tol=0.01), (
        f"plan objective {got:.2f} (placed by tier {by_tier}), brute-force optimum {optimum:.2f}")
    assert math.isclose(result.solver.objective, got, rel_tol=1e-7, abs_tol=0.05)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_lp_guided_route_is_valid_and_its_bound_is_proven(raw: dict[str, Any]) -> None:
    """Forced down the large-model route (LP, fixing, restricted MIPs), the plan stays valid, and
    the bound it reports is a true lower bound: never above the brute-force optimum."""
    raw = _validatable(raw)
    assume(raw["workloads"])
    inventory = _load(raw)
    with patch.object(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0):
        result = plan(inventory, options=PlanOptions(gap=0.0))
    assert check_plan(inventory, result) == []
    optimum = brute_force(inventory)
    got = plan_objective(inventory, result)
    assert got >= optimum - 0.01 - 1e-7 * optimum
    assert got <= optimum * (1 + LP_ROUTE_TOLERANCE) + 0.01, (
        f"LP-guided plan objective {got:.2f} is {got / optimum - 1:.2%} over the brute-force optimum {optimum:.2f}")
    assert result.solver.bound <= optimum + 0.01 + 1e-7 * optimum, (
        f"reported bound {result.solver.bound:.2f} above the optimum {optimum:.2f}")
    assert math.isclose(result.solver.objective, got, rel_tol=1e-7, abs_tol=0.05)
