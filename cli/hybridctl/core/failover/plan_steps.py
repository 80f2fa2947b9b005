"""apply's step graphs for the plans of a failover run (StepsFor): a drill's (plain_steps), or derived from
the first plan built (derived_steps, which the command layer builds from the stacks, bundles and state),
each plan's built once (steps_once). The pipeline (pipeline.py) reads them: a failover runbook holds
the steps that differ between the applied plan's graph and the failover plan's; a rollback runbook
those that differ between the failover plan's and the pre-failover plan's. Pure.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from functools import partial
from itertools import compress

from hybridctl.core.deploy.ansible_inventory import hosted_placements
from hybridctl.core.deploy.stackreuse import StackConfigMemo
from hybridctl.core.deploy.steps import BundleRef, DeployedStep, StepPlan, apply_steps, cloud_stacks
from hybridctl.core.inventory.models import Inventory, SiteKind
from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.model import Placement, Plan

StepsFor = Callable[[Plan], StepPlan]  # apply's steps for a plan, and its notes


REHEARSAL_DIGEST = "sha256:rehearsal"  # the plan digest a drill's stacks are tagged with: never applied


def plain_steps(inventory: Inventory, run_memo: RunMemo | None = None) -> StepsFor:
    """apply's steps without bundles or deployed state, for a drill, which only builds them.

    The stacks are tagged with a placeholder instead of the plan file's digest, which no step's
    identity covers (serialising a fleet's plan for it would be most of a drill's time).
    """
    return derived_steps(inventory, lambda plan: REHEARSAL_DIGEST, StackConfigMemo(run_memo))


def derived_steps(inventory: Inventory, digest_of: Callable[[Plan], str], memo: StackConfigMemo | None = None, *,
                  bundles: Mapping[str, BundleRef] | None = None, bundle_public_key: str | None = None,
                  deployed: Mapping[str, DeployedStep] | None = None,
                  asset_digests: Mapping[str, str] | None = None) -> StepsFor:
    """apply_steps(plan, inventory, bundles=…, …), its stacks tagged with `digest_of(plan)`, for a run of plans
    that vary the first one built (a failover's applied plan, a drill's base plan).

    A later plan gets its stacks, and the placements its hosts run, derived from the first plan's
    where it differs from it (StackConfigMemo; `memo` shares one with another builder): a failover
    costs what it changed, not what the fleet holds. A plan that reads the same as the first plan
    built, under the same digest (a drill's base plan), gets that plan's steps: a scenario that
    moves nothing (a reclaimed spot pool nobody used, a link down with nothing behind it) replans
    into such a plan. `memo` wraps the run's RunMemo, where the replan told the delta of its plan
    (default: one of its own).

    `digest_of` may be a RunMemo's plan_digest: the plans' digests are then kept with the run.
    """
    memo = StackConfigMemo() if memo is None else memo
    first: list[tuple[Plan, str, StepPlan]] = []
    hosted_sites = [s.name for s in inventory.sites if s.kind is not SiteKind.CLOUD and s.hosts]

    def build(plan: Plan) -> StepPlan:
        # the digest is asked for last: the failover command works out the failover plan's meanwhile
        if first and same_steps_inputs(plan, first[0][0]) and digest_of(plan) == first[0][1]:
            return first[0][2]
        stacks = cloud_stacks(inventory, plan, partial(digest_of, plan), memo)
        at_hosts = memo.placements_at(plan, hosted_sites) if first else None
        steps = apply_steps(plan, inventory, stacks=stacks, bundles=bundles, bundle_public_key=bundle_public_key,
                            deployed=deployed, asset_digests=asset_digests,
                            hosted=None if at_hosts is None else hosted_placements(inventory, at_hosts))
        if not first:
            first.append((plan, digest_of(plan), steps))
        return steps

    return build


def same_steps_inputs(plan: Plan, other: Plan) -> bool:
    """Whether apply's steps (steps, ansible_inventory, stackconfig) for the two plans are the same when their
    stacks are tagged with one digest: they read a plan's tiers, each pool's machines and, of each placement,
    its workload, tier, site, pool, replicas and GPUs (a reason, a price or a data movement goes in no step).

    A failover plan keeps most placements as the very objects of the applied plan: comparing costs little.
    """
    ours, theirs = plan.placements, other.placements
    if not (plan.tiers == other.tiers and len(ours) == len(theirs)
            and [(u.site, u.pool, u.machines) for u in plan.pools] == [(u.site, u.pool, u.machines) for u in other.pools]):
        return False
    # the pairs that are not one object, found without a Python step per placement (a fleet has tens of thousands)
    return all(_placed_alike(one, two) for one, two in compress(zip(ours, theirs, strict=True),
                                                            map(operator.is_not, ours, theirs)))


def _placed_alike(one: Placement, other: Placement) -> bool:
    return (one.workload, one.tier, one.site, one.pool, one.replicas, one.gpus) == (
        other.workload, other.tier, other.site, other.pool, other.replicas, other.gpus)


def steps_once(steps_for: StepsFor) -> StepsFor:
    """`steps_for`, building each plan's steps once: a failover's runbook and its rollback both need
    the applied plan's and the failover plan's (the stack configurations of a fleet are most of it).

    Keyed by the plan object, which the memo holds, so no identity passes to another plan meanwhile.
    """
    built: dict[int, tuple[Plan, StepPlan]] = {}

    def build(plan: Plan) -> StepPlan:
        known = built.get(id(plan))
        if known is None:
            known = built[id(plan)] = (plan, steps_for(plan))
        return known[1]

    return build
