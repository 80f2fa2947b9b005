"""What a failover does to each workload: moved, degraded to its fallback, or down; when it is back.

Recovery time of a replica moved to a new pool (the spec's estimate) = the receiving site's
`provision_minutes` + `model_gb` transferred at the receiving site's `uplink_mbps`.
Checkpointed work resumes from its last checkpoint, so it loses at most `checkpoint_minutes`.
A workload that keeps at least one replica where it was never stops serving: its outage is 0.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from itertools import compress
from operator import attrgetter

from hybridctl.core.failover.replan import Replan
from hybridctl.core.identitymemo import IdentityMemo
from hybridctl.core.inventory.models import Inventory, Site, Workload, WorkloadType
from hybridctl.core.memo import RunMemo, Slot
from hybridctl.core.nameindex import named
from hybridctl.core.plan.delta import placement_delta
from hybridctl.core.plan.model import Plan, Unplaced
from hybridctl.core.pricing.incident import cash_by_workload
from hybridctl.core.pricing.totals import cost_change, usd_by_workload

MEGABITS_PER_GB = 8_000.0  # decimal gigabytes, as network links are rated
_STATELESS = frozenset({WorkloadType.REALTIME_INFERENCE, WorkloadType.BATCH_INFERENCE, WorkloadType.EMBEDDING})


class Status(StrEnum):
    UNCHANGED = "unchanged"
    MOVED = "moved"  # every replica still runs, some in new pools
    DEGRADED = "degraded"  # runs in its fallback shape, or with fewer replicas than before
    DOWN = "down"  # ran before, runs nowhere now
    STARTED = "started"  # ran nowhere before, runs now


def transfer_minutes(model_gb: float | None, site: Site) -> float:
    if not model_gb or site.uplink_mbps is None:
        return 0.0
    return model_gb * MEGABITS_PER_GB / site.uplink_mbps / 60.0


def recovery_minutes(workload: Workload, site: Site) -> float:
    """The spec's estimate for one replica of `workload` brought up at `site`."""
    return site.provision_minutes_effective + transfer_minutes(workload.model_gb, site)


@dataclass(frozen=True)
class Arrival:
    """Replicas of a workload that start in a pool where they did not run before."""

    site: str
    pool: str
    replicas: int
    gpu_type: str
    provision_minutes: float
    transfer_minutes: float

    @property
    def recovery_minutes(self) -> float:
        return round(self.provision_minutes + self.transfer_minutes, 1)


@dataclass(frozen=True)
class WorkloadImpact:
    workload: str
    tier: str
    type: str
    status: Status
    before: dict[str, int]  # pool -> replicas in the applied plan
    after: dict[str, int]  # pool -> replicas in the failover plan
    replicas_wanted: int
    replicas_running: int
    arrivals: tuple[Arrival, ...]
    fallback: str | None  # the fallback shape it runs in, when degraded to it
    reason: str
    outage_minutes: float | None  # None: it never stops serving (or is down: see status)
    recovery_minutes: float  # until every replica of the new shape runs
    rto_minutes: float | None
    work_lost_minutes_max: float | None  # checkpointed work; None when stateless or not checkpointed
    restarts_from_scratch: bool  # stateful work without checkpoints that moves
    usd_per_month_before: float  # its cash: pay-per-use machines it runs on and data it moves (incident.py)
    usd_per_month_after: float
    # survives_site_loss: false and its site was lost: losing it is expected (drills do not fail on it)
    expected_loss: bool = False

    @property
    def meets_rto(self) -> bool | None:
        """None: no objective to meet (or an expected loss that still runs). A workload down never meets its
        RTO, an expected loss neither (the spec: drills report it, and do not fail on it; the gate leaves
        expected losses out, drill.py)."""
        if self.rto_minutes is None:
            return None
        if self.status is Status.DOWN:
            return False
        if self.expected_loss:
            return None
        return self.outage_minutes is None or self.outage_minutes <= self.rto_minutes

    @property
    def loses_service(self) -> bool:
        return self.status is Status.DOWN

    @property
    def usd_per_month_delta(self) -> float:
        return cost_change(self.usd_per_month_before, self.usd_per_month_after)


def changed_workloads(before: Plan, after: Plan, run_memo: RunMemo | None = None) -> frozenset[str]:
    """Workloads with a placement that is not the very same object in both plans.

    A replan keeps the placements it pins as they are (scope.py), so on a fleet most workloads
    share every placement object with the applied plan: only the others can have changed (a
    workload whose placements are the same has no impact, whatever its data movements cost now).
    """
    return placement_delta(before, after, run_memo).workloads


def _pool_sites(sites: Sequence[Site], run_memo: RunMemo | None) -> dict[str, Site]:
    """Pool -> its site, kept in `run_memo` for the last lists of sites (a drill's inventory's)."""
    return _sites_of_pools(sites) if run_memo is None else run_memo[POOL_SITES].get(sites, _sites_of_pools)


def _sites_of_pools(sites: Sequence[Site]) -> dict[str, Site]:
    return {p.name: s for s in sites for p in s.pools}


Tally = tuple[dict[str, dict[str, int]], dict[str, float], dict[str, dict[str, str]]]


# every impacts() of a drill reads the base inventory's sites. 2: the last lists of sites.
POOL_SITES: Slot[IdentityMemo[Sequence[Site], dict[str, Site]]] = Slot("pool -> its site", lambda: IdentityMemo(2))
# 4: a drill's base plan, and a scenario's failover plan (read again by its rollback).
TALLIES: Slot[IdentityMemo[Plan, tuple[frozenset[str] | None, Tally]]] = Slot(
    "a plan's replicas, GPU types and cost by workload", lambda: IdentityMemo(4))
# a drill's base plan's cash by workload is read in every scenario; 4: as TALLIES
CASH: Slot[IdentityMemo[Plan, dict[str, int]]] = Slot("a plan's cash by workload, in cents", lambda: IdentityMemo(4))


def plan_cash_by_workload(plan: Plan, run_memo: RunMemo | None = None) -> dict[str, int]:
    """incident.cash_by_workload(plan), kept in `run_memo` for the last few plans."""
    return cash_by_workload(plan) if run_memo is None else run_memo[CASH].get(plan, cash_by_workload)


def _by_workload(result: Plan, only: Collection[str], run_memo: RunMemo | None) -> Tally:
    """Of the workloads `only` (at least), their replicas and GPU type per pool, and their cost.

    A failover's impacts and its rollback's read the same two plans, and a drill reads its base plan
    in every scenario: the last few plans' tallies are kept in `run_memo` (the TALLIES slot), each with
    the workloads tallied (None: every one). A plan read for other workloads again is tallied whole.
    """
    if run_memo is None:
        return _tally(result, only)
    known, tally = run_memo[TALLIES].get(result, lambda plan: (frozenset(only), _tally(plan, only)))
    if known is not None and not known.issuperset(only):
        known, tally = None, _tally(result, None)
        run_memo[TALLIES].put(result, (known, tally))
    return tally


def _tally(result: Plan, only: Collection[str] | None) -> Tally:
    replicas: dict[str, dict[str, int]] = defaultdict(dict)
    gpu: dict[str, dict[str, str]] = defaultdict(dict)
    placements, movements = result.placements, result.data_movements
    if only is not None:  # the few placements of `only` picked out of a fleet's without a Python step each
        placements = tuple(compress(placements, map(only.__contains__, map(_WORKLOAD, placements))))
        movements = tuple(compress(movements, map(only.__contains__, map(_WORKLOAD, movements))))
    for p in placements:
        replicas[p.workload][p.pool] = replicas[p.workload].get(p.pool, 0) + p.replicas
        gpu[p.workload][p.pool] = p.gpu_type
    return dict(replicas), usd_by_workload(placements, movements), dict(gpu)


_WORKLOAD = attrgetter("workload")
_DEGRADED = attrgetter("degraded")


def _reason(status: Status, workload: str, replan: Replan, before: dict[str, int], after: dict[str, int],
            returning: bool, unplaced_of: Mapping[str, list[Unplaced]], unplaced_before: int) -> str:
    """Why a workload's placement changed. `unplaced_before`: its replicas the applied plan had left unplaced,
    which are no loss of these events (and, if they run now, the change itself)."""
    disruption = replan.disruption
    if returning:
        return "returns to its pre-failover placement"
    unplaced = unplaced_of.get(workload, [])
    if status is Status.DOWN:
        return unplaced[0].reason if unplaced else "no capacity left for it"
    shrunk = [ch for pool in before if (ch := disruption.change_of(pool)) is not None
              and after.get(pool, 0) < before[pool]]
    causes = sorted({c for ch in shrunk if ch.capacity_after < ch.capacity_before for c in ch.causes})
    repriced = sorted({c for ch in shrunk if ch.capacity_after >= ch.capacity_before for c in ch.causes})
    cut = [why for key, why in disruption.cut_off.items() if key == workload or key.startswith(f"{workload}@")]
    parts: list[str] = []
    if cut:
        parts.append(cut[0])
    elif causes:
        parts.append(f"its capacity changed: {', '.join(causes)}")
    elif repriced:
        parts.append(f"under the new prices ({', '.join(repriced)}) moving saves more than the move threshold")
    elif status is Status.MOVED and unplaced_before and all(after.get(p, 0) >= n for p, n in before.items()):
        # nothing left its pool: replicas the applied plan could not place run now
        parts.append(f"{sum(after.values()) - sum(before.values())} replica(s) unplaced before these events now run")
    elif status in (Status.MOVED, Status.DEGRADED):
        prices_changed = any(c.usd_per_gpu_hour_after != c.usd_per_gpu_hour_before for c in disruption.pool_changes)
        parts.append("moved to make room for workloads the events displaced"
                     + (", or because under the new prices moving saves more than the move threshold"
                        if prices_changed else ""))
    if status is Status.STARTED:
        parts.append("capacity freed by the replan lets it run")
    if unplaced:
        why = unplaced[0].reason.removeprefix(f"{cut[0]}; ") if cut else unplaced[0].reason
        count = sum(u.replicas for u in unplaced)
        already = min(count, unplaced_before)
        parts.append(f"{count} replica(s) unplaced{f', {already} of them before these events too' if already else ''}"
                     f": {why}")
    return "; ".join(parts)


def _spread_note(tier: str, before: dict[str, int], after: dict[str, int], pool_site: dict[str, Site],
                 spread: int) -> str:
    """A fixed workload that spanned enough failure domains and no longer can: say so."""
    if tier != "fixed" or spread < 2:
        return ""
    needed = min(spread, sum(after.values()))
    domains_before = {pool_site[p].domain for p, n in before.items() if n > 0}
    domains_after = {pool_site[p].domain for p, n in after.items() if n > 0}
    if needed >= 2 and len(domains_after) < needed <= len(domains_before):
        return (f"; it now runs in {len(domains_after)} failure domain(s): spread_fixed_across {spread} cannot be "
                "met with the capacity that is left")
    return ""


def _wanted(workload: Workload, site_of: Mapping[str, str]) -> int:
    """Replicas a workload wants: a federated one wants its replicas at each site holding its data
    (as eligibility.demands() splits it, without classifying every workload again)."""
    if workload.type is WorkloadType.FEDERATED_TRAINING:
        return workload.replicas * len({site_of[n] for n in workload.datasets if n in site_of})
    return workload.replicas


def impacts(inventory: Inventory, replan: Replan, *, returning: bool = False,
            run_memo: RunMemo | None = None) -> list[WorkloadImpact]:
    """One entry per workload whose placement the failover (or, `returning`, its rollback) changes; `run_memo`
    keeps what a run reads again (a drill's base inventory and plan, a failover's plans read by its rollback)."""
    pool_site = _pool_sites(inventory.sites, run_memo)
    after_placements = replan.after.placements
    degraded_workloads = {p.workload: p for p in compress(after_placements, map(_DEGRADED, after_placements))}
    # a workload can be affected only if a placement of it changed, or it runs degraded
    changed = changed_workloads(replan.before, replan.after, run_memo) | set(degraded_workloads)
    before_all, _, _ = _by_workload(replan.before, changed, run_memo)
    after_all, _, gpu_after = _by_workload(replan.after, changed, run_memo)
    # cash, not amortized compute: a move between committed pools costs nothing (incident.py)
    usd_before = plan_cash_by_workload(replan.before, run_memo)
    usd_after = plan_cash_by_workload(replan.after, run_memo)
    site_of = {d.name: d.site for d in inventory.datasets}
    unplaced_of: dict[str, list[Unplaced]] = defaultdict(list)
    for u in replan.after.unplaced:
        unplaced_of[u.workload].append(u)
    unplaced_before: dict[str, int] = defaultdict(int)
    for u in replan.before.unplaced:
        unplaced_before[u.workload] += u.replicas
    fallbacks = {key.split("@")[0]: shape for key, shape in replan.fallbacks.items()}
    result: list[WorkloadImpact] = []
    for w in named(inventory.workloads, changed, run_memo):
        before, after = before_all.get(w.name, {}), after_all.get(w.name, {})
        degraded = w.name in degraded_workloads
        if before == after and not degraded:
            continue
        running_before, running_after = sum(before.values()), sum(after.values())
        if running_after == 0:
            status = Status.DOWN if running_before else Status.UNCHANGED
        elif running_before == 0:
            status = Status.STARTED
        elif degraded or running_after < running_before:
            status = Status.DEGRADED
        else:
            status = Status.MOVED
        if status is Status.UNCHANGED:
            continue
        # a fallback with another GPU count restarts every replica; fewer replicas only scale down
        reshaped = degraded and w.fallback is not None and w.fallback.gpu is not None \
            and w.fallback.gpu.count != w.gpu.count
        arrivals = tuple(
            Arrival(pool_site[pool].name, pool, n if reshaped else n - before.get(pool, 0), gpu_after[w.name][pool],
                    pool_site[pool].provision_minutes_effective, round(transfer_minutes(w.model_gb, pool_site[pool]), 1))
            for pool, n in sorted(after.items()) if reshaped or n > before.get(pool, 0))
        kept = 0 if reshaped else sum(min(n, after.get(pool, 0)) for pool, n in before.items())
        interrupted = running_before > 0 and kept == 0 and status is not Status.DOWN
        recovery = max((a.recovery_minutes for a in arrivals), default=0.0)
        outage = min((a.recovery_minutes for a in arrivals), default=0.0) if interrupted else None
        moved = bool(arrivals) and running_before > 0
        stateful = w.type not in _STATELESS
        result.append(WorkloadImpact(
            workload=w.name, tier=replan.after.tiers.get(w.name, ""), type=w.type.value, status=status,
            before=dict(sorted(before.items())), after=dict(sorted(after.items())),
            replicas_wanted=_wanted(w, site_of), replicas_running=running_after, arrivals=arrivals,
            fallback=fallbacks.get(w.name) if degraded else None,
            reason=_reason(status, w.name, replan, before, after, returning, unplaced_of,
                           unplaced_before.get(w.name, 0)) + _spread_note(
                replan.after.tiers.get(w.name, ""), before, after, pool_site, inventory.policies.spread_fixed_across),
            outage_minutes=outage, recovery_minutes=recovery, rto_minutes=w.rto_minutes,
            work_lost_minutes_max=w.checkpoint_minutes if moved and stateful and w.checkpoint_minutes else None,
            restarts_from_scratch=moved and stateful and w.checkpoint_minutes is None,
            usd_per_month_before=usd_before.get(w.name, 0) / 100,
            usd_per_month_after=usd_after.get(w.name, 0) / 100,
            expected_loss=not returning and w.name in replan.disruption.expected and status is not Status.STARTED))
    return result
