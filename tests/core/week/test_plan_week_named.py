"""The core is told its week: planning a scheduled inventory without one is the caller's bug (the operation names
it: operations/week.py), refused rather than answered with the calendar's week, whose segments change with
daylight saving. An inventory without `schedule` needs none (it plans as in revision 2)."""

from __future__ import annotations

import pytest
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.placement.timed_plan import plan_week
from support.cases import placements_of
from support.examples import BASE
from support.plan_week import AT_PLAN_WEEK, PLAN_WEEK, PLAN_WEEK_TEXT
from support.timed import DAY, HAND, load

_WINDOWS = '    schedule:\n      windows: [{days: mon-fri, from: "08:00", to: "20:00"}]\n'


def test_a_scheduled_inventory_is_refused_without_a_week() -> None:
    with pytest.raises(ValueError, match=r"PlanOptions\.week"):
        plan(load(100))
    with pytest.raises(ValueError, match=r"PlanOptions\.week"):
        plan_week(load(100), None)


def test_a_scheduled_inventory_plans_for_the_week_named() -> None:
    result = plan(load(100), options=AT_PLAN_WEEK)
    assert result.week == PLAN_WEEK_TEXT
    assert [pl.segment_hours[s] for pl in placements_of(result, "day-service") for s in DAY] == [12.0] * 5


def test_an_inventory_without_schedule_needs_no_week() -> None:
    inventory = load_sources([Source("inv.yaml", BASE)]).inventory
    assert plan_week(inventory, None) is None
    assert plan(inventory).week == plan(inventory, options=PlanOptions(week=PLAN_WEEK)).week == ""


def test_a_failover_names_the_week_an_untimed_applied_plan_lacks() -> None:
    # applied before the inventory had a schedule: the applied plan names no week, so the replan plans for the
    # one the operation names (FailoverOptions.week), and without one it is refused like plan()
    untimed = load_sources([Source("inv.yaml", HAND.replace(_WINDOWS, "").replace("HOURS", "400"))]).inventory
    applied = plan(untimed)
    assert applied.week == "" and not applied.segments
    scheduled = load(100)
    events = parse_events(["capacity", "rent=50%"])
    with pytest.raises(ValueError, match=r"PlanOptions\.week"):
        replan(scheduled, applied, events)
    result = replan(scheduled, applied, events, FailoverOptions(week=PLAN_WEEK))
    assert result.after.week == PLAN_WEEK_TEXT and result.after.segments
