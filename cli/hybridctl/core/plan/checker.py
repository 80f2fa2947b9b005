"""An independent check of a plan against the inventory: every rule of the spec, re-derived.

It shares no code with the solver's formulation nor with the planner's tier classification
(checker_rules.py states the tier rules again from the spec), so a modelling mistake there
shows up here. The CLI runs it after every plan and every replan (a violation is a bug: exit
70), and the tests use it as their oracle.
"""

from __future__ import annotations

from collections import defaultdict

from hybridctl.core.catalog import catalog
from hybridctl.core.inventory.models import (
    CapacityType,
    Dataset,
    Inventory,
    Pool,
    Sensitivity,
    Site,
    SiteKind,
    Workload,
    WorkloadType,
)
from hybridctl.core.plan.checker_rules import FIXED, spec_capacity_allowed, spec_tier
from hybridctl.core.plan.model import Placement, Plan

_TOLERANCE_USD = 0.05
_HOURS_ALWAYS_ON = 730
_RANK = {Sensitivity.PUBLIC: 0, Sensitivity.INTERNAL: 1, Sensitivity.CONFIDENTIAL: 2, Sensitivity.RESTRICTED: 3}


class PlacementMemo:
    """One placement's own rule violations and cost, kept for the next check of a plan that shares it.

    A drill checks hundreds of failover plans of one fleet; each repeats most of the base plan's
    placements, and the disrupted inventory keeps most of its Workload, Site, Pool and Dataset
    objects. A placement's own verdict depends on its fields and on those objects alone, so it is
    reused while the fields are equal and every one of the objects is the same. The objects are
    keyed by identity and held by the memo, so no identity can pass to another object meanwhile.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[object, ...], tuple[tuple[object, ...], list[str], float]] = {}

    @staticmethod
    def _key(placement: Placement, objects: tuple[object, ...]) -> tuple[object, ...]:
        p = placement
        return (p.workload, p.pool, p.site, p.tier, p.degraded, p.gpus, p.replicas, p.usd_per_month,
                *map(id, objects))

    def get(self, placement: Placement, objects: tuple[object, ...]) -> tuple[list[str], float] | None:
        known = self._known.get(self._key(placement, objects))
        return None if known is None else (known[1], known[2])

    def put(self, placement: Placement, objects: tuple[object, ...], problems: list[str], cost: float) -> None:
        self._known[self._key(placement, objects)] = (objects, problems, cost)


def check_plan(inventory: Inventory, plan: Plan, memo: PlacementMemo | None = None) -> list[str]:
    """Violations of the spec's placement rules; empty when the plan is valid.

    `memo` (optional) reuses the per-placement verdicts of earlier checks of plans sharing objects.
    """
    problems: list[str] = []
    sites = {s.name: s for s in inventory.sites}
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    datasets = {d.name: d for d in inventory.datasets}
    workloads = {w.name: w for w in inventory.workloads}
    rules = _PairRules(inventory, datasets)
    domain_of: dict[str, str] = {}
    used: dict[str, int] = defaultdict(int)
    replicas: dict[str, int] = defaultdict(int)
    domains: dict[str, set[str]] = defaultdict(set)
    sites_used: dict[str, set[str]] = defaultdict(set)
    compute: dict[str, float] = defaultdict(float)
    for pl in plan.placements:
        w = workloads.get(pl.workload)
        if w is None or pl.pool not in pools:
            problems.append(f"{pl.workload} in {pl.pool}: unknown workload or pool")
            continue
        site, pool = pools[pl.pool]
        if memo is None:
            known = _placement_violations(pl, w, site, pool, rules)
        else:
            objects = (w, site, pool, inventory.policies, *(datasets.get(n) for n in w.datasets))
            cached = memo.get(pl, objects)
            if cached is None:
                known = _placement_violations(pl, w, site, pool, rules)
                memo.put(pl, objects, *known)
            else:
                known = cached
        if known[0]:
            problems.extend(known[0])
        used[pool.name] += pl.gpus
        replicas[pl.demand or pl.workload] += pl.replicas
        domain = domain_of.get(pool.name)
        if domain is None:
            domain = domain_of[pool.name] = pool.failure_domain or site.failure_domain or site.name
        domains[pl.workload].add(domain)
        sites_used[pl.workload].add(site.name)
        compute[pl.workload] += known[1]
    for name, gpus in used.items():
        site, pool = pools[name]
        capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
        if gpus > capacity:
            problems.append(f"pool {name}: {gpus} GPUs used, capacity {capacity}")
    unplaced = {u.demand or u.workload: u.replicas for u in plan.unplaced}
    degraded = {p.demand or p.workload for p in plan.placements if p.degraded}
    movement: dict[str, float] = defaultdict(float)
    for w in inventory.workloads:
        if w.type is WorkloadType.FEDERATED_TRAINING:
            keys = {f"{w.name}@{datasets[n].site}" for n in w.datasets}
        else:
            keys = {w.name}
            if w.datasets:
                for site_name in sites_used[w.name]:
                    for n in w.datasets:
                        movement[w.name] += _read_usd(datasets[n], site_name, sites) * w.data_passes_per_month
        for key in keys:
            wanted = w.fallback.replicas if key in degraded and w.fallback and w.fallback.replicas else w.replicas
            if replicas[key] + unplaced.get(key, 0) != wanted:
                problems.append(f"{key}: {replicas[key]} placed + {unplaced.get(key, 0)} unplaced != {wanted} replicas")
        if w.max_usd_per_month is not None and compute[w.name] + movement[w.name] > w.max_usd_per_month + _TOLERANCE_USD:
            problems.append(f"{w.name}: costs {compute[w.name] + movement[w.name]:.2f}, ceiling {w.max_usd_per_month:.2f}")
    problems.extend(_spread_violations(inventory, degraded, replicas, domains, datasets))
    problems.extend(_machine_and_cost_violations(inventory, plan))
    # per workload, so that data cost charged to the wrong workload shows up, not only a wrong total
    planned: dict[str, list[float]] = defaultdict(list)
    for m in plan.data_movements:
        planned[m.workload].append(m.usd_per_month)
    for name in sorted(set(planned) | {n for n, usd in movement.items() if usd}):
        says = sum(planned[name])
        if abs(says - movement[name]) > _TOLERANCE_USD * max(1, len(planned[name])):
            problems.append(f"{name}: data movement: plan says {says:.2f}, rules give {movement[name]:.2f}")
    return problems


class _PairRules:
    """The rules a pool breaks for a workload, worked out once per pool and kind of workload.

    They read the pool, its site, the inventory's policies and datasets, and of the workload only
    what `_rule_inputs` lists: 100,000 workloads placed in 140,000 places make a few thousand
    distinct pairs. A rule that reads more of the workload must add it to `_rule_inputs`
    (tests/core/plan/test_checker_pair_rules.py varies each of them).
    """

    def __init__(self, inventory: Inventory, datasets: dict[str, Dataset]) -> None:
        self._inventory = inventory
        self._datasets = datasets
        self._known: dict[tuple[str, str, int], list[str]] = {}
        self._kinds: dict[tuple[str, bool], int] = {}
        self._kind_numbers: dict[tuple[object, ...], int] = {}
        self._tiers: dict[str, str] = {}
        self._price: dict[str, float] = {}

    def tier(self, w: Workload) -> str:
        tier = self._tiers.get(w.name)
        if tier is None:
            tier = self._tiers[w.name] = spec_tier(w)
        return tier

    def price(self, pool: Pool) -> float:
        price = self._price.get(pool.name)
        if price is None:
            price = self._price[pool.name] = _price(pool)
        return price

    def violations(self, w: Workload, degraded: bool, gpu_types: list[str], gpu_count: int, site: Site,
                   pool: Pool) -> list[str]:
        kind = self._kinds.get((w.name, degraded))
        if kind is None:  # workloads alike in every rule input share a number
            kind = self._kinds[(w.name, degraded)] = self._kind_numbers.setdefault(
                _rule_inputs(w, self.tier(w), gpu_types, gpu_count), len(self._kind_numbers))
        key = (pool.name, site.name, kind)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = [
                *_pool_violations(self._inventory, w, gpu_types, site, pool, self._datasets),
                *_revision2_pool_violations(w, gpu_count, site, pool, self._datasets)]
        return known


def _rule_inputs(w: Workload, tier: str, gpu_types: list[str], gpu_count: int) -> tuple[object, ...]:
    """What _pool_violations and _revision2_pool_violations read of a workload (and its tier)."""
    latency = w.latency
    return (tier, tuple(gpu_types), gpu_count, w.gpu.multi_node, w.type, w.preemptible, tuple(w.datasets),
            None if latency is None else (latency.region, latency.p95_ms),
            None if w.sites is None else tuple(w.sites))


def _placement_violations(pl: Placement, w: Workload, site: Site, pool: Pool,
                          rules: _PairRules) -> tuple[list[str], float]:
    """The rules one placement breaks on its own, and its cost by the rules."""
    problems: list[str] = []
    where = f"{pl.workload} in {pl.pool}"
    if site.name != pl.site:
        problems.append(f"{where}: pool is at {site.name}, not {pl.site}")
    tier = rules.tier(w)
    if pl.tier != tier:
        problems.append(f"{where}: tier {pl.tier}, but the rules give {tier}")
    gpu = w.fallback.gpu if pl.degraded and w.fallback and w.fallback.gpu else w.gpu
    if pl.gpus != pl.replicas * gpu.count:
        problems.append(f"{where}: {pl.gpus} GPUs for {pl.replicas} × {gpu.count}")
    pair = rules.violations(w, pl.degraded, gpu.types, gpu.count, site, pool)
    if pair:
        problems.extend(f"{where}: {p}" for p in pair)
    cost = pl.replicas * gpu.count * w.hours * rules.price(pool)
    if abs(cost - pl.usd_per_month) > _TOLERANCE_USD:
        problems.append(f"{where}: costs {cost:.2f}, plan says {pl.usd_per_month:.2f}")
    return problems, cost


def _pool_violations(inventory: Inventory, w: Workload, gpu_types: list[str], site: Site, pool: Pool,
                     datasets: dict[str, Dataset]) -> list[str]:
    """The rules a pool breaks for a workload, each re-derived from the spec."""
    problems: list[str] = []
    tier = spec_tier(w)
    if pool.gpu not in gpu_types:
        problems.append(f"GPU {pool.gpu} is not one of {gpu_types}")
    if not spec_capacity_allowed(tier, pool.capacity_type, w.preemptible, inventory.policies):
        problems.append(f"capacity type {pool.capacity_type.value} not allowed for tier {tier}")
    if pool.capacity_type is CapacityType.SPOT and not w.preemptible:
        problems.append("spot capacity for non-preemptible work")
    read = [datasets[n] for n in w.datasets]
    if w.type is WorkloadType.FEDERATED_TRAINING:
        read = [d for d in read if d.site == site.name]
        if not read:
            problems.append("a federated trainer at a site holding none of its data")
    for d in read:
        if d.sensitivity is Sensitivity.RESTRICTED and site.kind is SiteKind.CLOUD:
            problems.append(f"restricted dataset {d.name} processed in the cloud")
        if d.residency is not None and site.jurisdiction not in d.residency:
            problems.append(f"dataset {d.name} must stay in {d.residency}, site is {site.jurisdiction}")
    if w.latency is not None and site.latency_ms.get(w.latency.region, float("inf")) > w.latency.p95_ms:
        problems.append(f"latency to {w.latency.region} over {w.latency.p95_ms} ms")
    if w.sites is not None and site.name not in w.sites:
        problems.append(f"site {site.name} not in the allow-list")
    return problems


# --- revision 2 of the format: node shape, max_sensitivity, pool failure domains, copies, whole
# machines and the cash cost model. Each rule is re-derived here from the spec's text.

def _per_node(site: Site, pool: Pool) -> int:
    """GPUs in one machine: the catalog's for a cloud instance type, else gpus_per_node or min(8, gpus)."""
    if site.kind is SiteKind.CLOUD:
        return catalog().instances[pool.instance_type or ""].gpus_per_node
    return pool.gpus_per_node or min(8, pool.gpus or 1)


def _committed(site: Site, pool: Pool) -> bool:
    return site.kind is not SiteKind.CLOUD or pool.capacity_type is CapacityType.RESERVED


def _price(pool: Pool) -> float:
    if pool.usd_per_gpu_hour is not None:
        return pool.usd_per_gpu_hour
    return catalog().instances[pool.instance_type or ""].usd_per_gpu_hour


def _read_usd(dataset: Dataset, site_name: str, sites: dict[str, Site]) -> float:
    """Per GB read at a site: nothing where a copy is held, else the cheapest holder's egress."""
    holders = [dataset.site, *dataset.copies]
    if site_name in holders:
        return 0.0
    return dataset.size_gb * min(sites[h].egress_usd_per_gb for h in holders)


def _may_process(site: Site, sensitivity: Sensitivity) -> bool:
    ceiling = site.max_sensitivity
    if ceiling is None:
        ceiling = Sensitivity.RESTRICTED if site.kind is SiteKind.ONPREM else Sensitivity.CONFIDENTIAL
    return _RANK[ceiling] >= _RANK[sensitivity]


def _revision2_pool_violations(w: Workload, gpu_count: int, site: Site, pool: Pool,
                               datasets: dict[str, Dataset]) -> list[str]:
    problems: list[str] = []
    per_node = _per_node(site, pool)
    multi_node = w.gpu.multi_node if w.gpu.multi_node is not None else w.type in (
        WorkloadType.PRETRAINING, WorkloadType.TRAINING, WorkloadType.FINE_TUNING, WorkloadType.FEDERATED_TRAINING)
    if gpu_count > per_node and not (multi_node and gpu_count % per_node == 0):
        problems.append(f"node shape: {gpu_count} GPUs per replica on {per_node}-GPU machines")
    read = [datasets[n] for n in w.datasets]
    if w.type is WorkloadType.FEDERATED_TRAINING:
        read = [d for d in read if d.site == site.name]
    for d in read:
        if not _may_process(site, d.sensitivity):
            problems.append(f"max_sensitivity: {d.sensitivity.value} dataset {d.name} at {site.name}")
    return problems


def _spread_violations(inventory: Inventory, degraded: set[str], replicas: dict[str, int], domains: dict[str, set[str]],
                       datasets: dict[str, Dataset]) -> list[str]:
    """A fully placed workload with >= 2 replicas spans min(spread, replicas, possible domains) failure
    domains, a pool's own failure_domain counting; spread defaults to spread_fixed_across for the fixed tier."""
    problems: list[str] = []
    for w in inventory.workloads:
        if w.replicas < 2 or replicas[w.name] != w.replicas or w.name in degraded:
            continue
        wanted = w.spread if w.spread is not None else (
            inventory.policies.spread_fixed_across if spec_tier(w) == FIXED else 1)
        if len(domains[w.name]) >= min(wanted, w.replicas):
            continue
        # the spread asked for is bounded by the failure domains that could host the workload at all
        # (worked out only here: for every workload it would cost workloads × pools rule checks)
        possible = {p.failure_domain or s.failure_domain or s.name for s in inventory.sites for p in s.pools
                    if (p.gpus or p.max_gpus or 0) > 0
                    and not _pool_violations(inventory, w, w.gpu.types, s, p, datasets)
                    and not _revision2_pool_violations(w, w.gpu.count, s, p, datasets)}
        required = min(wanted, w.replicas, len(possible))
        if required >= 2 and len(domains[w.name]) < required:
            problems.append(f"spread: {w.name} spans {len(domains[w.name])} failure domains, needs {required}")
    return problems


def _machine_and_cost_violations(inventory: Inventory, plan: Plan) -> list[str]:
    """Whole machines in pay-per-use pools (quota and machine counts), committed constants, and the
    plan's cost parts under its cost model."""
    problems: list[str] = []
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    always_on: dict[str, int] = defaultdict(int)
    own_machines: dict[str, int] = defaultdict(int)
    own_usd: dict[str, float] = defaultdict(float)
    amortized_in: dict[str, float] = defaultdict(float)
    workloads = {w.name: w for w in inventory.workloads}
    shapes: dict[str, tuple[int, float]] = {}  # pool -> GPUs per machine, price: once per pool
    for pl in plan.placements:
        if pl.pool not in pools or pl.workload not in workloads or pl.replicas <= 0:
            continue
        shape = shapes.get(pl.pool)
        if shape is None:
            site, pool = pools[pl.pool]
            shape = shapes[pl.pool] = (_per_node(site, pool), _price(pool))
        per_node, price = shape
        hours = workloads[pl.workload].hours
        per_replica = pl.gpus // pl.replicas
        amortized_in[pl.pool] += pl.gpus * hours * price
        if hours == _HOURS_ALWAYS_ON:
            always_on[pl.pool] += pl.gpus
        else:
            machines = pl.replicas * -(-per_replica // per_node)
            own_machines[pl.pool] += machines
            own_usd[pl.pool] += machines * per_node * hours * price
    reported = {p.pool: p for p in plan.pools}
    committed = pay_per_use = idle = 0.0
    for name, (site, pool) in pools.items():
        per_node = _per_node(site, pool)
        capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
        if _committed(site, pool):
            usd = capacity * _HOURS_ALWAYS_ON * _price(pool)
            committed += usd
            idle += usd - amortized_in[name]
            machines = -(-capacity // per_node)
        else:
            shared = -(-always_on[name] // per_node)
            machines = shared + own_machines[name]
            usd = shared * per_node * _HOURS_ALWAYS_ON * _price(pool) + own_usd[name]
            pay_per_use += usd
            if machines > capacity // per_node:
                problems.append(f"whole machines: pool {name} runs {machines} machines of {per_node} GPUs, "
                                f"its quota of {capacity} GPUs allows {capacity // per_node}")
        got = reported.get(name)
        if got is None:
            problems.append(f"pool {name}: missing from the plan's pools")
            continue
        if got.machines != machines:
            problems.append(f"machines: pool {name} reports {got.machines}, the placements need {machines}")
        if abs(got.usd_per_month - usd) > _TOLERANCE_USD:
            problems.append(f"pool cost: pool {name} reports {got.usd_per_month:.2f}, the rules give {usd:.2f}")
    if plan.cost_model != inventory.policies.cost_model.value:
        problems.append(f"cost model: plan says {plan.cost_model}, the inventory {inventory.policies.cost_model.value}")
    data = sum(m.usd_per_month for m in plan.data_movements)
    if inventory.policies.cost_model.value == "cash":
        total = committed + pay_per_use + data
    else:
        total = sum(amortized_in.values()) + data
    slack = _TOLERANCE_USD * max(1, len(plan.pools) + len(plan.data_movements))
    for label, got_usd, want in (("total", plan.total_usd_per_month, total),
                                 ("committed", plan.committed_usd_per_month, committed),
                                 ("pay-per-use", plan.pay_per_use_usd_per_month, pay_per_use),
                                 ("idle committed", plan.idle_committed_usd_per_month, idle)):
        if abs(got_usd - want) > slack:
            problems.append(f"{label} cost: plan says {got_usd:.2f}, the rules give {want:.2f}")
    return problems


def check_budget(inventory: Inventory, plan: Plan) -> list[str]:
    """The budget rule, apart from check_plan: an over-budget plan is the user's problem (exit 1), not a
    planner bug. The total under the cost model (cash: committed included) must not exceed it."""
    budget = inventory.policies.monthly_budget_usd
    if budget is not None and plan.total_usd_per_month > budget + _TOLERANCE_USD:
        return [f"budget: the plan costs {plan.total_usd_per_month:.2f} ({plan.cost_model}), budget {budget:.2f}"]
    return []
