"""The failover runbook as the failover and runbook commands compute it: apply's steps for each plan
(steps_builder), and the failover plan checked whole (checked_failover). The bench measures these."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.commands.common import BACKGROUND_CHECK_PLACEMENTS
from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.gcpause import gc_paused
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan
from hybridctl.core.steps import BundleRef, StepPlan
from hybridctl.drivers.state import State

if TYPE_CHECKING:
    from hybridctl.core.failover.events import Event
    from hybridctl.core.failover.replan import FailoverOptions


def steps_builder(inventory: Inventory, state: State | None, refs: dict[str, BundleRef] | None,
                  public_key: Path | None, *, applied: Plan) -> Callable[[Plan], StepPlan]:
    """plan -> apply's step graph for it, built as apply builds it; `applied`: the plan the state applied (a
    rehearsal's: the plan file's).

    The first plan built (a failover's applied plan, a rollback's failover plan) is derived in
    full; the other, which varies it, from it (derived_steps). Without a state (a rehearsal from a
    plan file), what is deployed is what applying `applied` would deploy, so the runbook is the one
    the applied state would give.
    """
    from hybridctl.commands.apply_flow import assets_digest, deployed_steps
    from hybridctl.core.failover.failover import derived_steps
    from hybridctl.core.stackconfig import plan_digest, remember_digest
    from hybridctl.core.stackreuse import StackConfigMemo
    from hybridctl.core.steps import DeployedStep

    digests = dict.fromkeys(("preflight.yml", "node.yml", "model-sync.yml"), assets_digest())
    key = str(public_key.resolve()) if public_key else None
    memo = StackConfigMemo()
    if state is not None:
        deployed = deployed_steps(state)
        if state.applied_plan_digest:
            # what apply recorded for this very plan: serialising a fleet's plan again would give the same
            remember_digest(applied, state.applied_plan_digest)
    else:
        made = derived_steps(inventory, plan_digest, memo, bundles=refs, bundle_public_key=key,
                             asset_digests=digests)(applied).graph
        deployed = {s.id: DeployedStep(s.id, s.kind, s.site, dict(s.params)) for s in made if s.deploys}
    return derived_steps(inventory, plan_digest, memo, bundles=refs, bundle_public_key=key, deployed=deployed,
                         asset_digests=digests)


def failover_of_state(inventory: Inventory, state: State, applied: Callable[[], Plan], events: Sequence[Event], *,
                      refs: dict[str, BundleRef] | None, public_key: Path | None,
                      options: FailoverOptions) -> Runbook:
    """checked_failover from an applied state; `applied` parses the state's applied plan.

    A forked child works out the inventory's digest while the applied plan is parsed (a fleet's: a
    quarter of a second each), so that it is done before the replan: a child alive through the replan
    slows it down, since every page the replan writes that the child still shares is copied.
    """
    from functools import partial

    from hybridctl.core.plan.costs import inventory_digest
    from hybridctl.drivers.background import Background

    forking = len(inventory.workloads) >= BACKGROUND_CHECK_PLACEMENTS
    with Background(partial(inventory_digest, inventory), fork=forking) as digesting:
        plan = applied()
        return checked_failover(inventory, plan, events, options=options, base_serial=state.serial,
                                steps_for=steps_builder(inventory, state, refs, public_key, applied=plan),
                                digest=digesting.result)


# A delta check costs a third of a whole one at 10,000 workloads (0.035-0.05 s against 0.12-0.135 s): finishing the
# applied plan's check for it pays when half of it is done.
DELTA_CHECK_AFTER = 0.5


# the replan and the runbook are, and a collection between them would walk a fleet's heap (0.1 s, seen)
@gc_paused
def checked_failover(inventory: Inventory, applied: Plan, events: Sequence[Event], *,
                     steps_for: Callable[[Plan], StepPlan], options: FailoverOptions,
                     base_serial: int | None = None, digest: str | Callable[[], str] | None = None) -> Runbook:
    """The failover runbook, its plan checked whole against the disrupted inventory (exit 70 if it breaks a
    rule). `digest`: the inventory's, when known (or a callable that gives it, asked after the replan).

    A fleet's failover works out beside the rest what only reads the inputs:
    - while the solver runs (beside.py): the applied plan's steps and its fingerprint (and the replan's
      own: the applied placements' data movements), then the applied plan's check, a part at a time;
    - in forked children: the inventory's digest, beside the replan (unless given); the failover plan's file
      digest (its stacks' tag) and its check, beside the runbook, which asks for the digest last.

    The failover plan is checked where it differs from the applied plan (checker_delta.py: the verdict is a
    whole check's) when at least DELTA_CHECK_AFTER of the applied plan's check was done beside the solver;
    else it is checked whole.
    """
    from functools import cache, partial

    from hybridctl.core.failover.failover import failover_runbook, stamped, steps_once
    from hybridctl.core.failover.replan import replan, replanned_inventory
    from hybridctl.core.failover.runbook import applied_fingerprint
    from hybridctl.core.failover.stale import stale_work
    from hybridctl.core.plan.beside import beside_solver, in_steps
    from hybridctl.core.plan.checker import SteppedCheck, check_plan
    from hybridctl.core.plan.checker_delta import check_changes
    from hybridctl.core.plan.costs import inventory_digest
    from hybridctl.core.plan.verify import accepted
    from hybridctl.core.stackconfig import plan_file_digest, remember_digest
    from hybridctl.drivers.background import Background

    forking = len(applied.placements) >= BACKGROUND_CHECK_PLACEMENTS
    steps_for = steps_once(steps_for)
    fingerprint = cache(partial(applied_fingerprint, applied))
    reference = SteppedCheck(inventory, applied) if forking else None
    beside = (partial(steps_for, applied), fingerprint, in_steps(reference.step)) if reference is not None else ()
    with Background(partial(inventory_digest, inventory), fork=forking and digest is None) as digesting, \
            beside_solver(*beside):
        result = replan(inventory, applied, events, options)
        digest = digest() if callable(digest) else digest or digesting.result()
    if applied.inventory_digest and applied.inventory_digest != digest:
        # edited since the apply: the work the inventory no longer supports is replanned too, and placements of
        # what it no longer has are dropped (stale.py); the runbook still goes from what was applied
        stale = stale_work(inventory, applied)
        if stale.workloads or stale.plan is not applied:
            result = dataclasses.replace(replan(inventory, stale.plan, events, options, stale=stale.workloads),
                                         before=applied)
    result = stamped(result, digest)
    by_delta = reference if reference is not None and reference.progress >= DELTA_CHECK_AFTER else None

    def problems() -> list[str]:
        if by_delta is not None:  # the rest of the applied plan's check is done here
            return check_changes(by_delta.result(), replanned_inventory(result), result.after).problems
        return check_plan(replanned_inventory(result), result.after)

    # the digest first: the runbook asks for it before the check's result
    with Background(partial(plan_file_digest, result.after), fork=forking) as plan_digesting, \
            Background(problems, fork=forking) as checking:
        remember_digest(result.after, plan_digesting.result)
        runbook, _ = failover_runbook(inventory, result, steps_for=steps_for, base_serial=base_serial,
                                      digest=result.after.inventory_digest, fingerprint=fingerprint())
        accepted(result.after, checking.result(), "failover plan")
    return runbook
