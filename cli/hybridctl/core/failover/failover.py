"""plan_failover() and plan_rollback(): the applied plan and events in, a Runbook out. Pure.

Both take `steps_for`, the function that turns a plan into apply's step graph (the command
layer builds it from the stacks, bundles and state). A failover runbook holds the steps that
differ between the applied plan's graph and the failover plan's; a rollback runbook holds
those that differ between the failover plan's and the pre-failover plan's.
"""

from __future__ import annotations

import dataclasses
import operator
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from itertools import compress

from hybridctl.core.deploy.ansible_inventory import hosted_placements
from hybridctl.core.deploy.stackreuse import StackConfigMemo
from hybridctl.core.deploy.steps import BundleRef, DeployedStep, StepPlan, apply_steps, cloud_stacks
from hybridctl.core.failover.disrupt import Disruption
from hybridctl.core.failover.events import SITE_EVENTS, Event
from hybridctl.core.failover.impact import impacts
from hybridctl.core.failover.replan import FailoverOptions, Replan, replan
from hybridctl.core.failover.runbook import (
    Runbook,
    RunbookKind,
    build_runbook,
    failover_manual_steps,
    incident_id,
)
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.core.inventory.models import Inventory, SiteKind
from hybridctl.core.memo import RunMemo
from hybridctl.core.placement.planner import budget_violation
from hybridctl.core.plan.model import Placement, Plan

StepsFor = Callable[[Plan], StepPlan]  # apply's steps for a plan, and its notes


def plan_failover(inventory: Inventory, applied: Plan, events: Sequence[Event], *, steps_for: StepsFor,
                  options: FailoverOptions | None = None, base_serial: int | None = None,
                  digest: str | None = None, run_memo: RunMemo | None = None) -> tuple[Runbook, Replan]:
    """`digest`: the inventory's, when the caller has worked it out already; `run_memo`: the run's (default: one
    of its own, shared by the replan and the runbook)."""
    run_memo = RunMemo() if run_memo is None else run_memo
    return failover_runbook(inventory, replan(inventory, applied, events, options, run_memo=run_memo),
                            steps_for=steps_for, base_serial=base_serial, digest=digest, run_memo=run_memo)


def failover_runbook(inventory: Inventory, result: Replan, *, steps_for: StepsFor, base_serial: int | None = None,
                     digest: str | None = None, fingerprint: str | None = None,
                     run_memo: RunMemo | None = None) -> tuple[Runbook, Replan]:
    """The runbook from the applied plan (`result.before`) to the failover plan of `result`.

    `digest` (the inventory's) and `fingerprint` (the applied plan's) save a drill working out
    the same values for every scenario; `run_memo` (the run's: the replan's, a drill's) what the
    impacts read again.
    """
    applied, events = result.before, result.disruption.events
    result = stamped(result, digest or inventory_digest(inventory))
    disruption = result.disruption
    hosts = {s.name: f" (hosts: {', '.join(h.name for h in s.hosts)})" if s.hosts else "" for s in inventory.sites}
    unreachable = {site: f"site-lost {site}: it cannot be reached{hosts[site]}" for site in disruption.lost_sites}
    unreachable |= {site: f"link-down {site}: nothing can be shipped to it{hosts[site]}"
                    for site in disruption.down_links}
    notes: list[str] = []
    over = budget_violation(result.after)
    if over:
        notes.append(f"over budget: {over}")
    for site in sorted(disruption.lost_sites):
        kind = next(s.kind.value for s in inventory.sites if s.name == site)
        if kind == "cloud":
            notes.append(f"the GPU pools of {site} are left as they are in Pulumi's state; once the region is back, "
                         "`hybridctl runbook rollback` restores them, or `hybridctl destroy --site` removes them")
    if result.after.solver.status not in ("optimal", "no_demand"):  # no_demand: the events left nothing to place
        notes.append(f"the solver stopped at {result.after.solver.status} (gap {result.after.solver.gap:.2%})")
    incident, changes = incident_id(applied, events, fingerprint), impacts(inventory, result, run_memo=run_memo)
    # the failover plan's steps last: the command works out its digest, which they are tagged with, meanwhile
    before_steps, after_steps = steps_for(applied), steps_for(result.after)
    notes += [n for n in after_steps.notes if n not in notes]
    runbook = build_runbook(
        inventory, kind=RunbookKind.FAILOVER, incident=incident, events=[str(e) for e in events],
        before=applied, after=result.after, impacts=changes,
        before_steps=before_steps.graph, after_steps=after_steps.graph, unreachable=unreachable,
        manual=failover_manual_steps(disruption.lost_sites, disruption.down_links, inventory),
        base_serial=base_serial, notes=notes)
    return runbook, result


def stamped(result: Replan, digest: str) -> Replan:
    """`result`, its failover plan carrying the inventory's `digest`: once applied, the failover plan is the
    plan of this inventory under these events. The very result when it carries it already (the replan
    stamps its plans with the applied plan's digest, the inventory's unless the inventory changed since)."""
    if result.after.inventory_digest == digest:
        return result
    return dataclasses.replace(result, after=dataclasses.replace(result.after, inventory_digest=digest))


def returning_sites(failovers: Sequence[Runbook]) -> list[str]:
    """The sites a rollback of these failovers brings back: lost or cut off, or holding deferred steps."""
    sites: set[str] = set()
    for runbook in failovers:
        sites |= {d.site for d in runbook.deferred}
        for event in runbook.events:
            kind, _, target = event.partition(" ")
            if kind in SITE_EVENTS:
                sites.add(target)
    return sorted(sites)


REHEARSAL_DIGEST = "sha256:rehearsal"  # the plan digest a drill's stacks are tagged with: never applied


def plain_steps(inventory: Inventory, run_memo: RunMemo | None = None) -> StepsFor:
    """apply's steps without bundles or deployed state, for a drill, which only builds them.

    The stacks are tagged with a placeholder instead of the plan file's digest, which no step's
    identity covers (serialising a fleet's plan for it would be most of a drill's time).
    """
    return derived_steps(inventory, lambda plan: REHEARSAL_DIGEST, run_memo=run_memo)


def derived_steps(inventory: Inventory, digest_of: Callable[[Plan], str], memo: StackConfigMemo | None = None, *,
                  bundles: Mapping[str, BundleRef] | None = None, bundle_public_key: str | None = None,
                  deployed: Mapping[str, DeployedStep] | None = None,
                  asset_digests: Mapping[str, str] | None = None, run_memo: RunMemo | None = None) -> StepsFor:
    """apply_steps(plan, inventory, bundles=…, …), its stacks tagged with `digest_of(plan)`, for a run of plans
    that vary the first one built (a failover's applied plan, a drill's base plan).

    A later plan gets its stacks, and the placements its hosts run, derived from the first plan's
    where it differs from it (StackConfigMemo; `memo` shares one with another builder): a failover
    costs what it changed, not what the fleet holds. A plan that reads the same as the first plan
    built, under the same digest (a drill's base plan), gets that plan's steps: a scenario that
    moves nothing (a reclaimed spot pool nobody used, a link down with nothing behind it) replans
    into such a plan. Without `memo`, a StackConfigMemo of `run_memo` (the run's: where the replan
    told the delta of its plan) is made.

    `digest_of` may be a RunMemo's plan_digest: the plans' digests are then kept with the run.
    """
    memo = StackConfigMemo(run_memo) if memo is None else memo
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


def plan_rollback(inventory: Inventory, failover: Runbook, current: Plan, *, steps_for: StepsFor,
                  returning_sites: Sequence[str], base_serial: int | None = None,
                  run_memo: RunMemo | None = None) -> Runbook:
    """Back from the failover plan (`current`) to the plan that ran before the failover; `run_memo`: the run's
    (a drill's: what the failover's impacts tallied of the two plans)."""
    target = failover.before
    quiet = Disruption((), inventory, frozenset(), frozenset(), (), {})
    back = Replan(quiet, current, target, {}, 0)
    before_steps, after_steps = steps_for(current), steps_for(target)
    return build_runbook(
        inventory, kind=RunbookKind.ROLLBACK, incident=failover.incident, events=failover.events,
        before=current, after=target, impacts=impacts(inventory, back, returning=True, run_memo=run_memo),
        before_steps=before_steps.graph, after_steps=after_steps.graph, unreachable={},
        verify_sites=sorted(returning_sites), base_serial=base_serial,
        notes=[f"returns to the plan that ran before {failover.id} ({', '.join(failover.events)})",
               *after_steps.notes])
