"""The failover pipeline: the inventory, the applied plan and the events in, the checked failover out. Pure.

One way to build a failover, whoever asks: the `failover` command (live, or rehearsed from a plan
file), each scenario of a drill, the tests. In order: the replan (and, when the inventory was
edited since the apply, the replan of the work it no longer supports), the failover plan's check,
then the runbook with apply's steps for both plans, and for a drill the runbook's rollback. The
`runbook rollback` command builds its rollback with the same rollback() the drill uses.

What a run shares among the failovers and rollbacks it builds travels as one FailoverRun (run.py),
made by the operation or the drill and passed down.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from hybridctl.core.deploy.steps import StepGraph, StepGraphError
from hybridctl.core.failover.disrupt import Disruption
from hybridctl.core.failover.events import SITE_EVENTS, Event, EventKind, provider_sites
from hybridctl.core.failover.impact import impacts
from hybridctl.core.failover.plan_steps import StepsFor, plain_steps, steps_once
from hybridctl.core.failover.replan import FailoverOptions, Replan
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.runbook import (
    Runbook,
    RunbookKind,
    build_runbook,
    failover_manual_steps,
    incident_id,
)
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.placement.planner import budget_violation
from hybridctl.core.plan.model import Plan


@dataclass(frozen=True)
class Failover:
    """A checked failover: its replan (the failover plan stamped with the inventory's digest), its runbook and,
    when asked for, its rollback. A runbook that cannot be built leaves `unbuildable` (and the runbooks
    after it None): a drill reports it; the command raises it (built())."""

    replan: Replan
    runbook: Runbook | None
    rollback: Runbook | None = None
    unbuildable: StepGraphError | None = None

    def built(self) -> Runbook:
        """The runbook; StepGraphError when it cannot be built."""
        if self.unbuildable is not None:
            raise self.unbuildable
        assert self.runbook is not None  # built whenever nothing stopped it
        return self.runbook


def failover(inventory: Inventory, applied: Plan, events: Sequence[Event], options: FailoverOptions, run: FailoverRun,
             *, base_serial: int | None = None, digest: str | None = None, with_rollback: bool = False,
             checked_as: str = "failover plan") -> Failover:
    """The failover of `applied` under `events`, its plan checked against the disrupted inventory (PlanCheckFailed,
    named `checked_as`, if it breaks a rule: a bug): whole, or where it differs from `run.base_check`'s plan
    (a drill's), which gives the same. `digest`: the inventory's, when known; `with_rollback`: the runbook's
    rollback built too, sharing its two plans' steps (a drill's).
    """
    # read from their modules when called: a test hands the command or a drill a broken replan or checker
    from hybridctl.core.checker.check import check_plan
    from hybridctl.core.checker.delta import check_changes
    from hybridctl.core.checker.failover_price import price_ratio_violations
    from hybridctl.core.checker.verify import accepted
    from hybridctl.core.failover.replan import replan, replanned_inventory
    from hybridctl.core.failover.stale import stale_work

    memo = run.memo
    result = replan(inventory, applied, events, options, run)
    digest = digest or inventory_digest(inventory)
    if applied.inventory_digest and applied.inventory_digest != digest:
        # edited since the apply: the work the inventory no longer supports is replanned too, and placements of
        # what it no longer has are dropped (stale.py); the runbook still goes from what was applied
        stale = stale_work(inventory, applied, memo)
        if stale.workloads or stale.plan is not applied:
            result = dataclasses.replace(replan(inventory, stale.plan, events, options, run, stale.workloads),
                                         before=applied)
    checked = replanned_inventory(result, memo)
    if run.base_check is None:
        problems = check_plan(checked, result.after, run.check_memo, memo)
    else:
        problems = check_changes(run.base_check, checked, result.after, run.check_memo, memo).problems
    # a replan's own rule, on the two plans (checker/failover_price.py)
    problems = [*problems, *price_ratio_violations(result.before, result.after,
                                                   inventory.policies.failover_max_price_ratio, memo)]
    accepted(result.after, problems, checked_as)
    result = _stamped(result, digest)
    # the runbook and its rollback share their two plans: each plan's steps are built once
    steps_for = steps_once(run.steps_for or plain_steps(inventory, memo))
    runbook: Runbook | None = None
    try:
        runbook = _failover_runbook(inventory, result, steps_for, memo, base_serial, run.fingerprint)
        back = (rollback(inventory, runbook, runbook.after, dataclasses.replace(run, steps_for=steps_for),
                         returning_sites=returning_sites([runbook], inventory)) if with_rollback else None)
    except StepGraphError as exc:
        return Failover(result, runbook, unbuildable=exc)
    return Failover(result, runbook, back)


def _failover_runbook(inventory: Inventory, result: Replan, steps_for: StepsFor, memo: RunMemo,
                      base_serial: int | None, fingerprint: str | None) -> Runbook:
    """The runbook from the applied plan (`result.before`) to the failover plan of `result` (stamped)."""
    applied, events, disruption = result.before, result.disruption.events, result.disruption
    hosts = {s.name: f" (hosts: {', '.join(h.name for h in s.hosts)})" if s.hosts else "" for s in inventory.sites}
    unreachable = {site: f"site-lost {site}: it cannot be reached{hosts[site]}" for site in disruption.lost_sites}
    unreachable |= {site: f"link-down {site}: nothing can be shipped to it{hosts[site]}"
                    for site in disruption.down_links}
    notes: list[str] = []
    over = budget_violation(result.after)
    if over:
        advice = _budget_advice(applied, result.after, events)
        notes.append(f"over budget: {over}" + (f"; to come back under it: {'; '.join(advice)}" if advice else ""))
    for site in sorted(disruption.lost_sites):
        kind = next(s.kind.value for s in inventory.sites if s.name == site)
        if kind == "cloud":
            notes.append(f"the GPU pools of {site} are left as they are in Pulumi's state; once the region is back, "
                         "`hybridctl runbook rollback` restores them, or `hybridctl destroy --site` removes them")
    if result.after.solver.status not in ("optimal", "no_demand"):  # no_demand: the events left nothing to place
        notes.append(f"the solver stopped at {result.after.solver.status} (gap {result.after.solver.gap:.2%})")
    incident = incident_id(applied, events, fingerprint, base_serial)
    changes = impacts(inventory, result, run_memo=memo)
    # the failover plan's steps last: the command works out its digest, which they are tagged with, meanwhile
    before_steps, after_steps = steps_for(applied), steps_for(result.after)
    notes += [n for n in after_steps.notes if n not in notes]
    return build_runbook(
        inventory, kind=RunbookKind.FAILOVER, incident=incident, events=[str(e) for e in events],
        before=applied, after=result.after, impacts=changes,
        before_steps=before_steps.graph, after_steps=after_steps.graph, unreachable=unreachable,
        manual=failover_manual_steps(disruption.lost_sites, disruption.down_links, inventory),
        base_serial=base_serial, notes=notes)


def _budget_advice(before: Plan, after: Plan, events: Sequence[Event]) -> list[str]:
    """What to pause, defer or move to come back under the budget after a price event, dearest first, each with
    what it saves: work that may wait (not fixed) on a repriced pool saves all it costs there; fixed work
    moved off it saves at most what the event added to it."""
    from hybridctl.core.failover.events import EventKind

    repriced = {e.target for e in events if e.kind is EventKind.PRICE}
    old = {(p.workload, p.pool): p.usd_per_month for p in before.placements}
    advice = []
    for p in sorted((p for p in after.placements if p.pool in repriced), key=lambda p: (-p.usd_per_month, p.workload)):
        if p.tier == "fixed":
            added = p.usd_per_month - old.get((p.workload, p.pool), p.usd_per_month)
            if added > 0.005:
                advice.append(f"move {p.workload} (fixed) off {p.pool}: saves up to ${added:,.2f}/month, what the "
                              f"price event added (`hybridctl failover pool-lost {p.pool}` replans it elsewhere)")
        else:
            advice.append(f"pause or defer {p.workload} ({p.tier}) on {p.pool}: saves ${p.usd_per_month:,.2f}/month")
    return advice


def _stamped(result: Replan, digest: str) -> Replan:
    """`result`, its failover plan carrying the inventory's `digest`: once applied, the failover plan is the
    plan of this inventory under these events. The very result when it carries it already (the replan
    stamps its plans with the applied plan's digest, the inventory's unless the inventory changed since)."""
    if result.after.inventory_digest == digest:
        return result
    return dataclasses.replace(result, after=dataclasses.replace(result.after, inventory_digest=digest))


def returning_sites(failovers: Sequence[Runbook], inventory: Inventory | None = None) -> list[str]:
    """The sites a rollback of these failovers brings back: lost or cut off, or holding deferred steps (a
    provider-lost event's: every site of the provider in `inventory`)."""
    sites: set[str] = set()
    for runbook in failovers:
        sites |= {d.site for d in runbook.deferred}
        for event in runbook.events:
            kind, _, target = event.partition(" ")
            if kind in SITE_EVENTS:
                sites.add(target)
            elif kind == EventKind.PROVIDER_LOST and inventory is not None:
                sites.update(provider_sites(inventory, target))
    return sorted(sites)


def step_target(step_id: str) -> str:
    """What a step acts on, whether it makes or destroys it: a rollback destroys what a failover made."""
    return step_id.removeprefix("destroy/")


def undo(inventory: Inventory, unfinished: Runbook, touched: Sequence[str], run: FailoverRun, *,
         base_serial: int | None = None) -> Runbook:
    """The rollback of a failover runbook left unfinished (a step failed, or it was cut off): back to the plan
    before it, only where the steps it started (`touched`, done or not: a failed cloud step may have changed
    part of its stack) acted. Nothing else changed, and nothing at a site still lost is touched."""
    targets = {step_target(t) for t in touched if "/" in t and not t.startswith(("confirm/", "manual/"))}
    return rollback(inventory, unfinished, unfinished.after, run, returning_sites=(), base_serial=base_serial,
                    only=targets, undoing=sorted(t for t in touched if step_target(t) in targets))


def _only(graph: StepGraph, targets: set[str]) -> StepGraph:
    kept = {s.id for s in graph if step_target(s.id) in targets}
    return StepGraph.of(dataclasses.replace(s, depends_on=tuple(d for d in s.depends_on if d in kept))
                        for s in graph if s.id in kept)


def rollback(inventory: Inventory, failover: Runbook, current: Plan, run: FailoverRun, *,
             returning_sites: Sequence[str], base_serial: int | None = None,
             only: set[str] | None = None, undoing: Sequence[str] = ()) -> Runbook:
    """Back from the failover plan (`current`) to the plan that ran before the failover (`run.memo`: a drill's
    holds what the failover's impacts tallied of the two plans)."""
    target = failover.before
    quiet = Disruption((), inventory, frozenset(), frozenset(), (), {})
    steps_for = run.steps_for or plain_steps(inventory, run.memo)
    before_steps, after_steps = steps_for(current), steps_for(target)
    target_graph = after_steps.graph if only is None else _only(after_steps.graph, only)
    returns = f"returns to the plan that ran before {failover.id} ({', '.join(failover.events)})"
    if only is not None:
        returns = (f"undoes what the unfinished {failover.id} changed ({', '.join(undoing) or 'nothing'}) and "
                   f"{returns}; the sites it fenced stay as they are")
        # no workload moved: the unfinished runbook's plan never ran, so the undo runs from the plan before to it
        # (its steps, from the failover plan's, do what is to be undone), and its money and effect are nil
        current = target
    back = Replan(quiet, current, target, {}, 0)
    return build_runbook(
        inventory, kind=RunbookKind.ROLLBACK, incident=failover.incident, events=failover.events,
        before=current, after=target, impacts=impacts(inventory, back, returning=True, run_memo=run.memo),
        before_steps=before_steps.graph, after_steps=target_graph, unreachable={},
        verify_sites=sorted(returning_sites), base_serial=base_serial,
        notes=[returns, *after_steps.notes])
