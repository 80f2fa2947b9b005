"""FailoverRun: what one run (a `failover` or `runbook rollback` command, a drill) shares among what it builds.

Made by the operation (or, for its scenarios, the drill) and passed down as one object: the
pipeline (pipeline.py), the replan, a drill's scenarios read it. Nothing in it outlives the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hybridctl.core.memo import RunMemo

if TYPE_CHECKING:
    from hybridctl.core.checker.check import PlacementMemo, PlanCheck
    from hybridctl.core.failover.demand_cache import DemandCache
    from hybridctl.core.failover.plan_steps import StepsFor


@dataclass(frozen=True)
class FailoverRun:
    """`memo`: the run's memos (memo.py), which the replan, the checker, the impacts and the steps read
    again. `steps_for`: apply's steps for a plan (plan_steps.py; None: a drill's, plain_steps of the
    memo, made for each failover); a failover builds each plan's once.

    A drill adds what its scenarios share, all worked out from its base plan before they run (and
    before any worker process forks): `demand_cache` (the replans'), `base_check` (the checker's
    verdict on it: a failover plan is then checked where it differs from it, with `check_memo`)
    and `fingerprint` (applied_fingerprint, for the incident's id).
    """

    memo: RunMemo = field(default_factory=RunMemo)
    steps_for: StepsFor | None = None
    demand_cache: DemandCache | None = None
    base_check: PlanCheck | None = None
    check_memo: PlacementMemo | None = None
    fingerprint: str | None = None
