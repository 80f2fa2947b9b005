"""A greedy placement, the baseline the planner is measured against.

Fixed tier first, then burst, then opportunistic; within a tier the larger demands first.
Each replica goes to the cheapest eligible pool with room, counting the data movement a new
site would add; it respects capacity, a fixed workload's failure-domain spread (no domain
holds more than R - k + 1 of its replicas) and cost ceilings. This is what a careful person
with a spreadsheet would do, and what the planner must beat.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hybridctl.core.eligibility import Demand, EligibilityIndex, PoolInfo, demands, pool_infos
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.tiers import TIER_ORDER, Tier


@dataclass(frozen=True)
class GreedyResult:
    compute_usd: float
    data_usd: float
    unplaced_demands: int
    unplaced_replicas: int

    @property
    def total_usd(self) -> float:
        return self.compute_usd + self.data_usd


def _egress(demand: Demand, site: str, rates: dict[str, float]) -> float:
    passes = demand.workload.data_passes_per_month
    return sum(d.size_gb * passes * rates[d.site] for d in demand.remote_datasets if d.site != site)


def greedy(inventory: Inventory) -> GreedyResult:
    pools: list[PoolInfo] = pool_infos(inventory)
    index = EligibilityIndex(inventory, pools)
    rates = {s.name: s.egress_usd_per_gb for s in inventory.sites}
    free = {p.index: p.capacity_gpus for p in pools}
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}
    order = sorted(demands(inventory), key=lambda d: (rank[d.tier], -d.gpu_count * d.replicas, d.key))
    compute = data = 0.0
    unplaced_demands = unplaced_replicas = 0
    for demand in order:
        eligible = [pools[p] for p in index.eligible(demand)]
        domains = {p.domain for p in eligible}
        spread = min(inventory.policies.spread_fixed_across, demand.replicas, len(domains)) \
            if demand.tier is Tier.FIXED else 1
        per_domain_cap = demand.replicas - spread + 1
        ceiling = demand.workload.max_usd_per_month
        sites: set[str] = set()
        in_domain: dict[str, int] = defaultdict(int)
        spent = 0.0
        placed = 0
        for _ in range(demand.replicas):
            best: tuple[float, int] | None = None
            for pool in eligible:
                if free[pool.index] < demand.gpu_count or in_domain[pool.domain] >= per_domain_cap:
                    continue
                extra = 0.0 if pool.site.name in sites else _egress(demand, pool.site.name, rates)
                cost = demand.usd_per_replica(pool) + extra
                if ceiling is not None and spent + cost > ceiling + 1e-9:
                    continue
                if best is None or (cost, pool.index) < best:
                    best = (cost, pool.index)
            if best is None:
                break
            pool = pools[best[1]]
            free[pool.index] -= demand.gpu_count
            in_domain[pool.domain] += 1
            replica = demand.usd_per_replica(pool)
            compute += replica
            data += best[0] - replica
            spent += best[0]
            sites.add(pool.site.name)
            placed += 1
        if placed < demand.replicas:
            unplaced_demands += 1
            unplaced_replicas += demand.replicas - placed
    return GreedyResult(compute, data, unplaced_demands, unplaced_replicas)
