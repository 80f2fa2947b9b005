"""The failover and runbook commands' run: apply's steps for each plan from the stacks, bundles and state
(steps_builder), and the failover of an applied state (failover_of_state, through core/failover/pipeline.py).
The bench measures these."""

from __future__ import annotations

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
    from hybridctl.core.failover.run import FailoverRun


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
    from hybridctl.core.failover.plan_steps import derived_steps
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


def command_run(inventory: Inventory, state: State | None, refs: dict[str, BundleRef] | None, public_key: Path | None,
                *, applied: Plan, memo: RunMemo) -> FailoverRun:
    """The command's FailoverRun: its memo, and apply's steps for each plan (steps_builder)."""
    from hybridctl.core.failover.run import FailoverRun

    return FailoverRun(memo, steps_builder(inventory, state, refs, public_key, applied=applied, run_memo=memo))


def failover_of_state(inventory: Inventory, state: State, applied: Callable[[], Plan], events: Sequence[Event], *,
                      refs: dict[str, BundleRef] | None, public_key: Path | None,
                      options: FailoverOptions, memo: RunMemo) -> Runbook:
    """The failover runbook (pipeline.failover) from an applied state; `applied` parses the state's applied plan."""
    from hybridctl.core.failover import pipeline

    plan = applied()
    return pipeline.failover(inventory, plan, events, options,
                             command_run(inventory, state, refs, public_key, applied=plan, memo=memo),
                             base_serial=state.serial).built()
