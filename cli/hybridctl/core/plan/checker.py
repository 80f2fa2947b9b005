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
from hybridctl.core.plan.model import Plan

_TOLERANCE_USD = 0.05


def check_plan(inventory: Inventory, plan: Plan) -> list[str]:
    """Violations of the spec's placement rules; empty when the plan is valid."""
    problems: list[str] = []
    sites = {s.name: s for s in inventory.sites}
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    datasets = {d.name: d for d in inventory.datasets}
    workloads = {w.name: w for w in inventory.workloads}
    instances = catalog().instances
    used: dict[str, int] = defaultdict(int)
    replicas: dict[str, int] = defaultdict(int)
    domains: dict[str, set[str]] = defaultdict(set)
    sites_used: dict[str, set[str]] = defaultdict(set)
    compute: dict[str, float] = defaultdict(float)
    for pl in plan.placements:
        where = f"{pl.workload} in {pl.pool}"
        w = workloads.get(pl.workload)
        if w is None or pl.pool not in pools:
            problems.append(f"{where}: unknown workload or pool")
            continue
        site, pool = pools[pl.pool]
        if site.name != pl.site:
            problems.append(f"{where}: pool is at {site.name}, not {pl.site}")
        tier = spec_tier(w)
        if pl.tier != tier:
            problems.append(f"{where}: tier {pl.tier}, but the rules give {tier}")
        gpu = w.fallback.gpu if pl.degraded and w.fallback and w.fallback.gpu else w.gpu
        if pl.gpus != pl.replicas * gpu.count:
            problems.append(f"{where}: {pl.gpus} GPUs for {pl.replicas} × {gpu.count}")
        problems.extend(f"{where}: {p}" for p in _pool_violations(inventory, w, gpu.types, site, pool, datasets))
        price = pool.usd_per_gpu_hour
        if price is None:
            price = instances[pool.instance_type or ""].usd_per_gpu_hour
        cost = pl.replicas * gpu.count * w.hours * price
        if abs(cost - pl.usd_per_month) > _TOLERANCE_USD:
            problems.append(f"{where}: costs {cost:.2f}, plan says {pl.usd_per_month:.2f}")
        used[pool.name] += pl.gpus
        replicas[pl.demand or pl.workload] += pl.replicas
        domains[pl.workload].add(site.failure_domain or site.name)
        sites_used[pl.workload].add(site.name)
        compute[pl.workload] += cost
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
            for site_name in sites_used[w.name]:
                for n in w.datasets:
                    d = datasets[n]
                    if d.site != site_name:
                        movement[w.name] += d.size_gb * w.data_passes_per_month * sites[d.site].egress_usd_per_gb
        for key in keys:
            wanted = w.fallback.replicas if key in degraded and w.fallback and w.fallback.replicas else w.replicas
            if replicas[key] + unplaced.get(key, 0) != wanted:
                problems.append(f"{key}: {replicas[key]} placed + {unplaced.get(key, 0)} unplaced != {wanted} replicas")
        tier = spec_tier(w)
        spread = min(inventory.policies.spread_fixed_across, w.replicas)
        if tier == FIXED and w.replicas >= 2 and replicas[w.name] == w.replicas and spread >= 2 \
                and len(domains[w.name]) < spread and w.name not in degraded:
            # the spread asked for is bounded by the failure domains that could host the workload at all
            # (worked out only here: for every workload it would cost workloads × pools rule checks)
            possible = {s.failure_domain or s.name for s in inventory.sites for p in s.pools
                        if (p.gpus or p.max_gpus or 0) > 0
                        and not _pool_violations(inventory, w, w.gpu.types, s, p, datasets)}
            spread = min(spread, len(possible))
            if len(domains[w.name]) < spread:
                problems.append(f"{w.name}: fixed tier spans {len(domains[w.name])} failure domains, needs {spread}")
        if w.max_usd_per_month is not None and compute[w.name] + movement[w.name] > w.max_usd_per_month + _TOLERANCE_USD:
            problems.append(f"{w.name}: costs {compute[w.name] + movement[w.name]:.2f}, ceiling {w.max_usd_per_month:.2f}")
    # per workload, so that data cost charged to the wrong workload shows up, not only a wrong total
    planned: dict[str, list[float]] = defaultdict(list)
    for m in plan.data_movements:
        planned[m.workload].append(m.usd_per_month)
    for name in sorted(set(planned) | {n for n, usd in movement.items() if usd}):
        says = sum(planned[name])
        if abs(says - movement[name]) > _TOLERANCE_USD * max(1, len(planned[name])):
            problems.append(f"{name}: data movement: plan says {says:.2f}, rules give {movement[name]:.2f}")
    return problems


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

