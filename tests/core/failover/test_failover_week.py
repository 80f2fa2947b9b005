"""Failover over the plan's week (inventory revision 3, "Time"; issue 31 item 6): a lost site is lost in
every segment, the replan keeps the applied plan's week, and the checker's time rules hold for it."""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import replan
from support.week_fleet import SUMMER, week_fleet, week_plan


@pytest.fixture(scope="module")
def fleet():
    inventory = week_fleet()
    return inventory, week_plan(inventory)


def test_the_applied_plan_is_as_worked_by_hand(fleet) -> None:
    _, applied = fleet
    assert applied.week == SUMMER and not applied.unplaced
    # the service's daytime replicas cost the same on either owned site (both $2/GPU-h, committed): the
    # solver may put one or three of them on dc-a (whole machines for the evaluation's gang, revision 4,
    # changed its pick from one to three); the failovers below hold for either
    placed = sorted((p.workload, p.pool, p.replicas) for p in applied.placements)
    assert placed in ([("day-service", "a-h100", 1), ("day-service", "b-h100", 2), ("nightly-train", "a-h100", 1),
                       ("weekly-eval", "a-h100", 1)],
                      [("day-service", "a-h100", 3), ("nightly-train", "a-h100", 1), ("weekly-eval", "a-h100", 1)])


@pytest.mark.parametrize("site", ["dc-a", "dc-b"])
def test_the_replan_keeps_the_applied_week_and_passes_the_time_rules(fleet, site: str) -> None:
    inventory, applied = fleet
    result = replan(inventory, applied, parse_events([f"site-lost {site}"]))
    after = result.after
    # the week the plan was made for, not the week the failover runs in (its daylight saving differs)
    assert after.week == applied.week == SUMMER
    assert after.segments == applied.segments
    assert all(len(p.segment_hours) == len(after.segments) for p in after.placements)
    assert check_plan(result.disruption.inventory, after) == []


@pytest.mark.parametrize("site", ["dc-a", "dc-b"])
def test_a_lost_site_is_lost_in_every_segment(fleet, site: str) -> None:
    inventory, applied = fleet
    after = replan(inventory, applied, parse_events([f"site-lost {site}"])).after
    assert not [p for p in after.placements if p.site == site]
    assert all(sum(p.segment_hours) > 0 for p in after.placements)


def test_losing_dc_b_moves_the_service_into_the_owned_daytime_room(fleet) -> None:
    # by day dc-a holds one 4-GPU service replica of 16 GPUs: the two from dc-b fit beside it, and
    # the nightly fine-tune and the evaluation keep their hours outside the day (counting the pinned
    # work's GPUs over the whole week, 20 of 16, would rent a p5 instead)
    inventory, applied = fleet
    after = replan(inventory, applied, parse_events(["site-lost dc-b"])).after
    assert sorted((p.workload, p.pool, p.replicas) for p in after.placements) == [
        ("day-service", "a-h100", 3), ("nightly-train", "a-h100", 1), ("weekly-eval", "a-h100", 1)]
    assert not after.unplaced
    assert next(u for u in after.pools if u.pool == "rent").usd_per_month == 0


def test_losing_dc_a_rents_what_dc_b_cannot_hold(fleet) -> None:
    # dc-b's 8 GPUs hold two service replicas by day and the fine-tune at night; the third replica
    # rents a p5 for the service's 60 h a week (8 GPUs x 60 h x 730/168 x $10), paid by the segment
    inventory, applied = fleet
    result = replan(inventory, applied, parse_events(["site-lost dc-a"]))
    after = result.after
    assert sorted((p.workload, p.pool, p.replicas) for p in after.placements) == [
        ("day-service", "b-h100", 2), ("day-service", "rent", 1), ("nightly-train", "b-h100", 1),
        ("weekly-eval", "b-h100", 1)]
    rent = next(u for u in after.pools if u.pool == "rent")
    assert rent.usd_per_month == pytest.approx(8 * 60 * 730 / 168 * 10, abs=0.01)
