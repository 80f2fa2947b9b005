"""The spec's rules as the checker states them: tiers (inventory-v1.md, "Tiers"), and what a pool
must offer a workload's placement ("What the planner must respect", "Cost").

The planner classifies with core/placement/tiers.py and decides eligibility with core/placement/eligibility.py. The
checker must not borrow that code: a bug there would then be a bug in both, and the checker would
approve the plan it should reject. So the spec's rules are written out again here, as plainly as
the spec words them, and nothing here imports the planner's classification or eligibility.
"""

from __future__ import annotations

from types import MappingProxyType

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import (
    CapacityType,
    Dataset,
    Inventory,
    Policies,
    Pool,
    Sensitivity,
    Site,
    SiteKind,
    TierChoice,
    Workload,
    WorkloadType,
)
from hybridctl.core.plan.model import Placement
from hybridctl.core.pricing.rates import rework_factor

FIXED = "fixed"
BURST = "burst"
OPPORTUNISTIC = "opportunistic"

ALWAYS_ON_HOURS = 730  # the spec's rule 2: `hours_per_month: 730`
TOLERANCE_USD = 0.05
_RANK = MappingProxyType({Sensitivity.PUBLIC: 0, Sensitivity.INTERNAL: 1, Sensitivity.CONFIDENTIAL: 2,
                          Sensitivity.RESTRICTED: 3})
# rule 3 of the spec, word for word
_BURST_WORKLOAD_TYPES = ("pretraining", "training", "fine_tuning", "evaluation", "federated_training")


def spec_tier(workload: Workload) -> str:
    """The spec's `tier: auto` rules, first match wins; an explicit tier is taken as written."""
    if workload.tier is not TierChoice.AUTO:
        return workload.tier.value
    if workload.preemptible:  # rule 1
        return OPPORTUNISTIC
    hours = workload.hours_per_month if workload.hours_per_month is not None else ALWAYS_ON_HOURS
    # with a schedule, rule 2 is realtime_inference's alone: "always on" means every hour of the week
    always_on = workload.schedule is None and hours >= ALWAYS_ON_HOURS
    if workload.type is WorkloadType.REALTIME_INFERENCE or always_on:  # rule 2
        return FIXED
    if workload.type.value in _BURST_WORKLOAD_TYPES:  # rule 3
        return BURST
    return OPPORTUNISTIC  # rule 4: experiment, batch_inference, embedding


def spec_capacity_allowed(tier: str, capacity_type: CapacityType, preemptible: bool, policies: Policies) -> bool:
    """The spec's table of capacity types per tier, and "spot only for preemptible workloads"."""
    if capacity_type is CapacityType.RESERVED:
        return True
    if capacity_type is CapacityType.ON_DEMAND:
        return tier in (FIXED, BURST) or policies.allow_on_demand_for_opportunistic
    return tier == OPPORTUNISTIC and preemptible  # spot: never for fixed or burst


def demand_of(workload: Workload, site: str) -> str:
    """The unit a placement of the workload at `site` places ("Federated training"): a federated trainer
    group is placed at a site holding its data, as "workload@site"; any other workload as itself. A
    placement naming another unit (or none) is refused, so that each replica counts toward its workload."""
    if workload.type is WorkloadType.FEDERATED_TRAINING:
        return f"{workload.name}@{site}"
    return workload.name


class PairRules:
    """The rules a pool breaks for a workload, worked out once per pool and kind of workload.

    They read the pool, its site, the inventory's policies and datasets, and of the workload only
    what `rule_inputs` lists: 100,000 workloads placed in 140,000 places make a few thousand
    distinct pairs. A rule that reads more of the workload must add it to `rule_inputs`
    (tests/core/checker/test_checker_pair_rules.py varies each of them).
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

    def price(self, pool: Pool, site: Site) -> float:
        price = self._price.get(pool.name)
        if price is None:
            price = self._price[pool.name] = price_of(pool, site)
        return price

    def violations(self, w: Workload, degraded: bool, gpu_types: list[str], gpu_count: int, site: Site,
                   pool: Pool) -> list[str]:
        kind = self._kinds.get((w.name, degraded))
        if kind is None:  # workloads alike in every rule input share a number
            kind = self._kinds[(w.name, degraded)] = self._kind_numbers.setdefault(
                rule_inputs(w, self.tier(w), gpu_types, gpu_count), len(self._kind_numbers))
        key = (pool.name, site.name, kind)
        known = self._known.get(key)
        if known is None:
            known = self._known[key] = [
                *pool_violations(self._inventory, w, gpu_types, site, pool, self._datasets),
                *revision2_pool_violations(w, gpu_count, site, pool, self._datasets)]
        return known


def rule_inputs(w: Workload, tier: str, gpu_types: list[str], gpu_count: int) -> tuple[object, ...]:
    """What pool_violations and revision2_pool_violations read of a workload (and its tier)."""
    latency = w.latency
    return (tier, tuple(gpu_types), gpu_count, w.gpu.multi_node, w.type, w.preemptible, tuple(w.datasets),
            None if latency is None else (latency.region, latency.p95_ms),
            None if w.sites is None else tuple(w.sites), w.team)


def placement_violations(pl: Placement, w: Workload, site: Site, pool: Pool,
                         rules: PairRules) -> tuple[list[str], float]:
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
    cost = pl.replicas * gpu.count * (w.hours * rework_factor(w, site, pool, w.hours)) * rules.price(pool, site)
    if abs(cost - pl.usd_per_month) > TOLERANCE_USD:
        problems.append(f"{where}: costs {cost:.2f}, plan says {pl.usd_per_month:.2f}")
    return problems, cost


def pool_violations(inventory: Inventory, w: Workload, gpu_types: list[str], site: Site, pool: Pool,
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
    if w.latency is not None:
        measured = site.latency_ms.get(w.latency.region)
        if measured is None:  # no figure is no proof: unmeasured is refused, and said as such
            problems.append(f"latency to {w.latency.region} unmeasured at {site.name} (no latency_ms for it), "
                            f"needs ≤ {w.latency.p95_ms:g} ms")
        elif measured > w.latency.p95_ms:
            problems.append(f"latency to {w.latency.region} {measured:g} ms at {site.name}, over "
                            f"{w.latency.p95_ms:g} ms")
    if w.sites is not None and site.name not in w.sites:
        problems.append(f"site {site.name} not in the allow-list")
    if site.teams is not None and w.team not in site.teams:  # revision 3: site teams
        problems.append(f"site {site.name} runs only teams {site.teams}, the workload's team is {w.team}")
    return problems


# --- revision 2 of the format: node shape, max_sensitivity, pool failure domains, copies, whole
# machines and the cash cost model. Each rule is re-derived here from the spec's text.

def per_node(site: Site, pool: Pool) -> int:
    """GPUs in one machine: the catalog's for a cloud instance type, else gpus_per_node or min(8, gpus)."""
    if site.kind is SiteKind.CLOUD:
        return catalog().instances[pool.instance_type or ""].gpus_per_node
    return pool.gpus_per_node or min(8, pool.gpus or 1)


def committed(site: Site, pool: Pool) -> bool:
    return site.kind is not SiteKind.CLOUD or pool.capacity_type is CapacityType.RESERVED


def price_of(pool: Pool, site: Site) -> float:
    if pool.usd_per_gpu_hour is not None:
        return pool.usd_per_gpu_hour
    instance = catalog().instances[pool.instance_type or ""]
    # the catalog's list price in the site's region (or the nearest region it lists), per GPU
    return instance.price_in(site.region).usd_per_hour / instance.gpus_per_node


def read_usd(dataset: Dataset, site_name: str, sites: dict[str, Site]) -> float:
    """Per GB read at a site: nothing where a copy is held, else the cheapest holder's egress."""
    holders = [dataset.site, *dataset.copies]
    if site_name in holders:
        return 0.0
    return dataset.size_gb * min(sites[h].egress_usd_per_gb for h in holders)


def may_process(site: Site, sensitivity: Sensitivity) -> bool:
    ceiling = site.max_sensitivity
    if ceiling is None:
        ceiling = Sensitivity.RESTRICTED if site.kind is SiteKind.ONPREM else Sensitivity.CONFIDENTIAL
    return _RANK[ceiling] >= _RANK[sensitivity]


def revision2_pool_violations(w: Workload, gpu_count: int, site: Site, pool: Pool,
                              datasets: dict[str, Dataset]) -> list[str]:
    problems: list[str] = []
    gpus_per_node = per_node(site, pool)
    multi_node = w.gpu.multi_node if w.gpu.multi_node is not None else w.type in (
        WorkloadType.PRETRAINING, WorkloadType.TRAINING, WorkloadType.FINE_TUNING, WorkloadType.FEDERATED_TRAINING)
    if gpu_count > gpus_per_node and not (multi_node and gpu_count % gpus_per_node == 0):
        problems.append(f"node shape: {gpu_count} GPUs per replica on {gpus_per_node}-GPU machines")
    read = [datasets[n] for n in w.datasets]
    if w.type is WorkloadType.FEDERATED_TRAINING:
        read = [d for d in read if d.site == site.name]
    for d in read:
        if not may_process(site, d.sensitivity):
            problems.append(f"max_sensitivity: {d.sensitivity.value} dataset {d.name} at {site.name}")
    return problems
