"""What an incident costs: the change in cash from the applied plan to a failover or drill plan (the
spec's "Incidents are cash too").

Committed capacity is paid whether it runs anything or not, and still when it is lost (the hardware is
owned, the reservation billed): losing an owned site never shows as a saving. So the cost change of a
failover is the change in what is bought by use, pay-per-use machines and data movement, and the
committed capacity lost is shown beside it (GPUs and what they still cost). Each workload's part is its
share of the pay-per-use machines it runs on (shares.py: its compute there and the rounding it carries)
plus its data movement; the parts of a plan are rounded together to its pay-per-use + data (cents.py),
so the workloads' changes, and the teams', add up to the plan's change to the cent.

Revision 4 splits the change in two (every view reads the split here): the **work stopped**, the cash the
replicas that no longer run paid before (each workload named: all of it for a workload down, the fall of
its cash for one that runs fewer replicas), and the **extra spend**, the rest of the change: what the fleet
pays more (or less) to keep the rest running. A fall in cash that is only work stopped is no saving, and no
view may show it as one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter

from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.cents import allocate_cents, to_cents
from hybridctl.core.pricing.shares import placement_shares

NO_TEAM = "(no team)"


def bought_by_use_cents(plan: Plan) -> int:
    """The plan's pay-per-use machines + data movement, in cents (what an incident can change)."""
    return to_cents(plan.pay_per_use_usd_per_month + plan.data_usd_per_month)


def cash_by_workload(plan: Plan) -> dict[str, int]:
    """Each workload's pay-per-use machines (compute and the rounding it carries) + data movement, in
    cents adding up to bought_by_use_cents(plan). A workload only in committed pools, moving no data, has 0."""
    committed = {p.pool for p in plan.pools if p.committed}
    usd: dict[str, float] = {}
    for pl, share in zip(plan.placements, placement_shares(plan, rounding=True), strict=True):
        usd[pl.workload] = usd.get(pl.workload, 0.0) + (0.0 if pl.pool in committed else share)
    for m in plan.data_movements:
        usd[m.workload] = usd.get(m.workload, 0.0) + m.usd_per_month
    return allocate_cents(usd, bought_by_use_cents(plan))


@dataclass(frozen=True)
class LostCommitted:
    """Committed capacity an incident takes away, still paid."""

    pool: str
    gpus: int
    usd_per_month: float


@dataclass(frozen=True)
class CashChange:
    before_usd_per_month: float  # the applied plan's cash
    after_usd_per_month: float  # the incident plan's cash: the committed cost as before, lost capacity included
    by_workload: Mapping[str, float]  # the workloads whose cash changes (non-zero), adding up to usd_per_month
    lost: tuple[LostCommitted, ...]
    # the work stopped: each workload down (with all the cash it paid before; 0 on committed capacity alone) or
    # running fewer replicas (with the fall of its cash), a fall of cash that is no saving
    stopped: Mapping[str, float] = field(default_factory=dict)

    @property
    def usd_per_month(self) -> float:
        return round(self.after_usd_per_month - self.before_usd_per_month, 2)

    @property
    def stopped_usd_per_month(self) -> float:
        """The cash of the work stopped (≥ 0): the change falls by this much because work no longer runs."""
        return sum(to_cents(usd) for usd in self.stopped.values()) / 100

    @property
    def extra_usd_per_month(self) -> float:
        """The extra spend: the change of the work that keeps running (moved, added, or sharing machines with
        it); with the work stopped, usd_per_month = extra_usd_per_month − stopped_usd_per_month, to the cent."""
        return (to_cents(self.usd_per_month) + to_cents(self.stopped_usd_per_month)) / 100

    @property
    def lost_gpus(self) -> int:
        return sum(x.gpus for x in self.lost)

    @property
    def lost_usd_per_month(self) -> float:
        return round(sum(x.usd_per_month for x in self.lost), 2)

    def by_team(self, teams: Mapping[str, str]) -> dict[str, float]:
        """The change per team (workloads without one under NO_TEAM), adding up to usd_per_month."""
        cents: dict[str, int] = defaultdict(int)
        for workload, usd in self.by_workload.items():
            cents[teams.get(workload) or NO_TEAM] += to_cents(usd)
        return {team: c / 100 for team, c in sorted(cents.items()) if c}


def lost_committed(before: Plan, after: Plan) -> tuple[LostCommitted, ...]:
    """Committed pools of `before` with less capacity in `after`: the GPUs lost and what they cost."""
    now = {p.pool: p.capacity_gpus for p in after.pools}
    lost: list[LostCommitted] = []
    for p in before.pools:
        gone = p.capacity_gpus - now.get(p.pool, 0)
        if p.committed and gone > 0 and p.capacity_gpus > 0:
            lost.append(LostCommitted(p.pool, gone, round(p.usd_per_month * gone / p.capacity_gpus, 2)))
    return tuple(lost)


def _replicas(plan: Plan, only: Collection[str]) -> dict[str, int]:
    """Replicas running per workload of `only`, picked out of a fleet's placements without a Python step each."""
    counts: dict[str, int] = defaultdict(int)
    for p in compress(plan.placements, map(only.__contains__, map(_WORKLOAD, plan.placements))):
        counts[p.workload] += p.replicas
    return counts


def _stopped_cents(before: Plan, after: Plan, was: Mapping[str, int], now: Mapping[str, int],
                   changed: Collection[str]) -> dict[str, int]:
    """The work stopped, per workload, in cents: the cash the replicas that no longer run paid before. A workload
    down (a line in cash_by_workload before and none now: it runs nowhere) stops all it paid; one that runs fewer
    replicas, the fall of its cash (its replicas need not have paid alike: the lost ones are often the rented
    ones), and a rise of it is extra spend. Only workloads whose cash changed, or that are down, are looked at:
    fewer replicas on committed capacity alone stop no cash."""
    down = set(was) - set(now)
    fewer = set(changed) - down
    replicas_before, replicas_after = _replicas(before, fewer), _replicas(after, fewer)
    stopped = {w: was[w] for w in down}
    for w in fewer:
        ran, runs = replicas_before.get(w, 0), replicas_after.get(w, 0)
        if runs < ran and now.get(w, 0) < was.get(w, 0):
            stopped[w] = was.get(w, 0) - now.get(w, 0)
    return dict(sorted(stopped.items()))


_WORKLOAD = attrgetter("workload")


def cash_change(before: Plan, after: Plan, before_cents: Mapping[str, int] | None = None,
                after_cents: Mapping[str, int] | None = None) -> CashChange:
    """The change in cash from `before` (the applied plan) to `after` (a failover or drill plan): committed
    cost kept as `before` pays it; `before_cents`, `after_cents`: their cash_by_workload, when known (a drill's)."""
    was = cash_by_workload(before) if before_cents is None else before_cents
    now = cash_by_workload(after) if after_cents is None else after_cents
    by_workload = {w: (now.get(w, 0) - was.get(w, 0)) / 100 for w in sorted(set(was) | set(now))
                   if now.get(w, 0) != was.get(w, 0)}
    stopped = {w: c / 100 for w, c in _stopped_cents(before, after, was, now, by_workload).items()}
    start = to_cents(before.cash_usd_per_month)
    end = start + bought_by_use_cents(after) - bought_by_use_cents(before)
    return CashChange(start / 100, end / 100, by_workload, lost_committed(before, after), stopped)
