"""Drills: tabletop failovers. Each scenario is a failover from the base plan (pipeline.py); nothing is executed.

Every scenario builds the full runbook, as `failover` would, and its rollback, as `runbook
rollback` would: a scenario whose runbooks cannot be built fails, since the operator would
meet that failure during the incident. The gate (the exit code CI acts on) also fails when a
fixed-tier workload would lose service, or would be back later than its `rto_minutes`.
Degrading to a fallback passes: that is what a fallback is for; so does an expected loss (a
workload with `survives_site_loss: false` whose site is lost). Scenarios are independent of
one another; each starts from the base plan.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from hybridctl.core.checker.check import PlacementMemo, check
from hybridctl.core.checker.verify import accepted
from hybridctl.core.deploy.steps import StepPlan
from hybridctl.core.failover.demand_cache import DemandCache
from hybridctl.core.failover.impact import Status, WorkloadImpact, impacts, plan_cash_by_workload
from hybridctl.core.failover.pipeline import failover
from hybridctl.core.failover.plan_steps import StepsFor, plain_steps
from hybridctl.core.failover.replan import FailoverOptions
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.runbook import applied_fingerprint
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.failover.worst import WorstSegment, worst_segment
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.placement.tiers import Tier
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.incident import CashChange, cash_change
from hybridctl.core.pricing.totals import cost_change


@dataclass(frozen=True)
class ScenarioResult:
    scenario: Scenario
    impacts: tuple[WorkloadImpact, ...]
    usd_per_month_before: float
    usd_per_month_after: float
    budget_problem: str | None
    solver_status: str
    seconds: float
    runbook_problem: str | None = None  # the failover runbook or its rollback cannot be built
    steps: int = 0  # in the failover runbook
    rollback_steps: int = 0
    committed_lost_gpus: int = 0  # committed capacity the scenario takes away, still paid (pricing/incident.py)
    committed_lost_usd_per_month: float = 0.0
    # the cash change per team (pricing/incident.py), adding up to usd_per_month_delta; teams with none left out
    usd_per_month_delta_by_team: tuple[tuple[str, float], ...] = ()
    over_budget_usd_per_month: float = 0.0  # the scenario's cash above the monthly budget (0: within it)
    worst_segment: WorstSegment | None = None  # of a timed plan's week: where most is lost (worst.py)
    # the cash change as pricing/incident.py splits it (extra spend, work stopped); None: only its total known
    cash: CashChange | None = None

    def with_status(self, *statuses: Status) -> list[WorkloadImpact]:
        return [i for i in self.impacts if i.status in statuses]

    @property
    def moved(self) -> list[WorkloadImpact]:
        return self.with_status(Status.MOVED, Status.STARTED)

    @property
    def degraded(self) -> list[WorkloadImpact]:
        return self.with_status(Status.DEGRADED)

    @property
    def lost(self) -> list[WorkloadImpact]:
        return self.with_status(Status.DOWN)

    @property
    def usd_per_month_delta(self) -> float:
        return cost_change(self.usd_per_month_before, self.usd_per_month_after)

    @property
    def work_stopped(self) -> Mapping[str, float]:
        """The work stopped: each workload down or left with fewer replicas, with the cash it no longer pays
        (incident.py)."""
        return self.cash.stopped if self.cash is not None else {}

    @property
    def stopped_usd_per_month(self) -> float:
        return self.cash.stopped_usd_per_month if self.cash is not None else 0.0

    @property
    def extra_usd_per_month(self) -> float:
        """The extra spend: with the work stopped, it adds up to usd_per_month_delta to the cent."""
        return self.cash.extra_usd_per_month if self.cash is not None else self.usd_per_month_delta

    @property
    def unlisted_usd_per_month_delta(self) -> float:
        """The cash change of workloads without an impact (they stay, sharing machines with work that moved, or
        reading data from elsewhere): with the impacts' changes it adds up to usd_per_month_delta."""
        listed = sum(round(i.usd_per_month_delta * 100) for i in self.impacts)
        return (round(self.usd_per_month_delta * 100) - listed) / 100

    @property
    def recovery_minutes(self) -> float:
        """The longest estimated time until every moved replica runs again."""
        return max((i.recovery_minutes for i in self.impacts if i.status is not Status.DOWN), default=0.0)

    @property
    def worst_outage_minutes(self) -> float | None:
        outages = [i.outage_minutes for i in self.impacts if i.outage_minutes is not None]
        return max(outages) if outages else None

    @property
    def rto_misses(self) -> list[WorkloadImpact]:
        return [i for i in self.impacts if i.meets_rto is False and not self.expected(i)]

    def expected(self, i: WorkloadImpact) -> bool:
        """A loss the inventory (survives_site_loss: false) or the scenario file (expect.losses) agreed to."""
        return i.expected_loss or (self.scenario.expect is not None and self.scenario.expect.allows_loss(i.workload))

    @property
    def unexpected_fixed_losses(self) -> list[WorkloadImpact]:
        return [i for i in self.impacts if i.tier == Tier.FIXED.value and i.loses_service and not self.expected(i)]

    @property
    def allowed_over_budget_usd_per_month(self) -> float | None:
        """What the scenario file allows over the budget; None: not stated (over budget warns, never fails)."""
        return self.scenario.expect.over_budget_usd_per_month if self.scenario.expect is not None else None

    @property
    def over_budget_fails(self) -> bool:
        allowed = self.allowed_over_budget_usd_per_month
        return allowed is not None and self.over_budget_usd_per_month > allowed + 0.005

    @property
    def gate_failures(self) -> list[str]:
        """Why this scenario fails the gate: fixed-tier service lost or recovery objective missed (unless
        expected), or more over budget than the scenario file allows."""
        failures: list[str] = [self.runbook_problem] if self.runbook_problem else []
        if self.over_budget_fails:
            failures.append(f"${self.over_budget_usd_per_month:,.2f}/month over budget, more than the "
                            f"${self.allowed_over_budget_usd_per_month:,.2f} its expectations allow")
        for i in self.impacts:
            if i.tier != Tier.FIXED.value or self.expected(i):
                continue
            if i.loses_service:
                failures.append(f"{i.workload} (fixed) loses service: {i.reason}")
            elif i.meets_rto is False:
                failures.append(f"{i.workload} (fixed) is back in ~{i.outage_minutes:g} min, over its "
                                f"rto_minutes {i.rto_minutes:g}")
        return failures

    @property
    def passed(self) -> bool:
        return not self.gate_failures


@dataclass(frozen=True)
class DrillReport:
    inventory: str
    base: Plan
    results: tuple[ScenarioResult, ...]
    seconds: float

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    @property
    def failed(self) -> list[ScenarioResult]:
        return [r for r in self.results if not r.passed]


def run_scenario(inventory: Inventory, base: Plan, scenario: Scenario, options: FailoverOptions,
                 run: FailoverRun | None = None) -> ScenarioResult:
    """One scenario: its failover from the base plan (pipeline.py) with the runbook's rollback (built, never run),
    and what they mean. `run`: the drill's (default: the scenario's own).
    """
    started = time.perf_counter()
    run = run or FailoverRun()
    # the base plan is made from (or checked against) this inventory: its digest is the inventory's
    made = failover(inventory, base, scenario.events, options, run, digest=base.inventory_digest or None,
                    with_rollback=True, checked_as=f"replan of scenario {scenario.name}")  # a bug if it is rejected
    result, runbook, back = made.replan, made.runbook, made.rollback
    problem = None if made.unbuildable is None else f"its runbook cannot be built: {made.unbuildable}"
    counts = (len(runbook.steps), len(back.steps)) if runbook is not None and back is not None else (0, 0)
    # cash: the committed capacity the scenario loses is still paid (incident.py)
    cash = cash_change(base, result.after, plan_cash_by_workload(base, run.memo),
                       plan_cash_by_workload(result.after, run.memo))
    return ScenarioResult(
        scenario=scenario,
        impacts=runbook.impacts if runbook is not None else tuple(impacts(inventory, result, run_memo=run.memo)),
        usd_per_month_before=cash.before_usd_per_month,
        usd_per_month_after=cash.after_usd_per_month,
        budget_problem=_over_budget(base, cash.after_usd_per_month),
        solver_status=result.after.solver.status,
        seconds=round(time.perf_counter() - started, 3),
        runbook_problem=problem, steps=counts[0], rollback_steps=counts[1],
        committed_lost_gpus=cash.lost_gpus, committed_lost_usd_per_month=cash.lost_usd_per_month,
        usd_per_month_delta_by_team=tuple(cash.by_team(base.teams).items()),
        over_budget_usd_per_month=_over_by(base, cash.after_usd_per_month),
        worst_segment=worst_segment(base, result.after),
        cash=cash,
    )


def _over_by(base: Plan, cash_usd_per_month: float) -> float:
    budget = base.budget_usd_per_month
    return max(0.0, round(cash_usd_per_month - budget, 2)) if budget is not None else 0.0


def _over_budget(base: Plan, cash_usd_per_month: float) -> str | None:
    """The budget rule (planner.budget_violation) on a scenario's cash, its lost committed capacity still paid."""
    budget = base.budget_usd_per_month
    if budget is not None and cash_usd_per_month > budget + 0.005:
        return (f"the scenario's plan costs ${cash_usd_per_month:,.2f}/month in cash (lost committed capacity still "
                f"paid), over the monthly budget of ${budget:,.2f} (policies.monthly_budget_usd)")
    return None


ScenarioMapper = Callable[[Callable[[Scenario], ScenarioResult], Sequence[Scenario]], Iterable[ScenarioResult]]


def drill(inventory: Inventory, base: Plan, scenarios: Sequence[Scenario], options: FailoverOptions | None = None,
          on_result: Callable[[ScenarioResult], None] | None = None,
          map_scenarios: ScenarioMapper | None = None, memo: RunMemo | None = None) -> DrillReport:
    """Replan every scenario from `base`; `on_result` sees each result as it is ready (progress).

    `map_scenarios` runs the scenarios (default: one after the other, here); the command layer
    may pass one that spreads them over processes. Results come back in scenario order.
    `memo`: the run's (the operation's; default: the drill's own). The scenarios share it in one FailoverRun with
    a DemandCache, the base plan's check and its steps: all filled with what the base inventory and plan
    give before the scenarios run, so a worker process forked for them has it.
    """
    options = options or FailoverOptions()
    started = time.perf_counter()
    memo = RunMemo() if memo is None else memo
    cache = DemandCache()
    # filled before the scenarios run (and before any worker forks): the demands and tiers, and the data
    # movements of the base plan's placements, which every scenario's replan keeps for most work
    cache.movements.movements(inventory, cache.demands(inventory), base.placements, like=base.data_movements)
    cache.tiers(inventory, cache.demands(inventory))
    # the base plan, checked once here: every scenario's plan keeps most of it, and is checked where it differs
    check_memo = PlacementMemo()
    base_check = check(inventory, base, check_memo, memo)
    accepted(base, base_check.problems, "base plan of the drill")
    shared = FailoverRun(memo, _base_once(base, plain_steps(inventory, memo)), cache, base_check, check_memo,
                         applied_fingerprint(base))
    scenario_of = functools.partial(run_scenario, inventory, base, options=options, run=shared)
    results: list[ScenarioResult] = []
    for result in (map_scenarios or map)(scenario_of, scenarios):
        results.append(result)
        if on_result is not None:
            on_result(result)
    return DrillReport(inventory.name, base, tuple(results), round(time.perf_counter() - started, 3))


def _base_once(base: Plan, steps_for: StepsFor) -> StepsFor:
    """Every scenario's runbook starts from the base plan: build the base plan's steps once for all."""
    base_steps = steps_for(base)

    def build(plan: Plan) -> StepPlan:
        return base_steps if plan is base else steps_for(plan)

    return build
