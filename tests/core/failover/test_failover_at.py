"""`failover --at TIME` in the core (issue 31 item 6): the segment of the plan's week the runbook's first
steps act in, and the steps that only matter later (core/failover/timing.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.serialize import runbook_from_dict, runbook_to_dict
from hybridctl.core.failover.timing import runbook_timing, segment_at
from hybridctl.core.failover.timingrecord import TIMING_VERSION
from hybridctl.core.week.clock import week_clock
from support.failover_runs import failed_over
from support.week_fleet import week_fleet, week_plan


@pytest.fixture(scope="module")
def lost_dc_a():
    inventory = week_fleet()
    applied = week_plan(inventory)
    runbook, _ = failed_over(inventory, applied, parse_events(["site-lost dc-a"]), steps_for=plain_steps(inventory))
    return runbook


# Friday of the plan's summer week 2026-W27 (Monday 2026-06-29): the service runs 06:00-18:00 UTC
NIGHT = datetime(2026, 7, 3, 1, 30, tzinfo=UTC)  # hour 97.5 of the week: the nightly fine-tune's window
NOON = datetime(2026, 7, 3, 12, 0, tzinfo=UTC)


def test_the_moment_falls_in_the_segment_that_holds_its_hour(lost_dc_a) -> None:
    segment = segment_at(lost_dc_a.after, NIGHT)
    assert segment is not None
    assert (segment.start_hour, segment.end_hour) == (92.0, 102.0)  # Thu 20:00 -> Fri 06:00 UTC
    assert segment.clock == "Thu 20:00 → Fri 06:00 UTC"
    assert segment.starts_at == datetime(2026, 7, 2, 20, 0, tzinfo=UTC)


def test_a_scale_up_for_the_daytime_service_is_needed_only_when_its_window_opens(lost_dc_a) -> None:
    timing = runbook_timing(lost_dc_a, NIGHT)
    (later,) = timing.later
    assert later.step == "cloud-pools/aws" and later.workloads == ("day-service",)
    assert later.segment.starts_at == datetime(2026, 7, 3, 6, 0, tzinfo=UTC)
    # provision_minutes (12) before the window opens
    assert later.needed_by == datetime(2026, 7, 3, 5, 48, tzinfo=UTC)


def test_in_the_daytime_every_step_acts_now(lost_dc_a) -> None:
    timing = runbook_timing(lost_dc_a, NOON)
    assert timing.segment is not None and week_clock(timing.segment.start_hour) == "Fri 06:00"
    assert timing.later == ()


def test_a_moment_in_another_week_reads_the_same_hour_of_the_plans_week(lost_dc_a) -> None:
    # a winter Friday: the plan's week is still the summer one it was made for; the hour of the week decides
    winter = runbook_timing(lost_dc_a, datetime(2026, 11, 27, 2, 30, tzinfo=UTC))
    assert winter.week == "2026-W27"
    assert winter.segment is not None and winter.segment.starts_at == datetime(2026, 11, 26, 20, 0, tzinfo=UTC)


def test_past_sunday_the_next_segment_is_next_weeks(lost_dc_a) -> None:
    # Saturday night: the service next runs on Monday 06:00 UTC of the following week
    timing = runbook_timing(lost_dc_a, datetime(2026, 7, 4, 23, 0, tzinfo=UTC))
    (later,) = timing.later
    assert later.segment.starts_at == datetime(2026, 7, 6, 6, 0, tzinfo=UTC)


def test_the_json_carries_the_timing_with_its_own_version_and_reads_back(lost_dc_a) -> None:
    import dataclasses

    runbook = dataclasses.replace(lost_dc_a, timing=runbook_timing(lost_dc_a, NIGHT))
    raw = runbook_to_dict(runbook)
    assert raw["at"]["version"] == TIMING_VERSION
    assert raw["at"]["time"] == "2026-07-03T01:30:00Z"
    assert raw["at"]["segment"]["index"] == 13 and raw["at"]["segment"]["clock"] == "Thu 20:00 → Fri 06:00 UTC"
    assert [s["step"] for s in raw["at"]["later_steps"]] == ["cloud-pools/aws"]
    back = runbook_from_dict(raw)
    assert back.timing == runbook.timing
    assert back.id == runbook.id == lost_dc_a.id  # the moment is not part of what the runbook does


def test_an_untimed_plan_has_no_segment(lost_dc_a) -> None:
    import dataclasses

    untimed = dataclasses.replace(lost_dc_a, after=dataclasses.replace(lost_dc_a.after, week="", segments=()))
    timing = runbook_timing(untimed, NIGHT)
    assert timing.segment is None and timing.later == () and not timing.timed
