"""The report's section for finance: the budget and its headroom, where each price comes from and when
it was read, what each tier means, what is paid for and idle (committed and pay-per-use), and what each
drill scenario would change in cash. Figures come from the plan (pricing/) and the drill file; this
module only gathers and words them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.plan.model import Plan, PoolUsage
from hybridctl.core.pricing.shares import idle_machines
from hybridctl.render.plan_summary import idle_machines_text, usd

# what a tier means to whoever pays for it (the spec's Tiers: capacity types each tier may use)
TIER_MEANINGS = (
    ("fixed", "must always run (realtime serving, always-on work): placed first, on owned, reserved or "
              "on-demand capacity, never spot; a failover moves it before anything else"),
    ("burst", "runs in its hours (training, evaluation): owned, reserved or on-demand capacity, never spot"),
    ("opportunistic", "runs on what is left (experiments, batch): owned or reserved capacity, spot when it "
                      "checkpoints, on-demand only where the inventory allows it; shed first when capacity runs out"),
)
_PRICE_MATCH = 1e-4  # $/GPU-h: a pool priced at the catalog's list price to this


@dataclass(frozen=True)
class PriceSource:
    site: str
    pool: str
    gpu: str
    capacity_type: str
    usd_per_gpu_hour: float
    source: str


@dataclass(frozen=True)
class BudgetView:
    budget_usd_per_month: float | None
    total_usd_per_month: float

    @property
    def headroom_usd_per_month(self) -> float | None:
        return None if self.budget_usd_per_month is None else round(self.budget_usd_per_month
                                                                    - self.total_usd_per_month, 2)

    @property
    def used_share(self) -> float | None:
        budget = self.budget_usd_per_month
        return None if not budget else self.total_usd_per_month / budget


@dataclass(frozen=True)
class FinanceView:
    planned_on: str  # the plan's date (its file's), ISO
    budget: BudgetView
    prices: tuple[PriceSource, ...]
    catalog_read_on: str  # the dates of the catalog's list prices the plan uses, or ""
    idle_committed_gpus: int
    idle_committed_usd_per_month: float
    idle_pay_per_use: tuple[str, ...]  # the idle pay-per-use machines, worded, dearest first
    idle_pay_per_use_usd_per_month: float
    tiers: tuple[tuple[str, str], ...]


def _price_source(pool: PoolUsage) -> tuple[str, str]:
    """(words, catalog date or "") for a pool's price: the plan's note on a catalog list price
    (PoolUsage.price_source), else the inventory's own usd_per_gpu_hour."""
    if not pool.price_source:
        owned = pool.committed and pool.capacity_type != "reserved"
        return "the inventory's usd_per_gpu_hour" + (" (owned hardware, amortized)" if owned else ""), ""
    for instance in catalog().instances.values():  # the date the list price was read, for the summary line
        if instance.gpu == pool.gpu and instance.gpus_per_node == pool.gpus_per_node and abs(
                instance.usd_per_hour / instance.gpus_per_node - pool.usd_per_gpu_hour) < _PRICE_MATCH:
            return pool.price_source, instance.price_read_on.isoformat()
    return pool.price_source, ""


def finance_view(plan: Plan, planned_on: str) -> FinanceView:
    prices: list[PriceSource] = []
    read_on: set[str] = set()
    for p in sorted(plan.pools, key=lambda p: (p.site, p.pool)):
        words, day = _price_source(p)
        if day:
            read_on.add(day)
        prices.append(PriceSource(p.site, p.pool, p.gpu, p.capacity_type, p.usd_per_gpu_hour, words))
    idle = idle_machines(plan)
    return FinanceView(
        planned_on, BudgetView(plan.budget_usd_per_month, plan.total_usd_per_month), tuple(prices),
        ", ".join(sorted(read_on)),
        sum(p.capacity_gpus - p.used_gpus for p in plan.pools if p.committed), plan.idle_committed_usd_per_month,
        tuple(idle_machines_text(m) for m in idle if m.idle_usd_per_month >= 0.005),
        round(sum(m.idle_usd_per_month for m in idle), 2), TIER_MEANINGS)


def tiers_used(plan: Plan, meanings: Sequence[tuple[str, str]] = TIER_MEANINGS) -> tuple[tuple[str, str, int], ...]:
    """(tier, meaning, workloads) for the tiers the plan's workloads have."""
    counts = {tier: sum(1 for t in plan.tiers.values() if t == tier) for tier, _ in meanings}
    return tuple((tier, meaning, counts[tier]) for tier, meaning in meanings if counts[tier])


def budget_text(view: BudgetView) -> str:
    if view.budget_usd_per_month is None:
        return "no monthly budget set (policies.monthly_budget_usd)"
    headroom = view.headroom_usd_per_month or 0.0
    share = view.used_share
    used = f"{share:.0%} used" if share is not None else "used"
    if headroom < 0:
        return f"{usd(view.total_usd_per_month)} of {usd(view.budget_usd_per_month)}: OVER BUDGET by {usd(-headroom)}"
    return f"{usd(view.total_usd_per_month)} of {usd(view.budget_usd_per_month)} ({used}); headroom {usd(headroom)}/month"
