"""The runbook: the ordered, idempotent steps that take the fleet from the applied plan to the failover plan.

Its steps are apply's steps (hybridctl.core.deploy.steps) for the failover plan, kept only where they
differ from the applied plan's (same id, another digest, or new), so a runbook never re-does
what is already in place, and a step that is done is skipped on resume. Steps at sites that
cannot be reached (lost, or behind a down link) are deferred, not run. Manual steps say what
an operator must do. Steps are grouped; each group waits for a confirmation step, so the
executor asks once per group (or --auto-approve approves) and records the answer in the journal.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

from hybridctl.core.deploy.steps import Step as ExecStep
from hybridctl.core.deploy.steps import StepGraph, StepKind, canonical_json, make_step
from hybridctl.core.failover.events import Event
from hybridctl.core.failover.impact import WorkloadImpact, transfer_minutes
from hybridctl.core.inventory.models import Inventory, Site
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.incident import CashChange, cash_change

if TYPE_CHECKING:
    from hybridctl.core.failover.timingrecord import RunbookTiming

RUNBOOK_FORMAT_VERSION = 1
MANUAL_KIND = "runbook-manual"  # an operator's action: shown, then confirmed (or auto-approved)
CONFIRM_KIND = "runbook-confirm"  # the confirmation that opens a group of steps


class System(StrEnum):
    PULUMI = "pulumi"
    ANSIBLE = "ansible"
    MANUAL = "manual"


class RunbookKind(StrEnum):
    FAILOVER = "failover"
    ROLLBACK = "rollback"


GROUPS: tuple[tuple[str, str], ...] = (
    ("contain", "Contain the failure"),
    ("verify", "Check that the site is back"),
    ("capacity", "Bring capacity into service"),
    ("models", "Ship model bundles to the receiving hosts"),
    ("admission", "Admit workloads where they now run"),
    ("release", "Release capacity that is no longer used"),
)
_SYSTEM: MappingProxyType[str, System] = MappingProxyType({
    StepKind.CLOUD_POOLS: System.PULUMI, StepKind.CLUSTER_QUEUES: System.PULUMI,
    StepKind.DESTROY_CLUSTER_QUEUES: System.PULUMI, StepKind.DESTROY_CLOUD_POOLS: System.PULUMI,
    StepKind.PREFLIGHT: System.ANSIBLE, StepKind.NODE_BASELINE: System.ANSIBLE,
    StepKind.MODEL_SYNC: System.ANSIBLE, StepKind.RELEASE_NODES: System.MANUAL})


@dataclass(frozen=True)
class RunbookStep:
    step: ExecStep  # what the executor runs
    group: str
    system: System
    estimated_minutes: float
    workloads: tuple[str, ...] = ()  # the workloads it brings up or moves
    detail: str = ""

    @property
    def id(self) -> str:
        return self.step.id


@dataclass(frozen=True)
class Deferred:
    step_id: str
    site: str
    reason: str


@dataclass(frozen=True)
class Runbook:
    kind: RunbookKind
    incident: str  # one id for a failover and its rollback: digest of the applied plan and the events
    inventory: str
    events: tuple[str, ...]
    base_serial: int | None
    before: Plan  # what runs now
    after: Plan  # what the runbook makes run
    impacts: tuple[WorkloadImpact, ...]
    steps: tuple[RunbookStep, ...]  # in execution order
    deferred: tuple[Deferred, ...]
    notes: tuple[str, ...]
    # when it acts in the plan's week (failover --at; timing.py); outside the id: the same steps at any time
    timing: RunbookTiming | None = None

    @property
    def id(self) -> str:
        text = canonical_json([self.kind.value, self.incident, [s.step.key for s in self.steps]])
        return "rb-" + hashlib.sha256(text).hexdigest()[:16]

    @property
    def graph(self) -> StepGraph:
        return StepGraph.of(s.step for s in self.steps)

    @cached_property
    def cash(self) -> CashChange:
        """The change in cash, committed capacity lost kept paid (incident.py); worked out once (a pass over
        both plans' placements), read by the summary, the table and the JSON."""
        return cash_change(self.before, self.after)

    @property
    def usd_per_month_delta(self) -> float:
        return self.cash.usd_per_month

    @property
    def unlisted_usd_per_month_delta(self) -> float:
        """The cash change of workloads without a row (their placements stay; they share machines with work
        that moved, or read data from elsewhere): with the rows, it adds up to usd_per_month_delta."""
        listed = sum(round(i.usd_per_month_delta * 100) for i in self.impacts)
        return (round(self.usd_per_month_delta * 100) - listed) / 100

    @property
    def estimated_minutes(self) -> float:
        """The critical path through the steps: the header sums what the steps say they take, never
        more (a workload's own estimate may assume nodes to provision that no step makes)."""
        finish: dict[str, float] = {}
        for s in self.steps:
            start = max((finish[d] for d in s.step.depends_on if d in finish), default=0.0)
            finish[s.id] = start + s.estimated_minutes
        return round(max(finish.values(), default=0.0), 1)

    def groups(self) -> list[tuple[str, str, list[RunbookStep]]]:
        by_group: dict[str, list[RunbookStep]] = defaultdict(list)
        for s in self.steps:
            by_group[s.group].append(s)
        return [(name, title, by_group[name]) for name, title in GROUPS if by_group.get(name)]


def applied_fingerprint(applied: Plan) -> str:
    """What identifies the applied side of an incident: its inventory digest and placements."""
    text = canonical_json([applied.inventory_digest, [p.__dict__ for p in applied.placements]])
    return hashlib.sha256(text).hexdigest()


def incident_id(applied: Plan, events: Iterable[Event | str], fingerprint: str | None = None,
                serial: int | None = None) -> str:
    """One id for the applied plan and the events (`fingerprint`: applied_fingerprint(applied), if known); the
    events as written (a runbook's) give the same id. `serial`: the state serial the failover was computed at
    (its runbook's base_serial), so that the same site lost again after a rollback is another incident; a
    rehearsal or a drill has none."""
    ident: list[object] = [fingerprint or applied_fingerprint(applied), [str(e) for e in events]]
    text = canonical_json(ident if serial is None else [*ident, serial])
    return "inc-" + hashlib.sha256(text).hexdigest()[:12]


def _arrivals_by_site(impacts: Sequence[WorkloadImpact]) -> dict[str, list[str]]:
    sites: dict[str, list[str]] = defaultdict(list)
    for impact in impacts:
        for arrival in impact.arrivals:
            if impact.workload not in sites[arrival.site]:
                sites[arrival.site].append(impact.workload)
    return sites


def _describe(step: ExecStep, site: Site | None, arrivals: Mapping[str, list[str]], inventory: Inventory,
              grows: bool) -> tuple[str, float, tuple[str, ...], str]:
    """(group, estimated minutes, workloads, detail) of one of apply's steps inside a runbook."""
    kind = step.kind
    arriving = tuple(arrivals.get(step.site or "", ()))
    if kind == StepKind.CLOUD_POOLS:
        if grows and site is not None:
            return ("capacity", site.provision_minutes_effective, arriving,
                    f"scale the GPU pools of {site.name} to the failover plan; new nodes take about "
                    f"{site.provision_minutes_effective:g} min (provision_minutes)")
        return "release", 0.0, (), "shrink the GPU pools that the failover plan no longer uses"
    if kind in (StepKind.PREFLIGHT, StepKind.NODE_BASELINE):
        minutes = site.provision_minutes_effective if kind == StepKind.NODE_BASELINE and site and arriving else 0.0
        what = "check the hosts" if kind == StepKind.PREFLIGHT else "configure the hosts for their new workloads"
        return "capacity", minutes, arriving, f"{what} at {step.site}"
    if kind == StepKind.MODEL_SYNC:
        workload = step.id.rsplit("/", 1)[-1]
        w = next((x for x in inventory.workloads if x.name == workload), None)
        minutes = round(transfer_minutes(w.model_gb if w else None, site), 1) if site else 0.0
        size = f"{w.model_gb:g} GB" if w and w.model_gb else "the model bundle"
        link = f" at {site.uplink_mbps:g} Mbit/s" if site and site.uplink_mbps else ""
        return "models", minutes, (workload,), f"sync {size} of {workload} to its hosts at {step.site}{link}, verify, activate"
    if kind == StepKind.CLUSTER_QUEUES:
        return "admission", 0.0, (), "update the Kueue queues so the moved and degraded workloads are admitted"
    return "release", 0.0, (), step.title


def step_sites(step: ExecStep, inventory: Inventory) -> list[str]:
    """The sites a step acts on: its own; for a cluster's queues the cloud sites the cluster admits to, or,
    when it lists none (an on-prem cluster's, or a destroyed cluster's), the sites whose hosts form that
    cluster: a lost data centre takes its own cluster's API with it."""
    if step.site is not None:
        return [step.site]
    sites = step.params.get("sites")
    listed = [str(s) for s in sites] if isinstance(sites, list) else []
    cluster = step.params.get("cluster")
    if listed or not isinstance(cluster, str):
        return listed
    return [s.name for s in inventory.sites if s.cluster == cluster]


def select_steps(before: StepGraph, after: StepGraph) -> list[ExecStep]:
    """The target plan's steps that differ from what the current plan already made.

    A step's digest covers exactly what makes it run again (apply leaves the plan digest that
    cloud stacks are tagged with out of it), so an equal digest means nothing to do there.
    """
    done = {s.id: s.digest for s in before}
    return [s for s in after if done.get(s.id) != s.digest]


def build_runbook(inventory: Inventory, *, kind: RunbookKind, incident: str, events: Sequence[str], before: Plan,
                  after: Plan, impacts: Sequence[WorkloadImpact], before_steps: StepGraph, after_steps: StepGraph,
                  unreachable: Mapping[str, str], manual: Sequence[tuple[str, str, str]] = (),
                  verify_sites: Sequence[str] = (), base_serial: int | None = None,
                  notes: Sequence[str] = ()) -> Runbook:
    """Turn the difference between two step graphs into grouped, confirmed runbook steps.

    `unreachable`: site -> why; their steps are deferred. `manual`: (id, site, instruction).
    `verify_sites`: sites whose preflight runs first even if unchanged (a rollback's returning sites).
    """
    sites = {s.name: s for s in inventory.sites}
    arrivals = _arrivals_by_site(impacts)
    used_before = {(p.site, p.pool): p.used_gpus for p in before.pools}
    growing = {p.site for p in after.pools if p.used_gpus > used_before.get((p.site, p.pool), 0)}
    if kind is RunbookKind.ROLLBACK:
        # make before break: a cloud site that gives GPUs back releases them only once the queues that take its
        # work back have admitted it (the release group comes after admission), even if another of its pools grows
        used_after = {(p.site, p.pool): p.used_gpus for p in after.pools}
        growing -= {site for (site, pool), used in used_before.items() if used > used_after.get((site, pool), 0)}
    chosen: list[ExecStep] = []
    deferred: list[Deferred] = []
    for step in select_steps(before_steps, after_steps):
        where = step_sites(step, inventory)
        if where and all(site in unreachable for site in where):
            deferred.append(Deferred(step.id, where[0], f"{unreachable[where[0]]}; once it is back: {step.title}"))
        else:
            chosen.append(step)
    chosen_ids = {s.id for s in chosen}
    verify = [after_steps.get(f"preflight/{site}") for site in verify_sites
              if f"preflight/{site}" not in chosen_ids and f"preflight/{site}" in after_steps.ids]
    # a preflight waits for nothing: first, so that `chosen` stays in dependency order
    chosen = verify + chosen
    chosen_ids |= {s.id for s in verify}
    described: list[tuple[ExecStep, str, System, float, tuple[str, ...], str]] = []
    for i, (step_id, site, instruction) in enumerate(manual):
        params = {"instruction": instruction, "incident": incident, "site": site}
        step = make_step(step_id, MANUAL_KIND, instruction, params, site=site, phase=i)
        described.append((step, "contain", System.MANUAL, 0.0, (), instruction))
    for step in chosen:
        group, minutes, workloads, detail = _describe(step, sites.get(step.site or ""), arrivals, inventory,
                                                      step.site in growing)
        if step.kind == StepKind.PREFLIGHT and step.site in verify_sites:
            group, detail = "verify", f"check that the hosts of {step.site} answer and hold their GPUs again"
        described.append((step, group, _SYSTEM.get(step.kind, System.MANUAL), round(minutes, 1), workloads, detail))
    result = _gated(described, chosen_ids, incident, kind)
    graph = StepGraph.of(s.step for s in result)
    by_id = {s.id: s for s in result}
    return Runbook(kind, incident, inventory.name, tuple(events), base_serial, before, after, tuple(impacts),
                   tuple(by_id[s.id] for s in graph), tuple(deferred), tuple(notes))


def _gated(described: Sequence[tuple[ExecStep, str, System, float, tuple[str, ...], str]], chosen_ids: set[str],
           incident: str, kind: RunbookKind) -> list[RunbookStep]:
    """Steps in groups, each group behind a confirmation that waits for the whole group before it.

    Correct by construction: a step goes in its own group or in the latest group of the steps it
    waits for, whichever comes later (`described` is in dependency order), so every dependency
    points to the same group or an earlier one, and the gates chain the groups in their order.
    The graph is then acyclic whatever groups _describe picks (a shrinking cloud site's pools
    in "release" take the queues that wait for them to "release" too).
    """
    order = [name for name, _ in GROUPS]
    rank: dict[str, int] = {}
    placed: list[tuple[ExecStep, str, System, float, tuple[str, ...], str]] = []
    for step, group, system, minutes, workloads, detail in described:
        kept = tuple(sorted({d for d in step.depends_on if d in chosen_ids}))
        level = max([order.index(group), *(rank[d] for d in kept)])
        rank[step.id] = level
        placed.append((dataclasses.replace(step, depends_on=kept), order[level], system, minutes, workloads, detail))
    members: dict[str, list[str]] = defaultdict(list)
    for step, group, *_ in placed:
        members[group].append(step.id)
    gates: dict[str, str] = {}
    previous_group: list[str] = []
    result: list[RunbookStep] = []
    for group in (g for g in order if members.get(g)):
        title = dict(GROUPS)[group]
        gate = make_step(f"confirm/{group}", CONFIRM_KIND, f"confirm: {title.lower()}",
                         {"group": group, "title": title, "incident": incident, "kind": kind.value,
                          "steps": sorted(members[group])},
                         depends_on=previous_group, phase=order.index(group) * 10)
        gates[group] = gate.id
        result.append(RunbookStep(gate, group, System.MANUAL, 0.0, (), f"{len(members[group])} step(s): {title}"))
        previous_group = [gate.id, *members[group]]
    for step, group, system, minutes, workloads, detail in placed:
        # the digest stays apply's: a step done by a runbook is done for apply too, and vice versa
        wrapped = dataclasses.replace(step, depends_on=tuple(sorted({*step.depends_on, gates[group]})),
                                      phase=order.index(group) * 10 + 1 + step.phase)
        result.append(RunbookStep(wrapped, group, system, minutes, workloads, detail))
    return result


def failover_manual_steps(lost_sites: Iterable[str], down_links: Iterable[str], inventory: Inventory) -> list[
        tuple[str, str, str]]:
    """What an operator must do by hand when a site is lost or cut off."""
    kinds = {s.name: s.kind.value for s in inventory.sites}
    steps = [(f"manual/fence/{site}", site,
              f"fence {site} ({kinds.get(site, '')}): confirm it is down and keep it from coming back into "
              "service on its own; its steps wait for `hybridctl runbook rollback`") for site in sorted(lost_sites)]
    steps += [(f"manual/link-down/{site}", site,
               f"confirm that {site} has lost its uplink: its local inference keeps serving; nothing is shipped "
               "to it until the link is back") for site in sorted(down_links)]
    return steps
