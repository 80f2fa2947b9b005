"""Showback: monthly cost of a plan broken down by tier, workload type, site, pool, workload,
capacity type or team, allocating every dollar of the plan's total.

Each workload is charged its amortized compute (gpu.count × hours × usd_per_gpu_hour) and the
data movement it causes, charged to the receiving site. Under the cash cost model two more
amounts make up the total: a pay-per-use pool's machine rounding (its whole machines cost more
than the GPU-hours used) is shared among the workloads in that pool in proportion to their
amortized compute, and the idle committed cost (what committed pools cost beyond the compute
placed in them) is a line of its own, IDLE_COMMITTED, owned by no workload.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.pricing.totals import idle_committed_usd_per_month

IDLE_COMMITTED = "(idle committed)"
NO_TEAM = "(no team)"


class CostDimension(StrEnum):
    tier = "tier"
    type = "type"
    site = "site"
    pool = "pool"
    workload = "workload"
    capacity_type = "capacity_type"
    team = "team"


@dataclass(frozen=True)
class CostLine:
    key: str
    gpus: int
    compute_usd_per_month: float  # amortized compute, plus the share of machine rounding under cash
    data_usd_per_month: float

    @property
    def total_usd_per_month(self) -> float:
        return round(self.compute_usd_per_month + self.data_usd_per_month, 2)


def _rounding_share(plan: Plan) -> dict[str, float]:
    """Per pay-per-use pool: the machine cost beyond the amortized compute, per dollar of it."""
    if plan.cost_model != "cash":
        return {}
    share: dict[str, float] = {}
    for p in plan.pools:
        if not p.committed and p.amortized_usd_per_month > 0:
            share[p.pool] = (p.usd_per_month - p.amortized_usd_per_month) / p.amortized_usd_per_month
    return share


def _keys(plan: Plan, by: CostDimension) -> Callable[[str, str, str, str], str]:
    """The line a cost goes to, from its workload, site, pool and tier."""
    capacity_type = {p.pool: p.capacity_type for p in plan.pools}

    def key_of(workload: str, site: str, pool: str, tier: str) -> str:
        match by:
            case CostDimension.tier:
                return tier
            case CostDimension.type:
                return plan.workload_types.get(workload, "?")
            case CostDimension.site:
                return site
            case CostDimension.pool:
                return pool
            case CostDimension.workload:
                return workload
            case CostDimension.capacity_type:
                return capacity_type.get(pool, "?")
            case CostDimension.team:
                return plan.teams.get(workload) or NO_TEAM

    return key_of


def showback(plan: Plan, by: CostDimension) -> list[CostLine]:
    """Cost lines sorted by total, dearest first; they add up to the plan's total."""
    key_of = _keys(plan, by)
    rounding = _rounding_share(plan)
    compute: dict[str, float] = defaultdict(float)
    data: dict[str, float] = defaultdict(float)
    gpus: dict[str, int] = defaultdict(int)
    first_pool_at: dict[tuple[str, str], str] = {}
    for p in plan.placements:
        key = key_of(p.workload, p.site, p.pool, p.tier)
        compute[key] += p.usd_per_month * (1.0 + rounding.get(p.pool, 0.0))
        gpus[key] += p.gpus
        first_pool_at.setdefault((p.workload, p.site), p.pool)
    for m in plan.data_movements:
        pool = first_pool_at.get((m.workload, m.to_site), "")
        data[key_of(m.workload, m.to_site, pool, plan.tiers.get(m.workload, "?"))] += m.usd_per_month
    lines = [CostLine(k, gpus.get(k, 0), round(compute.get(k, 0.0), 2), round(data.get(k, 0.0), 2))
             for k in set(compute) | set(data)]
    if plan.cost_model == "cash" and any(p.committed for p in plan.pools):
        idle_gpus = sum(p.capacity_gpus - p.used_gpus for p in plan.pools if p.committed)
        lines.append(CostLine(IDLE_COMMITTED, idle_gpus, idle_committed_usd_per_month(plan), 0.0))
    return sorted(lines, key=lambda line: (-line.total_usd_per_month, line.key))


def committed_compute(plan: Plan, by: CostDimension) -> dict[str, float]:
    """Per showback line: the amortized compute of its placements in committed pools (the rest of its
    compute runs on pay-per-use machines)."""
    committed = {p.pool for p in plan.pools if p.committed}
    key_of = _keys(plan, by)
    in_committed: dict[str, float] = defaultdict(float)
    for p in plan.placements:
        if p.pool in committed:
            in_committed[key_of(p.workload, p.site, p.pool, p.tier)] += p.usd_per_month
    return dict(in_committed)
