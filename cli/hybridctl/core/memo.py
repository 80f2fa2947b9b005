"""RunMemo: the values one run works out from its fleet's lists and plans again and again, kept for that run.

A run (a `failover` or `runbook rollback` command, a drill) makes one and passes it down to the
functions that read it; none is made at import, so nothing outlives the run or leaks from one
run, or one test, into another. A function called without one works its value out afresh: the
same value, only slower.

Each memo is told its inputs apart by identity and holds them (identitymemo.py), so an id never
passes to another object meanwhile; what they keep must be immutable in practice (inventories and
plans are never changed in place). A drill makes its RunMemo before its scenarios fork into worker
processes (drivers/parallel.py): what the base inventory and plan filled in is every worker's.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hybridctl.core.deploy.stackconfig import plan_digest
from hybridctl.core.identitymemo import IdentityMemo

if TYPE_CHECKING:
    from hybridctl.core.failover.impact import Tally
    from hybridctl.core.failover.runbook import Runbook
    from hybridctl.core.inventory.models import Site
    from hybridctl.core.plan.delta import PlacementDelta
    from hybridctl.core.plan.model import Placement, Plan


class RunMemo:
    """One run's memos, each the most recently read entries first (a drill's base entries stay while each
    scenario's come and go)."""

    def __init__(self) -> None:
        # nameindex.py: an inventory list's entries by name (and position). A drill reads one fleet's workloads
        # by name in every scenario (the impacts of its failover and rollback, the checker); each dict is a Python
        # step per workload. 6: the base inventory's lists, and the few lists of the scenario at hand.
        self.names: IdentityMemo[Sequence[Any], tuple[dict[str, int], dict[str, Any]]] = IdentityMemo(6)
        # plan/delta.py: the placements that differ between two plans (placement_delta), each a pass over both.
        # A scenario asks it of the same pair many times (impacts, checker, the checked inventory, the steps); the
        # replan tells it what it re-placed (delta.remember). 8 pairs (delta._KEPT), asked either way round: a
        # drill's scenario has two (failover and rollback), one and the same reversed.
        self.deltas: list[PlacementDelta] = []
        # plan/delta.py: a plan's placements by pool and by workload (by_pool_and_workload). A drill's base plan's
        # are read so in every scenario (the checker's delta, the pinned work's pool usage). 2: the last two seen.
        self.grouped: IdentityMemo[Sequence[Placement],
                                   tuple[dict[str, list[Placement]], dict[str, list[Placement]]]] = IdentityMemo(2)
        # failover/impact.py: pool -> its site, for an inventory's sites (every impacts() of a drill reads the base
        # inventory's). 2: the last lists of sites.
        self.pool_sites: IdentityMemo[Sequence[Site], dict[str, Site]] = IdentityMemo(2)
        # failover/impact.py: a plan's replicas, GPU types and cost by workload, of the workloads tallied (None:
        # every one). 4: a drill's base plan, and a scenario's failover plan (read again by its rollback).
        self.tallies: IdentityMemo[Plan, tuple[frozenset[str] | None, Tally]] = IdentityMemo(4)
        # failover/serialize.py: a runbook's JSON text (0.7 s of encoding for a fleet's two plans). The failover
        # command may print it, write it to --out and keep it with the state. 2: the last runbooks.
        self.runbook_texts: IdentityMemo[Runbook, str] = IdentityMemo(2)
        # deploy/stackconfig.py: a plan file's digest (a few tenths of a second of serialising a fleet's plan). A
        # runbook tags the applied plan's stacks and the failover plan's, its rollback the same two, and the state
        # records the failover plan's. 4: the last few plans.
        self.digests: IdentityMemo[Plan, str] = IdentityMemo(4)

    def plan_digest(self, plan: Plan) -> str:
        """stackconfig.plan_digest(plan), kept: the digest of the plan file's bytes. Bound, it is what the step
        builders take to tag a plan's stacks with (failover.derived_steps)."""
        return self.digests.get(plan, plan_digest)

    def remember_digest(self, plan: Plan, digest: str) -> None:
        """`plan`'s digest is known (a state records its applied plan's): plan_digest() need not work it out."""
        self.digests.put(plan, digest)
