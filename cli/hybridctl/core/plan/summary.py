"""What a plan means at a glance: its total and the parts of it, the change, what is left out.

One place gathers these figures (pricing/totals.py works them out), so that the text plan, the
markdown comment and the HTML report never disagree. Plans made before inventory revision 2 carry only compute and data;
revision-2 plans also carry the committed, pay-per-use and idle committed parts
(`cost_parts` reads them when they are there).
"""

from __future__ import annotations

from dataclasses import dataclass

from hybridctl.core.plan.diff import PlanDiff
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.totals import cost_change

# Below a cent, two figures are the same figure.
_CENT = 0.005


@dataclass(frozen=True)
class CostParts:
    """The month's total and what it is made of."""

    total_usd_per_month: float  # under the plan's cost model
    cost_model: str  # cash | amortized
    committed_usd_per_month: float  # owned and reserved pools, used or not
    pay_per_use_usd_per_month: float  # on-demand and spot machines, whole machines
    data_usd_per_month: float
    idle_committed_usd_per_month: float  # committed cost no replica uses (part of the committed cost)
    compute_usd_per_month: float  # amortized compute of the placed replicas
    cash_usd_per_month: float  # committed + pay-per-use + data, whatever the cost model

    @property
    def split_by_commitment(self) -> bool:
        """Under cash the total is committed + pay-per-use + data; under amortized, compute + data."""
        return self.cost_model == "cash"


def cost_parts(plan: Plan) -> CostParts:
    """The one place that says what a plan's total is made of."""
    return CostParts(
        total_usd_per_month=plan.total_usd_per_month,
        cost_model=plan.cost_model,
        committed_usd_per_month=plan.committed_usd_per_month,
        pay_per_use_usd_per_month=plan.pay_per_use_usd_per_month,
        data_usd_per_month=plan.data_usd_per_month,
        idle_committed_usd_per_month=plan.idle_committed_usd_per_month,
        compute_usd_per_month=plan.compute_usd_per_month,
        cash_usd_per_month=plan.cash_usd_per_month,
    )


@dataclass(frozen=True)
class ObjectiveNote:
    """Why the solver's objective differs from the total, part by part (both in USD/month)."""

    objective_usd: float
    unplaced_penalty_usd: float  # the price put on replicas left unplaced: not money anyone pays
    other_usd: float  # the stability term against --previous and tie-breaks: not money either

    @property
    def differs(self) -> bool:
        return abs(self.unplaced_penalty_usd) > _CENT or abs(self.other_usd) > _CENT

    def describe(self) -> str:
        """'objective $X = total + …': what the solver minimized, term by term."""
        terms = ["total"]
        if abs(self.unplaced_penalty_usd) > _CENT:
            terms.append(f"${self.unplaced_penalty_usd:,.2f} priced on unplaced replicas")
        if abs(self.other_usd) > _CENT:
            terms.append(f"${self.other_usd:,.2f} of stability and tie-break terms")
        text = f"objective ${self.objective_usd:,.2f} = " + " + ".join(terms)
        return text + (" (what the solver minimized, not a cost)" if self.differs else "")


def objective_note(plan: Plan) -> ObjectiveNote:
    s = plan.solver
    other = s.objective - plan.total_usd_per_month - s.penalty_usd
    return ObjectiveNote(s.objective, s.penalty_usd, round(other, 2))


@dataclass(frozen=True)
class PlanSummary:
    workloads: int
    placed_workloads: int
    unplaced_workloads: int
    unplaced_replicas: int
    gpus_placed: int
    sites_used: int
    pools_used: int
    pools: int
    gpus_capacity: int
    costs: CostParts
    budget_usd_per_month: float | None
    baseline: str  # "previous" | "applied" | "": what the change is measured against
    change_usd_per_month: float | None
    diff: PlanDiff | None
    over_budget: bool  # Plan.over_budget


def summarize(plan: Plan, diff: PlanDiff | None = None, baseline: str = "") -> PlanSummary:
    """The figures of a plan's summary; `diff` is against `baseline` ("previous" or "applied")."""
    placed = {p.workload for p in plan.placements if p.replicas > 0}
    unplaced = {u.workload for u in plan.unplaced}
    known = set(plan.tiers) | placed | unplaced
    return PlanSummary(
        workloads=len(known),
        placed_workloads=len(placed),
        unplaced_workloads=len(unplaced),
        unplaced_replicas=sum(u.replicas for u in plan.unplaced),
        gpus_placed=sum(p.gpus for p in plan.placements),
        sites_used=len({p.site for p in plan.placements if p.replicas > 0}),
        pools_used=sum(1 for p in plan.pools if p.used_gpus > 0),
        pools=len(plan.pools),
        gpus_capacity=sum(p.capacity_gpus for p in plan.pools),
        costs=cost_parts(plan),
        budget_usd_per_month=plan.budget_usd_per_month,
        baseline=baseline if diff is not None else "",
        change_usd_per_month=(cost_change(diff.usd_per_month_before, diff.usd_per_month_after)
                              if diff is not None else None),
        diff=diff,
        over_budget=plan.over_budget,
    )
