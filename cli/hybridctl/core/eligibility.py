"""Which pools may host which demand, and, when none may, which constraint emptied the list.

A *demand* is what the planner places: one workload, or for federated training one
trainer group per site that holds the workload's data (the data never moves).
Eligibility is computed once per distinct signature of the constraints, which keeps it
fast for inventories with thousands of near-identical workloads.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

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
from hybridctl.core.tiers import Tier, TierDecision, classify_workload

_PREMISES = frozenset({SiteKind.ONPREM, SiteKind.EDGE})


@dataclass(frozen=True)
class PoolInfo:
    """A pool with what the planner needs about it, resolved once."""

    index: int
    site: Site
    pool: Pool
    usd_per_gpu_hour: float
    capacity_gpus: int

    @property
    def name(self) -> str:
        return self.pool.name

    @property
    def domain(self) -> str:
        return self.site.domain


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

    @property
    def tier(self) -> Tier:
        return self.decision.tier

    @property
    def hours(self) -> float:
        return self.workload.hours

    def usd_per_replica(self, pool: PoolInfo) -> float:
        return self.gpu_count * self.hours * pool.usd_per_gpu_hour


def pool_infos(inventory: Inventory) -> list[PoolInfo]:
    instances = catalog().instances
    infos: list[PoolInfo] = []
    for site in inventory.sites:
        for pool in site.pools:
            price = pool.usd_per_gpu_hour
            if price is None:
                instance = instances.get(pool.instance_type or "")
                price = instance.usd_per_gpu_hour if instance else 0.0
            capacity = pool.gpus if pool.gpus is not None else (pool.max_gpus or 0)
            infos.append(PoolInfo(len(infos), site, pool, price, capacity))
    return infos


def demands(inventory: Inventory) -> list[Demand]:
    datasets = {d.name: d for d in inventory.datasets}
    result: list[Demand] = []
    for workload in inventory.workloads:
        decision = classify_workload(workload, inventory.policies)
        read = tuple(datasets[n] for n in workload.datasets if n in datasets)
        if workload.type is WorkloadType.FEDERATED_TRAINING:
            for site in sorted({d.site for d in read}):
                local = tuple(d for d in read if d.site == site)
                result.append(Demand(f"{workload.name}@{site}", workload, decision, tuple(workload.gpu.types),
                                     workload.gpu.count, workload.replicas, (), local, site))
        else:
            result.append(Demand(workload.name, workload, decision, tuple(workload.gpu.types),
                                 workload.gpu.count, workload.replicas, read, read))
    return result


@dataclass(frozen=True)
class Exclusion:
    """Why a constraint removed the pools it removed."""

    constraint: str  # a stable identifier: sites, gpu-type, capacity-type, sensitivity, residency, latency
    detail: str


def _dataset_allows(dataset: Dataset, site: Site) -> str | None:
    """None if the site may process the dataset; otherwise which rule forbids it."""
    if dataset.sensitivity is Sensitivity.RESTRICTED and site.kind not in _PREMISES:
        return "sensitivity"
    if dataset.residency is not None and site.jurisdiction not in dataset.residency:
        return "residency"
    return None


class EligibilityIndex:
    """Eligible pools per demand, memoised on the constraint signature."""

    def __init__(self, inventory: Inventory, pools: list[PoolInfo] | None = None) -> None:
        self.inventory = inventory
        self.pools = pools if pools is not None else pool_infos(inventory)
        self._cache: dict[tuple[object, ...], tuple[tuple[int, ...], Exclusion | None]] = {}

    @staticmethod
    def _signature(demand: Demand) -> tuple[object, ...]:
        w = demand.workload
        latency = (w.latency.region, w.latency.p95_ms) if w.latency else None
        return (demand.gpu_types, demand.decision.capacity_types, demand.pinned_site,
                tuple(w.sites) if w.sites is not None else None,
                tuple(d.name for d in demand.checked_datasets), latency)

    def eligible(self, demand: Demand) -> tuple[int, ...]:
        return self.explain(demand)[0]

    def explain(self, demand: Demand) -> tuple[tuple[int, ...], Exclusion | None]:
        """Eligible pool indices, and if there are none, the constraint that emptied the list."""
        signature = self._signature(demand)
        cached = self._cache.get(signature)
        if cached is None:
            cached = self._cache[signature] = self._compute(demand)
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
        types = set(demand.gpu_types)
        found = step("gpu-type", (p for p in candidates if p.pool.gpu in types),
                     f"no pool offers GPU type {' or '.join(demand.gpu_types)}")
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
            if dataset.sensitivity is Sensitivity.RESTRICTED:
                found = step("sensitivity", (p for p in candidates if p.site.kind in _PREMISES),
                             f"dataset {dataset.name} is restricted (onprem or edge only) and the remaining "
                             "pools are in the cloud")
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
        return tuple(p.index for p in candidates), None

