"""The week an operation plans for: the one clock read behind every plan, failover and drill.

The core is pure and reads no clock (core/placement/timed_plan.py plan_week refuses a scheduled inventory
without a week), so each operation that plans names the week: the user's --week, else this one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hybridctl.core.week.segments import IsoWeek, week_of

if TYPE_CHECKING:
    from hybridctl.core.inventory.models import Inventory
    from hybridctl.core.plan.model import Plan


def this_week() -> IsoWeek:
    """The current ISO week, in UTC (the spec's default week of a plan)."""
    return week_of(datetime.now(UTC))


def planning_week(week: IsoWeek | None) -> IsoWeek:
    """The week named on the command line, else the current one."""
    return week if week is not None else this_week()


def planned(inventory: Inventory, week: IsoWeek | None = None, *, previous: Plan | None = None) -> Plan:
    """The inventory planned for `week` (the user's, else this one), as the independent checker accepts it: what
    every operation that plans an inventory acts on or shows (cost, synth, apply, the hosts of a site)."""
    from hybridctl.core.checker.verify import accepted, planner_violations
    from hybridctl.core.placement.planner import PlanOptions, plan

    options = PlanOptions(week=planning_week(week))
    made = plan(inventory, previous=previous, options=options)
    return accepted(made, planner_violations(inventory, made, options, previous))
