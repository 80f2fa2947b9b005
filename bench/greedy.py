"""A greedy placement, the baseline the planner is measured against.

Fixed tier first, then burst, then opportunistic; within a tier the larger demands first.
Each replica goes to the eligible pool with room where it adds the least to the bill under
the inventory's cost model, counting the data movement a new site would add: under cash
(the default) a committed pool adds nothing (it is paid anyway), an always-on replica in a
pay-per-use pool adds a whole machine only when the machines already bought are full, and any
other replica pays its own whole machines; ties go to the lower amortized price. It respects
capacity (whole machines in pay-per-use pools), the workload's failure-domain spread (no
domain holds more than R - k + 1 of its replicas) and cost ceilings. This is what a careful
person with a spreadsheet would do, and what the planner must beat.

The result is priced as the plan is, by the core's own pricing (pricing/, data_movements):
committed pools as a constant, pay-per-use pools in whole machines, data once per site.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS, CostModel, Inventory
from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo, demands, pool_infos
from hybridctl.core.placement.movements import data_movements
from hybridctl.core.placement.tiers import TIER_ORDER
from hybridctl.core.plan.model import Placement
from hybridctl.core.pricing.pools import pool_usage
from hybridctl.core.pricing.rates import (
    egress_rates,
    is_always_on,
    machines_usd_per_month,
    read_usd_per_month,
    replica_cash_usd_per_month,
    replica_usd_per_month,
    whole_machines,
)


@dataclass(frozen=True)
class GreedyResult:
    compute_usd: float  # under the cost model: committed constant plus pay-per-use machines (cash)
    data_usd: float
    unplaced_demands: int
    unplaced_replicas: int

    @property
    def total_usd(self) -> float:
        return self.compute_usd + self.data_usd


def _egress(demand: Demand, site: str, rates: dict[str, float]) -> float:
    passes = demand.workload.data_passes_per_month
    return sum(read_usd_per_month(d, site, passes, rates) for d in demand.remote_datasets)


class _Pools:
    """Room and the machines bought so far, per pool."""

    def __init__(self, pools: list[PoolInfo], cash: bool) -> None:
        self.pools = pools
        self.cash = cash
        self.free_gpus = {p.index: p.capacity_gpus for p in pools}  # committed pools
        self.free_machines = {p.index: p.capacity_gpus // p.gpus_per_node for p in pools}  # pay-per-use
        self.spare_gpus: dict[int, int] = defaultdict(int)  # room left on always-on machines bought

    def added_cash(self, demand: Demand, pool: PoolInfo) -> float | None:
        """What one more replica adds to the bill, or None when it does not fit."""
        if pool.committed:
            return 0.0 if self.free_gpus[pool.index] >= demand.gpu_count else None
        per_node = pool.gpus_per_node
        if is_always_on(demand.hours):
            short = max(0, demand.gpu_count - self.spare_gpus[pool.index])
            machines = whole_machines(short, per_node)
            if machines > self.free_machines[pool.index]:
                return None
            return machines_usd_per_month(pool, machines, DEFAULT_REALTIME_HOURS) if self.cash else \
                replica_usd_per_month(demand, pool)
        machines = whole_machines(demand.gpu_count, per_node)
        if machines > self.free_machines[pool.index]:
            return None
        return replica_cash_usd_per_month(demand, pool) if self.cash else replica_usd_per_month(demand, pool)

    def take(self, demand: Demand, pool: PoolInfo) -> None:
        if pool.committed:
            self.free_gpus[pool.index] -= demand.gpu_count
            return
        per_node = pool.gpus_per_node
        if is_always_on(demand.hours):
            short = max(0, demand.gpu_count - self.spare_gpus[pool.index])
            machines = whole_machines(short, per_node)
            self.free_machines[pool.index] -= machines
            self.spare_gpus[pool.index] += machines * per_node - demand.gpu_count
        else:
            self.free_machines[pool.index] -= whole_machines(demand.gpu_count, per_node)


def greedy(inventory: Inventory) -> GreedyResult:
    pools: list[PoolInfo] = pool_infos(inventory)
    index = EligibilityIndex(inventory, pools)
    rates = egress_rates(inventory.sites)
    cash = inventory.policies.cost_model is CostModel.CASH
    room = _Pools(pools, cash)
    rank = {tier: i for i, tier in enumerate(TIER_ORDER)}
    all_demands = demands(inventory)
    order = sorted(all_demands, key=lambda d: (rank[d.tier], -d.gpu_count * d.replicas, d.key))
    placements: list[Placement] = []
    unplaced_demands = unplaced_replicas = 0
    for demand in order:
        eligible = [pools[p] for p in index.eligible(demand)]
        domains = {p.domain for p in eligible}
        spread = min(demand.spread, demand.replicas, len(domains))
        per_domain_cap = demand.replicas - spread + 1
        ceiling = demand.workload.max_usd_per_month
        sites: set[str] = set()
        in_domain: dict[str, int] = defaultdict(int)
        in_pool: dict[int, int] = defaultdict(int)
        spent = 0.0
        placed = 0
        for _ in range(demand.replicas):
            best: tuple[float, float, int] | None = None
            for pool in eligible:
                if in_domain[pool.domain] >= per_domain_cap:
                    continue
                added = room.added_cash(demand, pool)
                if added is None:
                    continue
                extra = 0.0 if pool.site.name in sites else _egress(demand, pool.site.name, rates)
                amortized = replica_usd_per_month(demand, pool)
                if ceiling is not None and spent + amortized + extra > ceiling + 1e-9:
                    continue
                key = (added + extra, amortized, pool.index)
                if best is None or key < best:
                    best = key
            if best is None:
                break
            pool = pools[best[2]]
            room.take(demand, pool)
            in_domain[pool.domain] += 1
            in_pool[pool.index] += 1
            spent += best[1] + (0.0 if pool.site.name in sites else _egress(demand, pool.site.name, rates))
            sites.add(pool.site.name)
            placed += 1
        for p, n in sorted(in_pool.items()):
            placements.append(Placement(demand.workload.name, demand.tier.value, pools[p].site.name, pools[p].name, n,
                                        n * demand.gpu_count, n * replica_usd_per_month(demand, pools[p]),
                                        demand=demand.key, gpus_per_replica=demand.gpu_count,
                                        hours_per_month=demand.hours))
        if placed < demand.replicas:
            unplaced_demands += 1
            unplaced_replicas += demand.replicas - placed
    data = sum(m.usd_per_month for m in data_movements(inventory, all_demands, placements))
    if cash:
        compute = sum(u.usd_per_month for u in pool_usage(pools, placements))
    else:
        compute = sum(p.usd_per_month for p in placements)
    return GreedyResult(compute, data, unplaced_demands, unplaced_replicas)
