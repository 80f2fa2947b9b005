"""A window that straddles a daylight-saving change itself (spec, "Time": a tz with daylight saving is read at the
plan's week, each opening at its own date). Sunday 00:00-06:00 in Europe/Amsterdam:
- 2026-W13, spring: the clocks go from 02:00 CET to 03:00 CEST that Sunday (2026-03-29). The window opens at
  00:00 CET = Saturday 23:00 UTC (hour 143 of the week from Monday 2026-03-23) and closes at 06:00 CEST = 04:00 UTC
  (hour 148): 5 hours, though it reads 6 on the wall;
- 2026-W43, autumn: the clocks go back from 03:00 CEST to 02:00 CET (2026-10-25). It opens at 00:00 CEST = Saturday
  22:00 UTC (hour 142) and closes at 06:00 CET = 05:00 UTC (hour 149): 7 hours.
A spot replica that needs 4.8 hours a week there, reworked x 1.15 (8 reclaims a day, each losing half of a 30-minute
checkpoint and 12 minutes of provisioning: 1 + 8 / 24 x 27 / 60), asks for 5.52 hours: capped at the 5 hours the
window has in spring, all of them in autumn.
"""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.week.segments import build_week, parse_iso_week
from support.cases import cash_inventory, cloud, rented, work

SPRING, AUTUMN = parse_iso_week("2026-W13"), parse_iso_week("2026-W43")
SUNDAY_NIGHT = {"windows": [{"days": "sun", "from": "00:00", "to": "06:00", "tz": "Europe/Amsterdam"}]}
WEEKLY_HOURS = 4.8


def _inventory(weekly_hours: float | None = WEEKLY_HOURS, *others: dict[str, Any]) -> Inventory:
    spot = {**rented("spot", "H100", "p5.48xlarge", 16, 2.0, "spot"), "interruptions_per_day": 8}
    extra = {} if weekly_hours is None else {"hours": weekly_hours * 730 / 168}
    return cash_inventory([cloud("aws", "EU", spot)],
                          [work("sweep", types=["H100"], count=8, kind="experiment", preemptible=True,
                                checkpoint_minutes=30, schedule=SUNDAY_NIGHT, **extra), *others])


@pytest.mark.parametrize(("week", "opens", "closes"), [(SPRING, 143, 148), (AUTUMN, 142, 149)])
def test_the_window_in_utc(week, opens: int, closes: int) -> None:  # type: ignore[no-untyped-def]
    built = build_week(_inventory(None), week)
    sweep = built.workloads["sweep"]
    assert sweep.intervals == ((opens * 60, closes * 60),)
    assert [(s.start_hour, s.end_hour) for s in built.segments] == [(0, opens), (opens, closes), (closes, 168)]
    assert sweep.segments == (1,)
    # runs its whole window by default (6 wall-clock hours x 730 / 168): its UTC hours that week
    assert (sweep.deferrable, sweep.weekly_hours, sweep.window_hours) == (False, closes - opens, closes - opens)


@pytest.mark.parametrize(("week", "hours"), [(SPRING, 5.0), (AUTUMN, 5.52)])
def test_a_spot_replica_is_capped_at_the_hours_the_window_has(week, hours: float) -> None:  # type: ignore[no-untyped-def]
    inventory = _inventory()
    result = plan(inventory, options=PlanOptions(week=week))
    [pl] = result.placements
    assert pl.pool == "spot" and not result.unplaced
    assert check_plan(inventory, result) == []
    assert pl.segment_hours[0] == pl.segment_hours[2] == 0
    assert pl.segment_hours[1] == pytest.approx(hours, abs=1e-6)
    assert result.segments[1].hours == (5 if week == SPRING else 7)


@pytest.mark.parametrize(("week", "hours"), [(SPRING, 5.0), (AUTUMN, 5.52)])
def test_the_cap_holds_across_the_segments_of_the_window(week, hours: float) -> None:  # type: ignore[no-untyped-def]
    """Another spot job, Sunday 01:00-02:00 UTC, cuts the window in three segments: the solver's rows give the replica
    its capped hours over them (in spring all 5 of the window's; a cap taken after the rework asked for 5.75 there,
    and the replica was left unplaced)."""
    cut = work("cut", types=["H100"], count=8, kind="experiment", preemptible=True, checkpoint_minutes=30,
               schedule={"windows": [{"days": "sun", "from": "01:00", "to": "02:00"}]})
    inventory = _inventory(WEEKLY_HOURS, cut)
    result = plan(inventory, options=PlanOptions(week=week))
    assert not result.unplaced and check_plan(inventory, result) == []
    [sweep] = [pl for pl in result.placements if pl.workload == "sweep"]
    assert sum(sweep.segment_hours) == pytest.approx(hours, abs=1e-6)
    assert len(result.segments) == 5
