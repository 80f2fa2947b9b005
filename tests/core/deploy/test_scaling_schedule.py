"""Scheduled scaling of pay-per-use node groups over the plan's week (issue 31 item 5), worked by hand.

CLOCK: one cloud site (provision_minutes 30), an on-demand and a spot p5 pool (8 GPUs a machine):
- day-service, 2 replicas x 8 GPUs, Monday to Friday 09:00-17:00 Europe/Amsterdam: on demand, 2 machines.
  In 2026-W43 (Oct 19-25, summer time, UTC+2) that is 07:00-15:00 UTC; in 2026-W44 (Oct 26-Nov 1, winter
  time, UTC+1) 08:00-16:00 UTC (daylight saving ends on Sunday Oct 25, 01:00 UTC).
- nightly, 1 x 8 GPUs, preemptible, Monday to Friday 22:00-02:00 UTC (past midnight): spot, 1 machine.
- weekly-report, 1 x 8 GPUs, preemptible, Monday 00:00-03:00 UTC: spot, 1 machine.
So, with 30 minutes' lead, on demand: up to 2 at 07:30 UTC (W44), down to 0 at 16:00, each weekday. Spot:
up to 1 on Sunday 23:30 (the lead crosses Monday 00:00), down at Monday 03:00, up at 21:30 each weekday,
down at 02:00 the next morning; no action at Monday 00:00 (the count does not change there: the
weekly report's week starts where Sunday's lead began).
CLOCK's two uneven pools (rent-a100, rent-l4: UTC windows apart from these) are worked in
tests/core/week/test_segment_machines.py; here they are only in the tests of the whole fleet.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hybridctl.core.deploy.scaling_schedule import (
    MAX_ACTIONS,
    pool_schedules,
    segment_needs,
    weekly_actions,
    with_schedules,
)
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.deploy.stackdiff import diff_stack_configs
from hybridctl.core.deploy.stackvalues import ScalingAction
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.schedule import MINUTES_PER_WEEK
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.week.segments import parse_iso_week
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from support.clock import CLOCK, clock, planned
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

WEEKDAYS = range(1, 6)  # cron's Monday to Friday


def schedule(week: str, pool: str) -> list[tuple[str, int, int, int]]:
    (site,) = stack_configs(clock(), planned(week), "sha256:test").gpu_pools
    group = next(p for p in site.node_pools if p.name == pool)
    return [(a.recurrence, a.min_size, a.desired_size, a.max_size) for a in group.schedule]


SPOT = [("0 3 * * 1", 0, 0, 4), *[row for d in WEEKDAYS for row in (
    (f"30 21 * * {d}", 1, 1, 4), (f"0 2 * * {d + 1}", 0, 0, 4))], ("30 23 * * 0", 1, 1, 4)]


RENT = [row for d in WEEKDAYS for row in ((f"30 8 * * {d}", 2, 2, 8), (f"0 17 * * {d}", 0, 0, 8))]


def test_the_on_demand_pool_follows_the_day_service_on_amsterdam_s_clock_in_winter_time() -> None:
    """09:00-17:00 Europe/Amsterdam with 30 minutes' lead: 08:30 and 17:00 there (07:30 and 16:00 UTC)."""
    assert schedule("2026-W44", "rent") == RENT
    (site,) = stack_configs(clock(), planned("2026-W44"), "sha256:test").gpu_pools
    assert {a.zone for p in site.node_pools if p.name == "rent" for a in p.schedule} == {"Europe/Amsterdam"}


def test_a_summer_week_s_plan_has_the_same_scheduled_actions() -> None:
    """Before: the actions were UTC times of the plan's week: a winter plan left in place in summer scaled
    an hour late (06:30 UTC is 08:30 in Amsterdam's summer)."""
    assert schedule("2026-W43", "rent") == RENT
    summer = stack_configs(clock(), planned("2026-W43"), "sha256:test").gpu_pools[0]
    winter = stack_configs(clock(), planned("2026-W44"), "sha256:test").gpu_pools[0]
    assert [p.values().get("schedule") for p in summer.node_pools] == [p.values().get("schedule") for p in winter.node_pools]


@pytest.mark.parametrize("week", ["2026-W43", "2026-W44"])
def test_the_spot_pool_runs_the_night_past_midnight_and_leads_across_monday(week: str) -> None:
    # UTC windows: daylight saving moves none of them
    assert schedule(week, "rent-spot") == SPOT


def held_at(actions: tuple[ScalingAction, ...], minute: int) -> int:
    """The desired size in force at `minute` of the week: the last action before it, the week repeating."""
    before = [a for a in actions if a.minute <= minute]
    return (before[-1] if before else actions[-1]).desired_size


@pytest.mark.parametrize("week", ["2026-W43", "2026-W44"])
def test_every_segment_has_its_machines_from_its_lead_time_to_its_end(week: str) -> None:
    result = planned(week)
    (site,) = clock().sites
    lead = round(site.provision_minutes_effective)  # 30
    for pool in ("rent", "rent-spot"):
        actions = pool_schedules(clock(), result, {("aws", pool): 8})[("aws", pool)]
        needs = segment_needs(result)[pool]
        for segment, (_, desired) in zip(result.segments, needs, strict=True):
            start, end = round(segment.start_hour * 60), round(segment.end_hour * 60)
            for minute in range(start - lead, end, 15):
                assert held_at(actions, minute % MINUTES_PER_WEEK) >= desired, (pool, segment, minute)
        # and nothing where no segment needs it: each weekday 16:00-07:30 (W44) the on-demand pool is at 0
        if pool == "rent" and week == "2026-W44":
            assert {held_at(actions, d * 1440 + m) for d in range(5) for m in range(16 * 60, 24 * 60, 15)} == {0}


def test_actions_at_the_same_time_are_merged_and_a_short_gap_inside_the_lead_is_no_scale_down() -> None:
    # 1 machine 00:00-02:00, none 02:00-02:15, 2 from 02:15 to the week's end; 30 minutes' lead: the group
    # goes from 1 to 2 at 01:45 and stays there through the gap; back to 1 at Monday 00:00.
    actions = weekly_actions((0, 120, 135), ((1, 1), (0, 0), (2, 2)), 30, 8)
    assert actions == (ScalingAction(0, 1, 1, 8), ScalingAction(105, 2, 2, 8))


def test_no_action_where_the_count_does_not_change() -> None:
    assert weekly_actions((0, 600, 1200), ((2, 2), (2, 2), (2, 2)), 30, 8) == ()
    assert weekly_actions((0, 600), ((0, 1), (1, 1)), 10_080, 8) == ()  # a week's lead: always the most


def test_a_week_of_more_resizes_than_aws_allows_is_coarsened_never_below_a_segments_need() -> None:
    # 320 stretches of 30 minutes, alternately 0 and 1..3 machines: 320 resizes; AWS allows 125
    starts = tuple(range(0, 320 * 30, 30))
    needs = tuple((0, 0) if k % 2 else (k % 3 + 1, k % 3 + 1) for k in range(320))
    actions = weekly_actions(starts, needs, 0, 8)
    assert MAX_ACTIONS - 2 <= len(actions) <= MAX_ACTIONS == 125  # a fold may make two stretches one
    for start, (_, desired) in zip(starts, needs, strict=True):
        assert held_at(actions, start) >= desired and held_at(actions, start + 29) >= desired, start
    assert held_at(actions, 320 * 30 + 60) == 0  # the rest of the week, where nothing runs


def test_sizes_stay_within_the_groups_max() -> None:
    assert weekly_actions((0, 600), ((0, 0), (5, 12)), 0, 8) == (ScalingAction(0, 0, 0, 8), ScalingAction(600, 5, 8, 8))


def test_deferrable_replicas_have_their_machines_while_they_may_run_and_shared_ones_stay_up() -> None:
    # the nightly job deferrable: 2 of its 4 hours a night; the queue picks them, so its machine is up all
    # window (desired) but not held up (min)
    text = CLOCK.replace('      windows: [{days: mon-fri, from: "22:00", to: "02:00"}]',
                         '      windows: [{days: mon-fri, from: "22:00", to: "02:00"}]\n    hours_per_month: 43.452381')
    inventory = load_sources([Source("clock.yaml", text)]).inventory
    result = plan(inventory, options=PlanOptions(week=parse_iso_week("2026-W44")))
    assert not result.unplaced
    (nightly,) = [pl for pl in result.placements if pl.workload == "nightly"]
    assert sum(nightly.segment_hours) == pytest.approx(10)
    actions = pool_schedules(inventory, result, {("aws", "rent-spot"): 4})[("aws", "rent-spot")]
    assert ("30 23 * * 0", 1, 1) in [(a.recurrence, a.min_size, a.desired_size) for a in actions]  # weekly-report
    nights = [s for s, hours in zip(result.segments, nightly.segment_hours, strict=True) if hours > 0]
    assert nights
    for segment in nights:  # a night the queue may run it in: its machine comes up 30 minutes before
        (held,) = [a for a in actions if a.minute == round(segment.start_hour * 60) - 30]
        assert (held.min_size, held.desired_size) == (0, 1), segment


def test_committed_pools_keep_their_fixed_size() -> None:
    result = planned("2026-W44")
    committed = replace(result, pools=tuple(replace(u, committed=True) for u in result.pools))
    assert pool_schedules(clock(), committed, {("aws", "rent"): 8, ("aws", "rent-spot"): 4}) == {}


def test_a_scheduled_group_s_min_is_the_week_s_floor() -> None:
    (site,) = stack_configs(clock(), planned("2026-W44"), "sha256:test").gpu_pools
    rent = next(p for p in site.node_pools if p.name == "rent")
    # the day service is fixed tier: untimed, 2 machines always on; with its windows, 0 at night
    assert (rent.min_size, rent.desired_size, rent.max_size) == (0, 2, 8)
    assert rent.values()["schedule"][0] == {"recurrence": "30 8 * * 1", "timeZone": "Europe/Amsterdam", "minSize": 2,
                                            "maxSize": 8}


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.name)
def test_an_untimed_plan_has_no_schedule_and_the_same_stack_config(path) -> None:  # type: ignore[no-untyped-def]
    inventory = load_inventory(inventories_dir() / path.name).inventory
    result = plan(inventory, options=AT_PLAN_WEEK)
    if result.segments:
        pytest.skip("a timed example")
    configs = stack_configs(inventory, result, "sha256:test")
    assert all("schedule" not in p for c in configs.gpu_pools for p in c.values()["nodePools"])  # type: ignore[union-attr]
    assert pool_schedules(inventory, result, {(c.site, p.name): p.max_size for c in configs.gpu_pools
                                              for p in c.node_pools}) == {}
    pools = {(c.site, p.name): p for c in configs.gpu_pools for p in c.node_pools}
    assert with_schedules(inventory, result, pools) == pools


def test_plan_lists_the_schedule_as_changes_of_the_stack_config() -> None:
    winter = stack_configs(clock(), planned("2026-W44"), "sha256:a")
    summer = stack_configs(clock(), planned("2026-W43"), "sha256:b")
    first = [(c.kind, c.name, c.action) for c in diff_stack_configs(None, winter) if c.kind == "scaling-schedule"]
    assert first == [("scaling-schedule", pool, "create") for pool in ("rent", "rent-a100", "rent-l4", "rent-spot")]
    # the windows' wall-clock times: a summer week's plan resizes as the winter one did
    assert not [c for c in diff_stack_configs(winter, summer) if c.kind == "scaling-schedule"]
    assert not [c for c in diff_stack_configs(winter, winter) if c.kind == "scaling-schedule"]
    # one resize's size changes; the schedule dropped (an untimed plan) leaves the group at its live size
    (site,) = winter.gpu_pools
    rent = next(p for p in site.node_pools if p.name == "rent")
    bigger = replace(rent, schedule=(replace(rent.schedule[0], desired_size=3), *rent.schedule[1:]))
    untimed = replace(rent, schedule=())
    for changed, action, detail in ((bigger, "update", "10 weekly resizes (Europe/Amsterdam): mon 08:30 desired 2→3"),
                                    (untimed, "update", "no weekly resizes: the group keeps its live size")):
        later = replace(winter, gpu_pools=(replace(site, node_pools=(changed, *site.node_pools[1:])),))
        (row,) = [c for c in diff_stack_configs(winter, later) if c.kind == "scaling-schedule"]
        assert (row.name, row.action, row.detail.split(",")[0], row.destructive) == ("rent", action, detail, False)


def test_the_memo_derives_a_varied_timed_plan_s_resizes_as_a_full_derivation_does() -> None:
    from hybridctl.core.deploy.stackreuse import StackConfigMemo

    memo = StackConfigMemo()
    base = planned("2026-W44")
    first = stack_configs(clock(), base, "sha256:x", memo=memo)
    without_report = replace(base, placements=tuple(pl for pl in base.placements if pl.workload != "weekly-report"))
    got = stack_configs(clock(), without_report, "sha256:x", memo=memo)
    assert got == stack_configs(clock(), without_report, "sha256:x")
    spot = next(p for p in got.gpu_pools[0].node_pools if p.name == "rent-spot")
    assert "30 23 * * 0" not in {a.recurrence for a in spot.schedule}  # no Monday report: no Sunday lead
    assert got.gpu_pools[0].node_pools[0] is first.gpu_pools[0].node_pools[0]  # rent: the first plan's
    other_week = stack_configs(clock(), planned("2026-W43"), "sha256:x", memo=memo)
    assert other_week == stack_configs(clock(), planned("2026-W43"), "sha256:x")
