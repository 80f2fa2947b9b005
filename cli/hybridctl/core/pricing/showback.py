"""Showback: monthly cost of a plan broken down by tier, workload type, site, pool, workload,
capacity type or team, allocating every dollar of the plan's total (the spec's Showback).

Each workload is charged its compute at its pools' rates (gpu.count × hours × usd_per_gpu_hour), the
data movement it causes (charged to the receiving site) and, under the cash cost model, the rounding of
the pay-per-use machines it runs on, carried by the replicas that leave them part-empty (shares.py). The idle committed
cost (what committed pools cost beyond the compute placed in them) is a line of its own,
IDLE_COMMITTED, owned by no workload. The lines are rounded together (cents.py), so every view adds
up to the plan's total to the cent.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.cents import allocate_cents, to_cents
from hybridctl.core.pricing.shares import placement_shares, placement_splits
from hybridctl.core.week.usage import peak_gpus

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
    # GPUs: its placements' (in a timed plan the most they hold at once); the idle committed line's, the committed
    # GPUs no placement holds. Neither adds up across lines in a timed plan: work takes turns on the same GPUs.
    gpus: int
    compute_usd_per_month: float  # compute at the pools' rates, plus its share of machine rounding under cash
    data_usd_per_month: float
    idle_usd_per_month: float = 0.0  # of the compute: pay-per-use machine rounding (idle GPUs) it carries
    # GPU-hours a month: its placements' (replicas x GPUs x hours, rework included: what the compute prices); the
    # idle committed line's, the committed GPU-hours no placement uses (what its dollars pay for). They add up
    # across lines and views to the plan's GPU-hours, as the dollars do.
    gpu_hours_per_month: float = 0.0

    @property
    def total_usd_per_month(self) -> float:
        return round(self.compute_usd_per_month + self.data_usd_per_month, 2)


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
    """Cost lines sorted by total, dearest first; they add up to the plan's total to the cent."""
    key_of = _keys(plan, by)
    total: dict[str, float] = defaultdict(float)
    data: dict[str, float] = defaultdict(float)
    idle: dict[str, float] = defaultdict(float)
    gpus: dict[str, int] = defaultdict(int)
    gpu_hours: dict[str, float] = defaultdict(float)
    placed_gpu_hours = 0.0  # summed in the plan's order, the same in every view
    first_pool_at: dict[tuple[str, str], str] = {}
    for p, (share, idle_part) in zip(plan.placements, placement_splits(plan), strict=True):
        key = key_of(p.workload, p.site, p.pool, p.tier)
        total[key] += share
        idle[key] += idle_part
        gpus[key] += p.gpus
        gpu_hours[key] += p.gpus * p.hours_per_month
        placed_gpu_hours += p.gpus * p.hours_per_month
        first_pool_at.setdefault((p.workload, p.site), p.pool)
    for m in plan.data_movements:
        pool = first_pool_at.get((m.workload, m.to_site), "")
        key = key_of(m.workload, m.to_site, pool, plan.tiers.get(m.workload, "?"))
        data[key] += m.usd_per_month
        total[key] += m.usd_per_month
    if plan.segments:  # a timed plan's lines hold at once the most GPUs of any segment, as its pools do
        gpus = defaultdict(int, peak_gpus(plan.placements, [s.hours for s in plan.segments],
                                          lambda p: key_of(p.workload, p.site, p.pool, p.tier)))
    if plan.cost_model == "cash" and any(p.committed for p in plan.pools):
        total[IDLE_COMMITTED] = sum(p.usd_per_month - p.amortized_usd_per_month for p in plan.pools if p.committed)
        gpus[IDLE_COMMITTED] = sum(p.capacity_gpus - p.used_gpus for p in plan.pools if p.committed)
        gpu_hours[IDLE_COMMITTED] = idle_committed_gpu_hours(plan)
    total_cents = allocate_cents(total, to_cents(plan.total_usd_per_month))
    # GPU-hours in hundredths, rounded together as the dollars are: every view adds up to the same total
    hours = allocate_cents(gpu_hours, to_cents(placed_gpu_hours + gpu_hours.get(IDLE_COMMITTED, 0.0)))
    data_cents = allocate_cents(data, to_cents(plan.data_usd_per_month))
    lines = [CostLine(k, gpus.get(k, 0), (total_cents[k] - data_cents.get(k, 0)) / 100, data_cents.get(k, 0) / 100,
                      round(idle.get(k, 0.0), 2), hours.get(k, 0) / 100) for k in total_cents]
    return sorted(lines, key=lambda line: (-line.total_usd_per_month, line.key))


def idle_committed_gpu_hours(plan: Plan) -> float:
    """The committed pools' GPU-hours a month no placement uses: capacity x 730 less the GPU-hours placed there (the
    hours part-time work leaves included), what the idle committed dollars pay for."""
    from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS  # here: `--help` imports this module

    committed = {p.pool: float(p.capacity_gpus * DEFAULT_REALTIME_HOURS) for p in plan.pools if p.committed}
    for pl in plan.placements:
        if pl.pool in committed:
            committed[pl.pool] -= pl.gpus * pl.hours_per_month
    return sum(max(hours, 0.0) for hours in committed.values())


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


@dataclass(frozen=True)
class PlacementCosts:
    """The placements table's cost column and what closes it to the total: each placement's showback (its
    compute and the machine rounding it carries), the data movement and the idle committed cost, in cents
    that add up to the plan's total."""

    placements: tuple[float, ...]  # in the plan's order
    data_usd_per_month: float
    idle_committed_usd_per_month: float
    total_usd_per_month: float


def placement_costs(plan: Plan) -> PlacementCosts:
    """Each placement's cost as showback charges it, rounded with the other lines to the plan's total."""
    idle = (sum(p.usd_per_month - p.amortized_usd_per_month for p in plan.pools if p.committed)
            if plan.cost_model == "cash" else 0.0)
    amounts: dict[int | str, float] = dict(enumerate(placement_shares(plan)))
    amounts["data"], amounts["idle"] = plan.data_usd_per_month, idle
    cents = allocate_cents(amounts, to_cents(plan.total_usd_per_month))
    return PlacementCosts(tuple(cents[i] / 100 for i in range(len(plan.placements))), cents["data"] / 100,
                          cents["idle"] / 100, plan.total_usd_per_month)


def showback_document(plan: Plan) -> dict[str, object]:
    """The plan's showback by workload as JSON (plan --format json): the lines add up to the total."""
    return {"by": CostDimension.workload.value, "total_usd_per_month": plan.total_usd_per_month,
            "lines": [{"workload": line.key, "gpus": line.gpus, "gpu_hours_per_month": line.gpu_hours_per_month,
                        "compute_usd_per_month": line.compute_usd_per_month,
                       "idle_pay_per_use_usd_per_month": line.idle_usd_per_month,
                       "data_usd_per_month": line.data_usd_per_month, "total_usd_per_month": line.total_usd_per_month}
                      for line in showback(plan, CostDimension.workload)]}
