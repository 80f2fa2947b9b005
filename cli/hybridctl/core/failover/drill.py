"""Drills: tabletop failovers. Each scenario is replanned from the base plan and nothing is executed.

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
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hybridctl.core.deploy.steps import StepGraphError, StepPlan
from hybridctl.core.failover.demand_cache import DemandCache
from hybridctl.core.failover.failover import (
    StepsFor,
    failover_runbook,
    plain_steps,
    plan_rollback,
    returning_sites,
    steps_once,
)
from hybridctl.core.failover.impact import Status, WorkloadImpact, impacts
from hybridctl.core.failover.replan import FailoverOptions, Replan, replan, replanned_inventory
from hybridctl.core.failover.runbook import applied_fingerprint
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.checker import PlacementMemo, PlanCheck, check
from hybridctl.core.plan.checker_delta import check_changes
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.planner import budget_violation
from hybridctl.core.plan.pricing.totals import cost_change
from hybridctl.core.plan.tiers import Tier
from hybridctl.core.plan.verify import accepted, verified


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
    def expected_losses(self) -> list[WorkloadImpact]:
        return [i for i in self.impacts if i.expected_loss]

    @property
    def usd_per_month_delta(self) -> float:
        return cost_change(self.usd_per_month_before, self.usd_per_month_after)

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
        return [i for i in self.impacts if i.meets_rto is False]

    @property
    def gate_failures(self) -> list[str]:
        """Why this scenario fails the gate: fixed-tier service lost or recovery objective missed."""
        failures: list[str] = [self.runbook_problem] if self.runbook_problem else []
        for i in self.impacts:
            if i.tier != Tier.FIXED.value or i.expected_loss:
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


# a scenario makes hundreds of thousands of short-lived objects and next to no cycles: the collector
# would walk them again and again (4 % of a fleet's drill); it runs again between scenarios
def run_scenario(inventory: Inventory, base: Plan, scenario: Scenario, options: FailoverOptions,
                 steps_for: StepsFor | None = None, fingerprint: str | None = None,
                 demand_cache: DemandCache | None = None, check_memo: PlacementMemo | None = None,
                 base_check: PlanCheck | None = None, run_memo: RunMemo | None = None) -> ScenarioResult:
    """One scenario: its replan, its runbook and its rollback (built, never run), and what they mean.

    `base_check` (the checker's verdict on `base`) has the replan checked where it differs from the base plan.
    `run_memo`: the drill's (default: one of the scenario's own), shared with `steps_for`'s.
    """
    started = time.perf_counter()
    run_memo = RunMemo() if run_memo is None else run_memo
    result: Replan = replan(inventory, base, scenario.events, options, demand_cache, run_memo=run_memo)
    what = f"replan of scenario {scenario.name}"  # a bug if the checker rejects it
    checked = replanned_inventory(result, run_memo)
    if base_check is None:
        verified(checked, result.after, what, check_memo, run_memo)
    else:
        accepted(result.after, check_changes(base_check, checked, result.after, check_memo, run_memo).problems,
                 what)
    # the runbook and its rollback share their two plans: each plan's steps are built once
    steps_for = steps_once(steps_for or plain_steps(inventory, run_memo))
    problem: str | None = None
    counts = (0, 0)
    effects: tuple[WorkloadImpact, ...] | None = None
    try:
        # the base plan is made from (or checked against) this inventory: its digest is the inventory's
        runbook, _ = failover_runbook(inventory, result, steps_for=steps_for, digest=base.inventory_digest or None,
                                      fingerprint=fingerprint, run_memo=run_memo)
        effects = runbook.impacts
        back = plan_rollback(inventory, runbook, runbook.after, steps_for=steps_for,
                             returning_sites=returning_sites([runbook]), run_memo=run_memo)
        counts = (len(runbook.steps), len(back.steps))
    except StepGraphError as exc:
        problem = f"its runbook cannot be built: {exc}"
    return ScenarioResult(
        scenario=scenario,
        impacts=effects if effects is not None else tuple(impacts(inventory, result, run_memo=run_memo)),
        usd_per_month_before=base.total_usd_per_month,
        usd_per_month_after=result.after.total_usd_per_month,
        budget_problem=budget_violation(result.after),
        solver_status=result.after.solver.status,
        seconds=round(time.perf_counter() - started, 3),
        runbook_problem=problem, steps=counts[0], rollback_steps=counts[1],
    )


ScenarioMapper = Callable[[Callable[[Scenario], ScenarioResult], Sequence[Scenario]], Iterable[ScenarioResult]]


def drill(inventory: Inventory, base: Plan, scenarios: Sequence[Scenario], options: FailoverOptions | None = None,
          on_result: Callable[[ScenarioResult], None] | None = None,
          map_scenarios: ScenarioMapper | None = None, run_memo: RunMemo | None = None) -> DrillReport:
    """Replan every scenario from `base`; `on_result` sees each result as it is ready (progress).

    `map_scenarios` runs the scenarios (default: one after the other, here); the command layer
    may pass one that spreads them over processes. Results come back in scenario order.
    `run_memo`: the drill's memos (default: its own), beside its DemandCache; both are filled with what the
    base inventory and plan give before the scenarios run, so a worker process forked for them has it.
    """
    options = options or FailoverOptions()
    started = time.perf_counter()
    run_memo = RunMemo() if run_memo is None else run_memo
    cache = DemandCache()
    # filled before the scenarios run (and before any worker forks): the demands and tiers, and the data
    # movements of the base plan's placements, which every scenario's replan keeps for most work
    cache.movements.movements(inventory, cache.demands(inventory), base.placements, like=base.data_movements)
    cache.tiers(inventory, cache.demands(inventory))
    # the base plan, checked once here: every scenario's plan keeps most of it, and is checked where it differs
    memo = PlacementMemo()
    base_check = check(inventory, base, memo, run_memo)
    accepted(base, base_check.problems, "base plan of the drill")
    run = functools.partial(run_scenario, inventory, base, options=options,
                            steps_for=_base_once(base, plain_steps(inventory, run_memo)),
                            fingerprint=applied_fingerprint(base), demand_cache=cache, check_memo=memo,
                            base_check=base_check, run_memo=run_memo)
    results: list[ScenarioResult] = []
    for result in (map_scenarios or map)(run, scenarios):
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
