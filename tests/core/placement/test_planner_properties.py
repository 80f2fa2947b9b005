"""Properties of the planner on random small inventories.

Every generated inventory goes through the real loader (parse, validate, semantic checks).
The plan must pass check_plan(), and it must cost exactly what a brute-force search finds:
every way of putting each workload's replicas into its eligible pools (or leaving them
unplaced) is tried, under the spec's rules (revision 2: node shape, max_sensitivity, copies,
pool failure domains and per-workload spread, whole machines in pay-per-use pools),
minimising the objective the planner documents:

    cash (default): pay-per-use machines (always-on replicas share ceil(GPUs / GPUs per node)
      machines all month; others pay their own whole machines while they run)
      + 1e-4 × amortized compute (the tie-break) + data movement
    amortized: gpus × hours × usd_per_gpu_hour per replica + data movement
    data movement: once per site a workload uses, per dataset not held there, at the cheapest
      holder's egress

under tier priority (spec, "Tier priority", revision 4): plans are compared first by the GPU-hours
left unplaced in the fixed tier, then burst, then by the fixed and burst workloads' cost priced as if
they were alone (their own always-on machines, ceil(their always-on GPUs / GPUs per node), their own
machines, tie-break and data movement), then the opportunistic GPU-hours left unplaced, and only then
by that cost. The
planner's solver objective also carries, for each unplaced replica, a penalty: the GPUs it would
hold at most (its own whole machines in the widest pay-per-use pool) × hours × (2 × the dearest
GPU-hour + 1) × tier weight (fixed 4, burst 2, opportunistic 1) + the workload's dearest data
movement, which the plan reports beside its objective.

The committed pools' constant is left out of both sides. The oracle is written from the spec,
not from the planner's code: it shares no formulation. The spread rule is read as the planner
documents it for partial placements too: a workload never holds more than R - k + 1 of its R
replicas in one failure domain, and when all are placed they span k domains (k = its spread, or
spread_fixed_across for the fixed tier, capped by R and by the domains among its eligible pools).
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
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory, Sensitivity, SiteKind, Workload
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.placement.tiers import Tier, allowed_capacity_types, decide_tier
from hybridctl.core.plan.model import Plan
from hybridctl.core.solver import solve as solve_module
from hybridctl.drivers.inventory_files import load_inventory
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

TIER_WEIGHT = {Tier.FIXED: 4.0, Tier.BURST: 2.0, Tier.OPPORTUNISTIC: 1.0}
TIE_BREAK = 1e-4
# The LP-guided route stops its restricted MIPs within STAGE_GAP of their own bound, over each
# unit's few cheapest candidate pools: not exact, but measured within this of the optimum.
LP_ROUTE_TOLERANCE = 0.01
ALWAYS_ON = 730
# one GPU per machine and four: whole-machine rounding and node shape both come into play
INSTANCES = {"L4": (("g6.xlarge", 1), ("g6.12xlarge", 4)), "T4": (("g4dn.xlarge", 1), ("g4dn.12xlarge", 4))}
TYPES = ["training", "fine_tuning", "evaluation", "realtime_inference", "batch_inference", "experiment"]
RANK = {Sensitivity.PUBLIC: 0, Sensitivity.INTERNAL: 1, Sensitivity.CONFIDENTIAL: 2, Sensitivity.RESTRICTED: 3}


@st.composite
def inventories(draw: st.DrawFn) -> dict[str, Any]:
    n_sites = draw(st.integers(2, 4))
    sites: list[dict[str, Any]] = []
    for i in range(n_sites):
        kind = draw(st.sampled_from(["onprem", "cloud", "edge"]))
        site: dict[str, Any] = {
            "name": f"s{i}", "kind": kind, "jurisdiction": draw(st.sampled_from(["EU", "US"])),
            "egress_usd_per_gb": draw(st.sampled_from([0.0, 0.02, 0.09])),
            "latency_ms": {"users": draw(st.sampled_from([5, 40, 120]))}, "pools": []}
        domain = draw(st.sampled_from([None, None, "d0", "d1"]))
        if domain:
            site["failure_domain"] = domain
        ceilings = ["internal", "confidential"] + (["restricted"] if kind != "cloud" else [])
        if draw(st.integers(0, 2)) == 0:
            site["max_sensitivity"] = draw(st.sampled_from(ceilings))
        if kind == "cloud":
            site.update(provider="aws", region="us-east-1", cluster=f"k{i}")
        sites.append(site)
    n_pools = draw(st.integers(max(2, n_sites), 5))
    for j in range(n_pools):
        site = sites[j] if j < n_sites else draw(st.sampled_from(sites))
        gpu = draw(st.sampled_from(["L4", "T4"]))
        price = draw(st.sampled_from([0.5, 0.8, 1.1, 2.0, 3.0]))
        capacity = draw(st.integers(1, 8))
        pool: dict[str, Any]
        if site["kind"] == "cloud":
            instance, per_node = draw(st.sampled_from(INSTANCES[gpu]))
            pool = {"name": f"p{j}", "gpu": gpu, "instance_type": instance,
                    "max_gpus": max(per_node, capacity - capacity % per_node),
                    "capacity_type": draw(st.sampled_from(["on_demand", "on_demand", "spot", "reserved"])),
                    "usd_per_gpu_hour": price}
        else:
            pool = {"name": f"p{j}", "gpu": gpu, "gpus": capacity, "capacity_type": "reserved",
                    "usd_per_gpu_hour": price}
            if draw(st.booleans()):
                pool["gpus_per_node"] = draw(st.sampled_from([n for n in (1, 2, 4) if n <= capacity]))
        if draw(st.integers(0, 3)) == 0:
            pool["failure_domain"] = draw(st.sampled_from(["z0", "z1"]))
        site["pools"].append(pool)
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
        # copies where the data may be stored: within residency, restricted only on premises
        stores = [s["name"] for s in sites if s is not home
                  and (sensitivity != "restricted" or s["kind"] != "cloud")
                  and ("residency" not in dataset or s["jurisdiction"] in dataset["residency"])]
        if stores and draw(st.booleans()):
            dataset["copies"] = draw(st.lists(st.sampled_from(stores), min_size=1, max_size=2, unique=True))
        datasets.append(dataset)
    workloads: list[dict[str, Any]] = []
    for w in range(draw(st.integers(2, 6))):
        # twins (the same workload under another name) are common in fleets, and merged by the planner
        twin = workloads and draw(st.integers(0, 2)) == 0
        workloads.append({**workloads[-1], "name": f"w{w}"} if twin else _workload(draw, w, sites, datasets))
    policies = {"spread_fixed_across": draw(st.sampled_from([1, 2, 2, 3, 3])),
                "allow_on_demand_for_opportunistic": draw(st.booleans()),
                "cost_model": draw(st.sampled_from(["cash", "cash", "amortized"]))}
    return {"version": 1, "name": "prop", "regions": ["users"], "policies": policies, "sites": sites,
            "datasets": datasets, "workloads": workloads}


def _workload(draw: st.DrawFn, w: int, sites: list[dict[str, Any]], datasets: list[dict[str, Any]]) -> dict[str, Any]:
    kind = draw(st.sampled_from(TYPES))
    workload: dict[str, Any] = {
        "name": f"w{w}", "type": kind, "replicas": draw(st.integers(2 if kind == "realtime_inference" else 1, 3)),
        "gpu": {"types": draw(st.sampled_from([["L4"], ["T4"], ["L4", "T4"]])),
                "count": draw(st.sampled_from([1, 1, 2, 4]))}}
    if draw(st.integers(0, 3)) == 0:
        workload["gpu"]["multi_node"] = draw(st.booleans())
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
        workload["max_usd_per_month"] = draw(st.sampled_from([500, 2000, 8000]))
    if draw(st.integers(0, 4)) == 0:
        workload["sites"] = draw(st.lists(st.sampled_from([s["name"] for s in sites]), min_size=1, unique=True))
    if draw(st.integers(0, 3)) == 0:
        workload["spread"] = draw(st.integers(1, 3))
    return workload


@dataclass(frozen=True)
class PoolFacts:
    name: str
    site: str
    domain: str
    gpus: int
    price: float
    per_node: int
    committed: bool


@dataclass(frozen=True)
class Need:
    """One workload as the oracle sees it."""

    workload: Workload
    tier: Tier
    eligible: tuple[PoolFacts, ...]
    egress_by_site: dict[str, float]
    spread: int
    penalty: float


def _pools(inventory: Inventory) -> list[PoolFacts]:
    per_node = {"g6.xlarge": 1, "g6.12xlarge": 4, "g4dn.xlarge": 1, "g4dn.12xlarge": 4}
    facts = []
    for s in inventory.sites:
        for p in s.pools:
            if s.kind is SiteKind.CLOUD:
                node, committed = per_node[p.instance_type or ""], p.capacity_type.value == "reserved"
            else:
                node, committed = p.gpus_per_node or min(8, p.gpus or 1), True
            facts.append(PoolFacts(p.name, s.name, p.failure_domain or s.failure_domain or s.name,
                                   p.gpus if p.gpus is not None else p.max_gpus or 0, p.usd_per_gpu_hour or 0.0,
                                   node, committed))
    return facts


def _may_process(site: Any, sensitivity: Sensitivity) -> bool:
    ceiling = site.max_sensitivity or (Sensitivity.RESTRICTED if site.kind is SiteKind.ONPREM
                                       else Sensitivity.CONFIDENTIAL)
    return RANK[ceiling] >= RANK[sensitivity]


def _eligible(inventory: Inventory, workload: Workload) -> list[PoolFacts]:
    sites = {s.name: s for s in inventory.sites}
    datasets = {d.name: d for d in inventory.datasets}
    tier, _, _ = decide_tier(workload)
    allowed = allowed_capacity_types(tier, workload.preemptible, inventory.policies)
    g = workload.gpu.count
    found = []
    for facts, pool in zip(_pools(inventory), [p for s in inventory.sites for p in s.pools], strict=True):
        site = sites[facts.site]
        read = [datasets[n] for n in workload.datasets]
        if pool.gpu not in workload.gpu.types or pool.capacity_type not in allowed:
            continue
        if g > facts.per_node and not (workload.multi_node and g % facts.per_node == 0):
            continue
        if any(d.sensitivity is Sensitivity.RESTRICTED and site.kind is SiteKind.CLOUD for d in read):
            continue
        if any(not _may_process(site, d.sensitivity) for d in read):
            continue
        if any(d.residency is not None and site.jurisdiction not in d.residency for d in read):
            continue
        if workload.latency and site.latency_ms.get(workload.latency.region, math.inf) > workload.latency.p95_ms:
            continue
        if workload.sites is not None and site.name not in workload.sites:
            continue
        found.append(facts)
    return found


def _wanted_spread(inventory: Inventory, workload: Workload) -> int:
    tier, _, _ = decide_tier(workload)
    if workload.spread is not None:
        return workload.spread
    return inventory.policies.spread_fixed_across if tier is Tier.FIXED else 1


def _spread(inventory: Inventory, workload: Workload, eligible: list[PoolFacts]) -> int:
    return min(_wanted_spread(inventory, workload), workload.replicas, len({p.domain for p in eligible}))


def _machines(g: int, per_node: int) -> int:
    return -(-g // per_node)


def _needs(inventory: Inventory) -> list[Need]:
    rates = {s.name: s.egress_usd_per_gb for s in inventory.sites}
    datasets = {d.name: d for d in inventory.datasets}
    dearest = max(p.price for p in _pools(inventory))
    needs = []
    for w in inventory.workloads:
        tier, _, _ = decide_tier(w)
        eligible = _eligible(inventory, w)

        def read(site: str, name: str, w: Workload) -> float:
            d = datasets[name]
            holders = [d.site, *d.copies]
            return 0.0 if site in holders else d.size_gb * w.data_passes_per_month * min(rates[h] for h in holders)

        egress = {site: sum(read(site, n, w) for n in w.datasets) for site in {p.site for p in eligible}}
        g = w.gpu.count
        widest = max([g] + [_machines(g, p.per_node) * p.per_node for p in eligible if not p.committed])
        penalty = widest * w.hours * (2 * dearest + 1) * TIER_WEIGHT[tier] + max(egress.values(), default=0.0)
        needs.append(Need(w, tier, tuple(eligible), egress, _spread(inventory, w, eligible), penalty))
    return needs


@dataclass(frozen=True)
class Option:
    """One way to place one workload: the part of the objective it decides alone, and what it uses."""

    # unplaced GPU-hours of the fixed and burst tiers, their cost alone, the opportunistic unplaced GPU-hours, then
    # the cost, each cost without the always-on machines
    value: tuple[float, float, float, float, float]
    committed_gpus: dict[str, int]
    always_on_gpus: dict[str, int]
    own_machines: dict[str, int]


def _options(need: Need, cash: bool) -> list[Option]:
    """Every allowed way to place one workload."""
    w, replicas, g = need.workload, need.workload.replicas, need.workload.gpu.count
    always_on = w.hours == ALWAYS_ON
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
        amortized = sum(n * g * w.hours * p.price for p, n in used)
        egress = sum(need.egress_by_site[s] for s in {p.site for p, _ in used})
        if w.max_usd_per_month is not None and amortized + egress > w.max_usd_per_month + 1e-6:
            continue
        own = {p.name: n * _machines(g, p.per_node) for p, n in used if not p.committed and not always_on}
        if cash:
            prices = {p.name: p for p, _ in used}
            compute = sum(m * prices[name].per_node * w.hours * prices[name].price for name, m in own.items())
            compute += TIE_BREAK * amortized
        else:
            compute = amortized
        short = [0.0, 0.0, 0.0]
        short[TIER_RANK[need.tier]] = (replicas - placed) * g * w.hours
        alone = compute + egress if need.tier is not Tier.OPPORTUNISTIC else 0.0
        options.append(Option((short[0], short[1], alone, short[2], compute + egress),
                              {p.name: n * g for p, n in used if p.committed},
                              {p.name: n * g for p, n in used if not p.committed and always_on}, own))
    return sorted(options, key=lambda o: o.value)


def _machine_cost(pools: dict[str, PoolFacts], always_on_gpus: dict[str, int], cash: bool) -> float:
    if not cash:
        return 0.0
    return sum(_machines(gpus, pools[name].per_node) * pools[name].per_node * ALWAYS_ON * pools[name].price
               for name, gpus in always_on_gpus.items() if gpus)


TIER_RANK = {Tier.FIXED: 0, Tier.BURST: 1, Tier.OPPORTUNISTIC: 2}
Value = tuple[float, float, float, float, float]


def _add(a: Value, b: Value) -> Value:
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3], a[4] + b[4])


def lex_less(a: Value, b: Value) -> bool:
    """a before b, tier by tier then cost, ties within float noise."""
    for x, y in zip(a, b, strict=True):
        if math.isinf(x) or math.isinf(y):
            return x < y
        tolerance = 1e-7 * max(1.0, abs(x), abs(y))
        if x < y - tolerance:
            return True
        if x > y + tolerance:
            return False
    return False


def brute_force(inventory: Inventory) -> Value:
    cash = inventory.policies.cost_model.value == "cash"
    needs = _needs(inventory)
    pools = {p.name: p for p in _pools(inventory)}
    committed_left = {p.name: p.gpus for p in pools.values() if p.committed}
    always_on: dict[str, int] = {p.name: 0 for p in pools.values() if not p.committed}
    always_on_alone = dict.fromkeys(always_on, 0)  # the fixed and burst tiers' always-on GPUs
    own: dict[str, int] = dict.fromkeys(always_on, 0)
    choices = [_options(n, cash) for n in needs]
    others = [n.tier is not Tier.OPPORTUNISTIC for n in needs]
    zero: Value = (0.0, 0.0, 0.0, 0.0, 0.0)
    floor_after = [zero] * (len(choices) + 1)
    for i in range(len(choices) - 1, -1, -1):  # each choice's best option is a lexicographic lower bound
        floor_after[i] = _add(choices[i][0].value, floor_after[i + 1])
    best: Value = (math.inf, math.inf, math.inf, math.inf, math.inf)

    def fits(name: str) -> bool:
        p = pools[name]
        return _machines(always_on[name], p.per_node) + own[name] <= p.gpus // p.per_node

    def search(i: int, spent: Value) -> None:
        nonlocal best
        if not lex_less(_add(spent, floor_after[i]), best):  # machine costs are never negative: a valid bound
            return
        if i == len(choices):
            found = _add(spent, (0.0, 0.0, _machine_cost(pools, always_on_alone, cash), 0.0,
                                 _machine_cost(pools, always_on, cash)))
            best = found if lex_less(found, best) else best
            return
        for option in choices[i]:
            if any(committed_left[p] < n for p, n in option.committed_gpus.items()):
                continue
            for p, n in option.committed_gpus.items():
                committed_left[p] -= n
            for p, n in option.always_on_gpus.items():
                always_on[p] += n
                always_on_alone[p] += n * others[i]
            for p, n in option.own_machines.items():
                own[p] += n
            if all(fits(p) for p in {*option.always_on_gpus, *option.own_machines}):
                search(i + 1, _add(spent, option.value))
            for p, n in option.committed_gpus.items():
                committed_left[p] += n
            for p, n in option.always_on_gpus.items():
                always_on[p] -= n
                always_on_alone[p] -= n * others[i]
            for p, n in option.own_machines.items():
                own[p] -= n

    search(0, zero)
    return best


def committed_constant(inventory: Inventory) -> float:
    if inventory.policies.cost_model.value != "cash":
        return 0.0
    return sum(p.gpus * ALWAYS_ON * p.price for p in _pools(inventory) if p.committed)


def same(a: Value, b: Value) -> bool:
    return not lex_less(a, b) and not lex_less(b, a)


def penalties(inventory: Inventory, result: Plan) -> float:
    """The penalties on a plan's unplaced replicas, as the solver's objective carries them."""
    needs = {n.workload.name: n for n in _needs(inventory)}
    return sum(u.replicas * needs[u.workload].penalty for u in result.unplaced)


def plan_objective(inventory: Inventory, result: Plan) -> Value:
    """The documented objective of a plan (committed constant left out), priced by the oracle's rules."""
    cash = inventory.policies.cost_model.value == "cash"
    needs = {n.workload.name: n for n in _needs(inventory)}
    pools = {p.name: p for p in _pools(inventory)}
    total = alone = 0.0
    sites: dict[str, set[str]] = {}
    always_on: dict[str, int] = {}
    always_on_alone: dict[str, int] = {}
    for pl in result.placements:
        w = needs[pl.workload].workload
        other = needs[pl.workload].tier is not Tier.OPPORTUNISTIC
        p = pools[pl.pool]
        amortized = pl.replicas * w.gpu.count * w.hours * p.price
        cost = 0.0
        if not cash:
            cost = amortized
        else:
            cost = TIE_BREAK * amortized
            if not p.committed and w.hours == ALWAYS_ON:
                always_on[p.name] = always_on.get(p.name, 0) + pl.replicas * w.gpu.count
                always_on_alone[p.name] = always_on_alone.get(p.name, 0) + pl.replicas * w.gpu.count * other
            elif not p.committed:
                cost += pl.replicas * _machines(w.gpu.count, p.per_node) * p.per_node * w.hours * p.price
        total += cost
        alone += cost * other
        sites.setdefault(pl.workload, set()).add(pl.site)
    total += _machine_cost(pools, always_on, cash)
    alone += _machine_cost(pools, always_on_alone, cash)
    for name, used in sites.items():
        egress = sum(needs[name].egress_by_site[s] for s in used)
        total += egress
        alone += egress * (needs[name].tier is not Tier.OPPORTUNISTIC)
    short = [0.0, 0.0, 0.0]
    for u in result.unplaced:
        w = needs[u.workload].workload
        short[TIER_RANK[needs[u.workload].tier]] += u.replicas * w.gpu.count * w.hours
    return short[0], short[1], alone, short[2], total


def _load(raw: dict[str, Any]) -> Inventory:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "inventory.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        return load_inventory(path).inventory


def _validatable(raw: dict[str, Any]) -> dict[str, Any]:
    """Drop the workloads validation would reject: no eligible pool, no pool that holds one replica,
    too few domains to spread, a cost ceiling below the whole workload's cheapest cost."""
    probe = Inventory.model_validate(raw)
    keep = []
    for need, spec in zip(_needs(probe), raw["workloads"], strict=True):
        w, eligible = need.workload, list(need.eligible)
        g = w.gpu.count
        holds = [p for p in eligible if p.gpus >= g if p.committed or p.gpus // p.per_node >= _machines(g, p.per_node)]
        required = min(_wanted_spread(probe, w), w.replicas)
        cheapest = w.replicas * min((g * w.hours * p.price for p in holds), default=0.0) \
            + min((need.egress_by_site[p.site] for p in holds), default=0.0)
        if holds and not (w.replicas >= 2 and required >= 2 and len({p.domain for p in eligible}) < required) \
                and not (w.max_usd_per_month is not None and cheapest > w.max_usd_per_month):
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
    constant = committed_constant(inventory)
    by_tier: dict[str, int] = {}
    for pl in result.placements:
        by_tier[pl.tier] = by_tier.get(pl.tier, 0) + pl.replicas
    assert same(got, optimum), f"plan objective {got} (placed by tier {by_tier}), brute-force optimum {optimum}"
    assert math.isclose(result.solver.objective, got[4] + penalties(inventory, result) + constant, rel_tol=1e-7,
                        abs_tol=0.05)


def lp_route_against_brute_force(raw: dict[str, Any]) -> tuple[Inventory, Plan, Value, Value]:
    """Plan `raw` forced down the large-model route (LP, fixing, restricted MIPs), check the plan
    with the checker, and return the inventory, the plan, the brute-force optimum and the plan's
    objective, priced the same way."""
    raw = _validatable(raw)
    assume(raw["workloads"])
    inventory = _load(raw)
    with patch.object(solve_module, "DIRECT_MIP_MAX_COLUMNS", 0):
        result = plan(inventory, options=PlanOptions(gap=0.0))
    assert check_plan(inventory, result) == []
    return inventory, result, brute_force(inventory), plan_objective(inventory, result)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(inventories())
def test_lp_guided_route_is_valid_and_its_bound_is_proven(raw: dict[str, Any]) -> None:
    """Forced down the large-model route (LP, fixing, restricted MIPs), the plan stays valid, and
    the bound it reports is a true lower bound: never above the brute-force optimum."""
    inventory, result, optimum, got = lp_route_against_brute_force(raw)
    constant = committed_constant(inventory)
    # tier priority is exact, the others' cost alone within the route's gap (then the opportunistic GPU-hours follow)
    assert got[:2] == optimum[:2] or same((*got[:2], 0.0, 0.0, 0.0), (*optimum[:2], 0.0, 0.0, 0.0))
    assert got[2] <= optimum[2] + 0.01 + LP_ROUTE_TOLERANCE * abs(optimum[2] + constant)
    if same((*got[:3], 0.0, 0.0), (*optimum[:3], 0.0, 0.0)):
        assert same((*got[:4], 0.0), (*optimum[:4], 0.0))
        assert got[4] >= optimum[4] - 0.01 - 1e-7 * optimum[4]
    penalty = penalties(inventory, result)
    assert result.solver.bound - constant - penalty <= optimum[4] + 0.01 + 1e-7 * optimum[4], (
        f"reported bound {result.solver.bound - constant - penalty:.2f} above the optimum {optimum[4]:.2f}")
    assert math.isclose(result.solver.objective, got[4] + penalty + constant, rel_tol=1e-7, abs_tol=0.05)
