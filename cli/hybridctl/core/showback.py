"""Showback: monthly cost of a plan broken down by tier, workload type, site, pool or workload."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from enum import StrEnum

from hybridctl.core.plan.model import Plan


class CostDimension(StrEnum):
    tier = "tier"
    type = "type"
    site = "site"
    pool = "pool"
    workload = "workload"
    capacity_type = "capacity_type"


@dataclass(frozen=True)
class CostLine:
    key: str
    gpus: int
    compute_usd_per_month: float
    data_usd_per_month: float

    @property
    def total_usd_per_month(self) -> float:
        return round(self.compute_usd_per_month + self.data_usd_per_month, 2)


def showback(plan: Plan, by: CostDimension) -> list[CostLine]:
    """Cost lines sorted by total, dearest first. Data movement is charged to the receiving site's pool."""
    capacity_type = {p.pool: p.capacity_type for p in plan.pools}
    compute: dict[str, float] = defaultdict(float)
    data: dict[str, float] = defaultdict(float)
    gpus: dict[str, int] = defaultdict(int)

    def key_of(workload: str, site: str, pool: str, tier: str) -> str:
        return {
            CostDimension.tier: tier,
            CostDimension.type: plan.workload_types.get(workload, "?"),
            CostDimension.site: site,
            CostDimension.pool: pool,
            CostDimension.workload: workload,
            CostDimension.capacity_type: capacity_type.get(pool, "?"),
        }[by]

    first_pool_at: dict[tuple[str, str], str] = {}
    for p in plan.placements:
        key = key_of(p.workload, p.site, p.pool, p.tier)
        compute[key] += p.usd_per_month
        gpus[key] += p.gpus
        first_pool_at.setdefault((p.workload, p.site), p.pool)
    for m in plan.data_movements:
        pool = first_pool_at.get((m.workload, m.to_site), "")
        data[key_of(m.workload, m.to_site, pool, plan.tiers.get(m.workload, "?"))] += m.usd_per_month
    lines = [CostLine(k, gpus.get(k, 0), round(compute.get(k, 0.0), 2), round(data.get(k, 0.0), 2))
             for k in set(compute) | set(data)]
    return sorted(lines, key=lambda line: (-line.total_usd_per_month, line.key))
