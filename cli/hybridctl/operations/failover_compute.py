"""The failover runbook as the failover and runbook commands compute it: apply's steps for each plan
(steps_builder), and the failover plan checked whole (checked_failover). The bench measures these."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.core.deploy.steps import BundleRef, StepPlan
from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.state import State

if TYPE_CHECKING:
    from hybridctl.core.failover.events import Event
    from hybridctl.core.failover.replan import FailoverOptions


def steps_builder(inventory: Inventory, state: State | None, refs: dict[str, BundleRef] | None,
                  public_key: Path | None, *, applied: Plan,
                  run_memo: RunMemo | None = None) -> Callable[[Plan], StepPlan]:
    """plan -> apply's step graph for it, built as apply builds it; `applied`: the plan the state applied (a
    rehearsal's: the plan file's); `run_memo`: the run's, which keeps the plans' digests (and is told the state's).

    The first plan built (a failover's applied plan, a rollback's failover plan) is derived in
    full; the other, which varies it, from it (derived_steps). Without a state (a rehearsal from a
    plan file), what is deployed is what applying `applied` would deploy, so the runbook is the one
    the applied state would give.
    """
    from hybridctl.core.deploy.stackconfig import kept_plan_digest, remember_digest
    from hybridctl.core.deploy.stackreuse import StackConfigMemo
    from hybridctl.core.deploy.steps import DeployedStep
    from hybridctl.core.failover.failover import derived_steps
    from hybridctl.operations.run import assets_digest, deployed_steps

    digests = dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"), assets_digest())
    key = str(public_key.resolve()) if public_key else None
    run_memo = RunMemo() if run_memo is None else run_memo
    memo = StackConfigMemo(run_memo)
    if state is not None:
        deployed = deployed_steps(state)
        if state.applied_plan_digest:
            # what apply recorded for this very plan: serialising a fleet's plan again would give the same
            remember_digest(run_memo, applied, state.applied_plan_digest)
    else:
        made = derived_steps(inventory, partial(kept_plan_digest, run_memo), memo, bundles=refs, bundle_public_key=key,
                             asset_digests=digests)(applied).graph
        deployed = {s.id: DeployedStep(s.id, s.kind, s.site, dict(s.params)) for s in made if s.deploys}
    return derived_steps(inventory, partial(kept_plan_digest, run_memo), memo, bundles=refs, bundle_public_key=key,
                         deployed=deployed, asset_digests=digests)


def failover_of_state(inventory: Inventory, state: State, applied: Callable[[], Plan], events: Sequence[Event], *,
                      refs: dict[str, BundleRef] | None, public_key: Path | None,
                      options: FailoverOptions, run_memo: RunMemo | None = None) -> Runbook:
    """checked_failover from an applied state; `applied` parses the state's applied plan."""
    plan = applied()
    run_memo = RunMemo() if run_memo is None else run_memo
    return checked_failover(inventory, plan, events, options=options, base_serial=state.serial,
                            steps_for=steps_builder(inventory, state, refs, public_key, applied=plan,
                                                    run_memo=run_memo), run_memo=run_memo)


def checked_failover(inventory: Inventory, applied: Plan, events: Sequence[Event], *,
                     steps_for: Callable[[Plan], StepPlan], options: FailoverOptions,
                     base_serial: int | None = None, digest: str | None = None,
                     run_memo: RunMemo | None = None) -> Runbook:
    """The failover runbook, its plan checked whole against the disrupted inventory (exit 70 if it breaks a
    rule). `digest`: the inventory's, when known; `run_memo`: the run's (`steps_for`'s too).

    In order: the replan, the inventory's digest (and the replan of what an edited inventory no longer
    supports), the runbook with apply's steps for both plans, then the failover plan's check.
    """
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.checker.verify import accepted
    from hybridctl.core.failover.failover import failover_runbook, stamped, steps_once
    from hybridctl.core.failover.replan import replan, replanned_inventory
    from hybridctl.core.failover.stale import stale_work
    from hybridctl.core.inventory.digest import inventory_digest

    steps_for = steps_once(steps_for)
    run_memo = RunMemo() if run_memo is None else run_memo
    result = replan(inventory, applied, events, options, run_memo=run_memo)
    digest = digest or inventory_digest(inventory)
    if applied.inventory_digest and applied.inventory_digest != digest:
        # edited since the apply: the work the inventory no longer supports is replanned too, and placements of
        # what it no longer has are dropped (stale.py); the runbook still goes from what was applied
        stale = stale_work(inventory, applied, run_memo)
        if stale.workloads or stale.plan is not applied:
            result = dataclasses.replace(replan(inventory, stale.plan, events, options, stale=stale.workloads,
                                                run_memo=run_memo), before=applied)
    result = stamped(result, digest)
    runbook, _ = failover_runbook(inventory, result, steps_for=steps_for, base_serial=base_serial,
                                  digest=result.after.inventory_digest, run_memo=run_memo)
    accepted(result.after, check_plan(replanned_inventory(result, run_memo), result.after, run_memo=run_memo),
             "failover plan")
    return runbook
