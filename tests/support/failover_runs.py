"""The failover as production builds it (core/failover/pipeline.py), in the shape the tests read: its runbook and
its replan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hybridctl.core.failover.events import Event
from hybridctl.core.failover.pipeline import failover, rollback
from hybridctl.core.failover.plan_steps import StepsFor
from hybridctl.core.failover.replan import FailoverOptions, Replan
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan


def failed_over(inventory: Inventory, applied: Plan, events: Sequence[Event], *, steps_for: StepsFor | None = None,
                options: FailoverOptions | None = None, **pipeline: Any) -> tuple[Runbook, Replan]:
    """pipeline.failover of `applied` under `events`, apply's steps as `steps_for` builds them (default: a drill's)."""
    made = failover(inventory, applied, events, options or FailoverOptions(), FailoverRun(steps_for=steps_for), **pipeline)
    return made.built(), made.replan


def rollback_of(inventory: Inventory, runbook: Runbook, current: Plan, *, steps_for: StepsFor,
                returning_sites: Sequence[str]) -> Runbook:
    """pipeline.rollback of a failover runbook, as the `runbook rollback` command and a drill build it."""
    return rollback(inventory, runbook, current, FailoverRun(steps_for=steps_for), returning_sites=returning_sites)
