"""Which placements differ between two plans of one fleet, worked out once per run and shared.

A failover plan keeps most placements as the very objects of the applied plan (failover/scope.py),
so "what changed" is the placements that are not the same objects in both plans. A drill's
scenario asks that of the same two plans many times over: the impacts of the failover and of its
rollback, the checker's delta, the inventory the plan is checked against, the steps. Each asking
would cost a pass over the fleet's placements; placement_delta() makes it one pass per pair of plans
of a run that passes its RunMemo (core/memo.py: the DELTAS slot).

The answer depends on the two placement tuples alone, which the memo holds while it keeps them
(so no identity passes to another tuple meanwhile); a plan rebuilt with dataclasses.replace keeps
its placements, and so its delta.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from operator import attrgetter

from hybridctl.core.identitymemo import IdentityMemo
from hybridctl.core.memo import RunMemo, Slot
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.replaced import not_in

_WORKLOAD = attrgetter("workload")
_SITE = attrgetter("site")
_POOL = attrgetter("pool")
_KEPT = 8  # pairs remembered: a drill's scenario has two (failover and rollback), one and the same reversed


@dataclass(frozen=True, eq=False)
class PlacementDelta:
    before: tuple[Placement, ...]  # the earlier plan's placements
    after: tuple[Placement, ...]
    removed: tuple[Placement, ...]  # in `before`, not (the very objects) in `after`, in `before`'s order
    added: tuple[Placement, ...]  # in `after`, not (the very objects) in `before`, in `after`'s order

    @staticmethod
    def of(before: Sequence[Placement], after: Sequence[Placement]) -> PlacementDelta:
        was, now = tuple(before), tuple(after)
        if was is now:  # a failover that placed nothing keeps the applied plan's very tuple
            return PlacementDelta(was, now, (), ())
        return PlacementDelta(was, now, tuple(not_in(was, now)), tuple(not_in(now, was)))

    @property
    def reversed(self) -> PlacementDelta:
        return PlacementDelta(self.after, self.before, self.added, self.removed)

    @cached_property
    def workloads(self) -> frozenset[str]:
        """Workloads with a placement that is not the very same object in both plans: only these can
        have moved (the others keep every placement as it was)."""
        return frozenset(map(_WORKLOAD, self.removed)) | frozenset(map(_WORKLOAD, self.added))

    @cached_property
    def sites(self) -> frozenset[str]:
        return frozenset(map(_SITE, self.removed)) | frozenset(map(_SITE, self.added))

    @cached_property
    def pools(self) -> frozenset[str]:
        return frozenset(map(_POOL, self.removed)) | frozenset(map(_POOL, self.added))


# A scenario asks for the same pair many times (impacts, checker, the checked inventory, the steps); the replan
# tells it what it re-placed (remember). The last _KEPT pairs, asked either way round.
DELTAS: Slot[list[PlacementDelta]] = Slot("the placements that differ between two plans", list)
# A drill's base plan's placements are read by pool and by workload in every scenario (the checker's delta, the
# pinned work's pool usage). 2: the last two seen.
GROUPED: Slot[IdentityMemo[Sequence[Placement], tuple[dict[str, list[Placement]], dict[str, list[Placement]]]]] = \
    Slot("a plan's placements by pool and by workload", lambda: IdentityMemo(2))


def remember(delta: PlacementDelta, run_memo: RunMemo) -> None:
    """Keep a delta its maker knows without the passes (a replan knows what it re-placed)."""
    kept = run_memo[DELTAS]
    kept.insert(0, delta)
    del kept[_KEPT:]


def placement_delta(before: Plan, after: Plan, run_memo: RunMemo | None = None) -> PlacementDelta:
    """The placements that differ between the two plans (each a pass over them, done once per pair of a run
    that passes `run_memo`)."""
    was, now = before.placements, after.placements
    if run_memo is None:
        return PlacementDelta.of(was, now)
    for known in run_memo[DELTAS]:
        if known.before is was and known.after is now:
            return known
        if known.before is now and known.after is was:
            return known.reversed
    found = PlacementDelta.of(was, now)
    remember(found, run_memo)
    return found


def by_pool_and_workload(placements: Sequence[Placement], run_memo: RunMemo | None = None) -> tuple[
        dict[str, list[Placement]], dict[str, list[Placement]]]:
    """The placements by pool and by workload, each in their order: a drill's base plan's are read so in
    every scenario (the checker's delta, the pinned work's pool usage), and kept in `run_memo` (the last two)."""
    return _group(placements) if run_memo is None else run_memo[GROUPED].get(placements, _group)


def _group(placements: Sequence[Placement]) -> tuple[dict[str, list[Placement]], dict[str, list[Placement]]]:
    on_pool: dict[str, list[Placement]] = {}
    of_workload: dict[str, list[Placement]] = {}
    for pl in placements:
        on_pool.setdefault(pl.pool, []).append(pl)
        of_workload.setdefault(pl.workload, []).append(pl)
    return on_pool, of_workload

