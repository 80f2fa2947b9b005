"""Which pools may host which demand, and, when none may, which constraint emptied the list.

A *demand* is what the planner places: one workload, or for federated training one
trainer group per site that holds the workload's data (the data never moves).
Eligibility is computed once per distinct signature of the constraints, which keeps it
fast for inventories with thousands of near-identical workloads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from hybridctl.core.inventory.catalog import catalog
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
from hybridctl.core.placement.tiers import Tier, TierDecision, classify_workload
from hybridctl.core.pricing.rates import pool_usd_per_gpu_hour

_PREMISES = frozenset({SiteKind.ONPREM, SiteKind.EDGE})
SENSITIVITY_RANK = MappingProxyType({Sensitivity.PUBLIC: 0, Sensitivity.INTERNAL: 1, Sensitivity.CONFIDENTIAL: 2,
                                     Sensitivity.RESTRICTED: 3})
DEFAULT_ONPREM_GPUS_PER_NODE = 8


def is_committed(site: Site, pool: Pool) -> bool:
    """Committed pools are paid whether used or not: every onprem and edge pool, and reserved cloud pools."""
    return site.kind is not SiteKind.CLOUD or pool.capacity_type is CapacityType.RESERVED


def gpus_per_node(site: Site, pool: Pool) -> int:
    """GPUs in one machine of the pool: the catalog's for a cloud instance type, else `gpus_per_node`
    (default the smaller of 8 and the pool's GPUs)."""
    if site.kind is SiteKind.CLOUD:
        instance = catalog().instances.get(pool.instance_type or "")
        return instance.gpus_per_node if instance is not None else 1
    if pool.gpus_per_node is not None:
        return pool.gpus_per_node
    return max(1, min(DEFAULT_ONPREM_GPUS_PER_NODE, pool.gpus or 1))


def fits_node_shape(gpu_count: int, multi_node: bool, per_node: int) -> bool:
    """The spec's node-shape rule: a replica fits in one machine, or spans whole machines when it may."""
    return gpu_count <= per_node or (multi_node and gpu_count % per_node == 0)


@dataclass(frozen=True)
class PoolInfo:
    """A pool with what the planner needs about it, resolved once (its price by pricing/rates.py)."""

    index: int
    site: Site
    pool: Pool
    usd_per_gpu_hour: float
    capacity_gpus: int
    gpus_per_node: int = 1
    committed: bool = True
    # GPUs of the pool held by work placed outside this plan, not counted in capacity_gpus: the work a
    # failover keeps where it runs (failover/scope.py). Only the explanations read it.
    held_gpus: int = 0

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def domain(self) -> str:
        """The pool's own failure domain (e.g. an availability zone), else its site's."""
        return self.pool.failure_domain or self.site.domain


@dataclass(frozen=True)
class PriceCap:
    """A failover's ceiling on the pools a burst or opportunistic demand may use: `ratio` times the rate it paid
    in the applied plan (policies.failover_max_price_ratio); a dearer pool is not eligible, so it waits."""

    ratio: float
    paid_usd_per_gpu_hour: float

    @property
    def usd_per_gpu_hour(self) -> float:
        return self.ratio * self.paid_usd_per_gpu_hour

    def allows(self, usd_per_gpu_hour: float) -> bool:
        return usd_per_gpu_hour <= self.usd_per_gpu_hour + PRICE_CAP_SLACK

    def __str__(self) -> str:
        return (f"in a failover it moves only to a pool of at most {price_text(self.usd_per_gpu_hour)}/GPU-hour "
                f"(policies.failover_max_price_ratio {self.ratio:g} × the {price_text(self.paid_usd_per_gpu_hour)} "
                "it paid in the applied plan)")


def price_text(usd_per_gpu_hour: float) -> str:
    """A price per GPU-hour in cents, or to the hundredth of a cent when it has more (catalog prices do)."""
    cents = usd_per_gpu_hour * 100
    return f"${usd_per_gpu_hour:,.2f}" if abs(cents - round(cents)) < 1e-6 else f"${usd_per_gpu_hour:,.4f}"


# a price equal to the cap, up to float noise in ratio × rate, is allowed
PRICE_CAP_SLACK = 1e-9


@dataclass(frozen=True)
class Demand:
    """One unit the planner places: replicas × GPUs of one workload, maybe pinned to one site."""

    key: str  # the workload's name, or "workload@site" for a federated trainer group
    workload: Workload
    decision: TierDecision
    gpu_types: tuple[str, ...]
    gpu_count: int
    replicas: int
    remote_datasets: tuple[Dataset, ...]  # read from wherever they live; egress is paid when remote
    checked_datasets: tuple[Dataset, ...]  # whose sensitivity and residency the pool's site must honour
    pinned_site: str | None = None
    spread: int = 1  # failure domains its replicas must span (spread_wanted), before capping by replicas
    # a failover's: the dearest price per GPU-hour it may move to (policies.failover_max_price_ratio; scope.py)
    price_cap: PriceCap | None = None
    # the workload's name, read once: a replan picks a fleet's demands by it in C loops, where
    # `workload.name` through the pydantic model costs several times a plain attribute
    workload_name: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "workload_name", self.workload.name)

    @property
    def tier(self) -> Tier:
        return self.decision.tier

    @property
    def hours(self) -> float:
        return self.workload.hours

    @property
    def multi_node(self) -> bool:
        return self.workload.multi_node

    def reads(self) -> tuple[tuple[tuple[str, ...], float], ...]:
        """What its data movement depends on, in a stable order: each remote dataset's holders and size."""
        return tuple(sorted((d.holders, d.size_gb) for d in self.remote_datasets))


def pool_infos(inventory: Inventory) -> list[PoolInfo]:
    instances = catalog().instances
    infos: list[PoolInfo] = []
    for site in inventory.sites:
        for pool in site.pools:
            price = pool_usd_per_gpu_hour(pool, instances, site.region)
            capacity = pool.gpus if pool.gpus is not None else (pool.max_gpus or 0)
            infos.append(PoolInfo(len(infos), site, pool, price, capacity, gpus_per_node(site, pool),
                                  is_committed(site, pool)))
    return infos


def spread_wanted(workload: Workload, tier: Tier, spread_fixed_across: int) -> int:
    """The spec's spread: the workload's own, else `spread_fixed_across` for the fixed tier, else 1."""
    if workload.spread is not None:
        return workload.spread
    return spread_fixed_across if tier is Tier.FIXED else 1


def demands(inventory: Inventory) -> list[Demand]:
    datasets = {d.name: d for d in inventory.datasets}
    result: list[Demand] = []
    # the tier depends on four fields that a fleet's workloads share: decide it once per class
    decided: dict[tuple[object, ...], TierDecision] = {}
    for workload in inventory.workloads:
        facts = (workload.tier, workload.preemptible, workload.type, workload.hours)
        same = decided.get(facts)
        if same is None:
            same = decided[facts] = classify_workload(workload, inventory.policies)
        decision = TierDecision(workload.name, same.tier, same.rule, same.reason, same.capacity_types)
        spread = spread_wanted(workload, decision.tier, inventory.policies.spread_fixed_across)
        read = tuple(datasets[n] for n in workload.datasets if n in datasets)
        if workload.type is WorkloadType.FEDERATED_TRAINING:
            for site in sorted({d.site for d in read}):
                local = tuple(d for d in read if d.site == site)
                result.append(Demand(f"{workload.name}@{site}", workload, decision, tuple(workload.gpu.types),
                                     workload.gpu.count, workload.replicas, (), local, site, spread))
        else:
            result.append(Demand(workload.name, workload, decision, tuple(workload.gpu.types),
                                 workload.gpu.count, workload.replicas, read, read, None, spread))
    return result


@dataclass(frozen=True)
class Exclusion:
    """Why a constraint removed the pools it removed."""

    constraint: str  # a stable identifier: sites, teams, gpu-type, capacity-type, sensitivity, residency, latency
    detail: str


def site_may_process(site: Site, sensitivity: Sensitivity) -> bool:
    """The site's max_sensitivity is at least the data's (public < internal < confidential < restricted)."""
    return SENSITIVITY_RANK[site.max_sensitivity_effective] >= SENSITIVITY_RANK[sensitivity]


class EligibilityIndex:
    """Eligible pools per demand, memoised on the constraint signature."""

    def __init__(self, inventory: Inventory, pools: list[PoolInfo] | None = None) -> None:
        self.inventory = inventory
        self.pools = pools if pools is not None else pool_infos(inventory)
        self._cache: dict[tuple[object, ...], tuple[tuple[int, ...], Exclusion | None]] = {}
        self._facts: _PoolFacts | None = None

    @staticmethod
    def _signature(demand: Demand) -> tuple[object, ...]:
        w = demand.workload
        latency = (w.latency.region, w.latency.p95_ms) if w.latency else None
        return (demand.gpu_types, demand.decision.capacity_types, demand.pinned_site,
                tuple(w.sites) if w.sites is not None else None,
                tuple(d.name for d in demand.checked_datasets), latency, demand.gpu_count, demand.multi_node, w.team,
                demand.price_cap)

    def eligible(self, demand: Demand) -> tuple[int, ...]:
        return self.explain(demand)[0]

    def explain(self, demand: Demand) -> tuple[tuple[int, ...], Exclusion | None]:
        """Eligible pool indices, and if there are none, the constraint that emptied the list."""
        signature = self._signature(demand)
        cached = self._cache.get(signature)
        if cached is None:
            if self._facts is None:
                self._facts = _PoolFacts(self.pools)
            eligible = self._facts.eligible(demand)
            # none left: the rules again one by one, to name the constraint that emptied the list
            cached = self._cache[signature] = (eligible, None) if eligible else self._compute(demand)
        return cached

    def _compute(self, demand: Demand) -> tuple[tuple[int, ...], Exclusion | None]:
        w = demand.workload
        candidates: list[PoolInfo] = list(self.pools)

        def step(constraint: str, keep: Iterable[PoolInfo], detail: str) -> Exclusion | None:
            nonlocal candidates
            candidates = list(keep)
            return None if candidates else Exclusion(constraint, detail)

        allowed_sites = set(w.sites) if w.sites is not None else None
        if demand.pinned_site is not None:
            allowed_sites = {demand.pinned_site} if allowed_sites is None else allowed_sites & {demand.pinned_site}
        if allowed_sites is not None:
            why = f"its data lives at {demand.pinned_site}" if demand.pinned_site else f"sites: {sorted(allowed_sites)}"
            found = step("sites", (p for p in candidates if p.site.name in allowed_sites),
                         f"no pool at the allowed sites ({why})")
            if found:
                return (), found
        closed = sorted({p.site.name: p.site.teams or [] for p in candidates
                         if p.site.teams is not None and w.team not in p.site.teams}.items())
        if closed:
            shown = "; ".join(f"{site} runs only {', '.join(teams)}" for site, teams in closed[:3])
            found = step("teams", (p for p in candidates if p.site.teams is None or w.team in p.site.teams),
                         f"no pool at a site its team may use ({'team ' + w.team if w.team else 'no team'}: {shown}"
                         + (f"; {len(closed) - 3} more sites" if len(closed) > 3 else "") + ")")
            if found:
                return (), found
        types = set(demand.gpu_types)
        found = step("gpu-type", (p for p in candidates if p.pool.gpu in types),
                     f"no pool offers GPU type {' or '.join(demand.gpu_types)}")
        if found:
            return (), found
        shapes = sorted({p.gpus_per_node for p in candidates})
        found = step("node-shape", (p for p in candidates
                                    if fits_node_shape(demand.gpu_count, demand.multi_node, p.gpus_per_node)),
                     f"node shape: a replica needs {demand.gpu_count} GPUs, the matching pools' machines have "
                     f"{', '.join(map(str, shapes))} GPUs"
                     + (" and it may not span machines (gpu.multi_node: false)" if not demand.multi_node
                        else ", and it is not a whole number of machines"))
        if found:
            return (), found
        capacity_types = set(demand.decision.capacity_types)
        offered = sorted({p.pool.capacity_type.value for p in candidates})
        found = step("capacity-type", (p for p in candidates if p.pool.capacity_type in capacity_types),
                     f"tier {demand.tier.value} may use {', '.join(c.value for c in demand.decision.capacity_types)}"
                     f" but the matching pools are {', '.join(offered)}"
                     + (" (spot needs preemptible: true)" if CapacityType.SPOT.value in offered
                        and not w.preemptible else ""))
        if found:
            return (), found
        for dataset in demand.checked_datasets:
            # the cloud never processes restricted data: the plainer reason comes first
            if dataset.sensitivity is Sensitivity.RESTRICTED:
                found = step("sensitivity", (p for p in candidates if p.site.kind in _PREMISES),
                             f"dataset {dataset.name} is restricted (onprem or edge only) and the remaining "
                             "pools are in the cloud")
                if found:
                    return (), found
            ceilings = sorted({p.site.max_sensitivity_effective.value for p in candidates})
            found = step("sensitivity", (p for p in candidates if site_may_process(p.site, dataset.sensitivity)),
                         f"dataset {dataset.name} is {dataset.sensitivity.value} and the remaining sites may "
                         f"process at most {', '.join(ceilings)} data (max_sensitivity)")
            if found:
                return (), found
            if dataset.residency is not None:
                zones = set(dataset.residency)
                left = sorted({p.site.jurisdiction for p in candidates})
                found = step("residency", (p for p in candidates if p.site.jurisdiction in zones),
                             f"dataset {dataset.name} must stay in {', '.join(dataset.residency)} but the "
                             f"remaining pools are in {', '.join(left)}")
                if found:
                    return (), found
        if w.latency is not None:
            region, budget = w.latency.region, w.latency.p95_ms
            nearest = min((p.site.latency_ms.get(region, float("inf")) for p in candidates), default=float("inf"))
            found = step("latency", (p for p in candidates if p.site.latency_ms.get(region, float("inf")) <= budget),
                         f"latency to {region} must be ≤ {budget:g} ms; the nearest remaining site is "
                         + (f"{nearest:g} ms away" if nearest != float("inf") else "unmeasured for that region"))
            if found:
                return (), found
        cap = demand.price_cap
        if cap is not None:
            cheapest = min(p.usd_per_gpu_hour for p in candidates)
            found = step("failover-price", (p for p in candidates if cap.allows(p.usd_per_gpu_hour)),
                         f"deferred: the cheapest pool left costs {price_text(cheapest)}/GPU-hour, and {cap}")
            if found:
                return (), found
        return tuple(p.index for p in candidates), None


class _PoolFacts:
    """The pools' facts the eligibility rules read, as arrays: the rules become a few vector
    operations per signature (a large fleet has thousands of signatures over a thousand pools).
    The same rules as EligibilityIndex._compute, which runs only to explain an empty list."""

    def __init__(self, pools: list[PoolInfo]) -> None:
        def codes(values: list[str]) -> tuple[dict[str, int], npt.NDArray[np.int64]]:
            code = {v: i for i, v in enumerate(sorted(set(values)))}
            return code, np.array([code[v] for v in values], dtype=np.int64)

        self.index = np.array([p.index for p in pools], dtype=np.int64)
        self.site_code, self.site = codes([p.site.name for p in pools])
        self.gpu_code, self.gpu = codes([p.pool.gpu for p in pools])
        self.capacity_code, self.capacity_type = codes([p.pool.capacity_type.value for p in pools])
        self.zone_code, self.zone = codes([p.site.jurisdiction for p in pools])
        self.team_open = np.array([p.site.teams is None for p in pools], dtype=np.bool_)
        self.site_teams = [frozenset(p.site.teams or ()) for p in pools]
        self._team_allowed: dict[str | None, npt.NDArray[np.bool_]] = {}
        self.per_node = np.array([p.gpus_per_node for p in pools], dtype=np.int64)
        self.price = np.array([p.usd_per_gpu_hour for p in pools], dtype=np.float64)
        self.premises = np.array([p.site.kind in _PREMISES for p in pools], dtype=np.bool_)
        self.rank = np.array([SENSITIVITY_RANK[p.site.max_sensitivity_effective] for p in pools], dtype=np.int64)
        regions = sorted({r for p in pools for r in p.site.latency_ms})
        self.latency = {r: np.array([p.site.latency_ms.get(r, np.inf) for p in pools], dtype=np.float64)
                        for r in regions}

    @staticmethod
    def _among(codes: dict[str, int], values: Iterable[str], of: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        return np.isin(of, [codes[v] for v in values if v in codes])

    def _teams(self, team: str | None) -> npt.NDArray[np.bool_]:
        """The pools a team's workloads may use: sites without `teams`, and those that list it."""
        allowed = self._team_allowed.get(team)
        if allowed is None:
            allowed = self._team_allowed[team] = self.team_open | np.array(
                [team is not None and team in listed for listed in self.site_teams], dtype=np.bool_)
        return allowed

    def eligible(self, demand: Demand) -> tuple[int, ...]:
        w = demand.workload
        keep = self._among(self.gpu_code, demand.gpu_types, self.gpu)
        if w.sites is not None:
            keep &= self._among(self.site_code, w.sites, self.site)
        if demand.pinned_site is not None:
            keep &= self._among(self.site_code, (demand.pinned_site,), self.site)
        if not self.team_open.all():
            keep &= self._teams(w.team)
        count = demand.gpu_count
        keep &= (count <= self.per_node) | (demand.multi_node & (count % self.per_node == 0))
        keep &= self._among(self.capacity_code, (c.value for c in demand.decision.capacity_types),
                            self.capacity_type)
        for dataset in demand.checked_datasets:
            if dataset.sensitivity is Sensitivity.RESTRICTED:
                keep &= self.premises
            keep &= self.rank >= SENSITIVITY_RANK[dataset.sensitivity]
            if dataset.residency is not None:
                keep &= self._among(self.zone_code, dataset.residency, self.zone)
        if w.latency is not None:
            latency = self.latency.get(w.latency.region)
            keep &= latency <= w.latency.p95_ms if latency is not None else False
        if demand.price_cap is not None:
            keep &= self.price <= demand.price_cap.usd_per_gpu_hour + PRICE_CAP_SLACK
        return tuple(self.index[keep].tolist())
