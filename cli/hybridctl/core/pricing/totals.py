"""A plan's totals, each workload's cost, and the change in cost between two plans.

Read from the plan's own figures (placements, data movements, pools), which rates.py and pools.py
priced: a plan file is totalled without the planner. Every total is rounded to the cent once, from
the unrounded sum, in the plan's order.

Under `cost_model: cash` a plan's total is its cash: committed pools (paid whether used or not) +
pay-per-use machines + data movement. Under `amortized` it is the amortized compute + data movement.
The idle committed cost is the committed cost less the amortized compute placed in committed pools.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from operator import attrgetter

from hybridctl.core.pricing.priced import PricedPart, PricedPlan

_USD = attrgetter("usd_per_month")


def compute_usd_per_month(placements: Iterable[PricedPart]) -> float:
    """The placements' amortized compute (their recorded costs, summed in order)."""
    usd: float = sum(map(_USD, placements))  # without a Python step per placement of a fleet
    return round(usd, 2)


def data_usd_per_month(movements: Iterable[PricedPart]) -> float:
    """The data movements' cost."""
    usd: float = sum(map(_USD, movements))
    return round(usd, 2)


def committed_usd_per_month(plan: PricedPlan) -> float:
    """Committed pools, paid whether used or not."""
    return round(sum(p.usd_per_month for p in plan.pools if p.committed), 2)


def pay_per_use_usd_per_month(plan: PricedPlan) -> float:
    """Pay-per-use pools' whole machines."""
    return round(sum(p.usd_per_month for p in plan.pools if not p.committed), 2)


def idle_committed_usd_per_month(plan: PricedPlan) -> float:
    """Committed cost less the amortized compute of the replicas placed in committed pools."""
    used = sum(p.amortized_usd_per_month for p in plan.pools if p.committed)
    return round(committed_usd_per_month(plan) - used, 2)


def cash_usd_per_month(plan: PricedPlan) -> float:
    """The month's cash: committed + pay-per-use + data, whatever the cost model."""
    return round(committed_usd_per_month(plan) + pay_per_use_usd_per_month(plan) + plan.data_usd_per_month, 2)


def total_usd_per_month(plan: PricedPlan) -> float:
    """The month's total under the plan's cost model (cash: committed + pay-per-use + data)."""
    if plan.cost_model == "cash":
        return cash_usd_per_month(plan)
    return round(plan.compute_usd_per_month + plan.data_usd_per_month, 2)


def cost_change(before_usd_per_month: float, after_usd_per_month: float) -> float:
    """The change from one monthly cost to another, to the cent (positive: dearer)."""
    return round(after_usd_per_month - before_usd_per_month, 2)


def usd_by_workload(placements: Iterable[PricedPart], movements: Iterable[PricedPart]) -> dict[str, float]:
    """Each workload's cost: its placements' compute, then its data movements, summed in order."""
    usd: dict[str, float] = defaultdict(float)
    for p in placements:
        usd[p.workload] += p.usd_per_month
    for m in movements:
        usd[m.workload] += m.usd_per_month
    return dict(usd)
