"""The drill's worst segment of the week per scenario (issue 31 item 6; core/failover/worst.py): where the
most service is lost, else where the cash rises most per hour; none when neither happens."""

from __future__ import annotations

import pytest
from hybridctl.core.failover.drill import drill
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.failover.serialize import drill_to_dict
from hybridctl.core.failover.worst import worst_segment_text
from hybridctl.render.failover import drill_markdown
from support.week_fleet import week_fleet, week_plan


@pytest.fixture(scope="module")
def report():
    inventory = week_fleet()
    scenarios = [Scenario(name, tuple(parse_events(events.split(", "))))
                 for name, events in (("a-lost", "site-lost dc-a"), ("b-lost", "site-lost dc-b"),
                                      ("a-and-rent-lost", "site-lost dc-a, pool-lost rent"))]
    return drill(inventory, week_plan(inventory), scenarios)


def _result(report, name: str):
    return next(r for r in report.results if r.scenario.name == name)


def test_renting_by_day_makes_the_daytime_the_worst(report) -> None:
    # nothing is lost; the third service replica rents a p5 (8 GPUs x $10) in the daytime segments only:
    # the first of them (Monday 06:00-18:00 UTC in the summer week) is the worst, at +$80/h
    worst = _result(report, "a-lost").worst_segment
    assert worst is not None
    assert (worst.index, worst.start_hour, worst.end_hour) == (1, 6.0, 18.0)
    assert (worst.lost_gpus, worst.usd_per_hour_delta) == (0.0, 80.0)
    assert worst_segment_text(worst) == "2/17 Mon 06:00 → Mon 18:00: +$80.00/h"


def test_a_scenario_that_loses_nothing_and_pays_nothing_more_has_none(report) -> None:
    # the evaluation's hours may be chosen again: other hours are not a loss
    assert _result(report, "b-lost").worst_segment is None


def test_service_lost_comes_before_cash(report) -> None:
    # without the rented pool the third service replica has nowhere to go by day: 4 GPUs of service lost
    worst = _result(report, "a-and-rent-lost").worst_segment
    assert worst is not None and (worst.start_hour, worst.end_hour) == (6.0, 18.0)
    assert worst.lost_gpus == pytest.approx(4.0)


def test_json_and_markdown_carry_it(report) -> None:
    raw = drill_to_dict(report)
    by_name = {s["name"]: s for s in raw["scenarios"]}
    assert by_name["b-lost"]["worst_segment"] is None
    assert by_name["a-lost"]["worst_segment"] == {
        "index": 2, "of": 17, "start_hour": 6.0, "end_hour": 18.0, "clock": "Mon 06:00 → Mon 18:00 UTC",
        "lost_gpus": 0.0, "usd_per_hour_delta": 80.0}
    text = drill_markdown(report)
    assert "| lost | worst segment (UTC) | Δ cost/month |" in text
    assert "| 2/17 Mon 06:00 → Mon 18:00: +$80.00/h |" in text


def test_the_report_rows_name_it(report) -> None:
    import json

    from hybridctl.render.report import drill_view, render_report

    view = drill_view(json.dumps(drill_to_dict(report)), "drill.json")
    assert view.timed
    rows = {r.name: r.worst_segment for r in view.rows}
    assert rows == {"a-lost": "2/17 Mon 06:00 → Mon 18:00 UTC: +$80.00/h", "b-lost": "—",
                    "a-and-rent-lost": "2/17 Mon 06:00 → Mon 18:00 UTC: 4 GPUs lost"}
    html = render_report(report.base, drill=view)
    assert "<th>worst segment (UTC)</th>" in html
    assert 'data-worst-segment="2/17 Mon 06:00 → Mon 18:00 UTC: 4 GPUs lost"' in html


def test_an_untimed_drill_report_has_no_such_column() -> None:
    import json

    from hybridctl.render.report import drill_view

    raw = {"format_version": 1, "inventory": "t", "passed": True, "scenarios": [{"name": "s", "passed": True}]}
    assert not drill_view(json.dumps(raw), "drill.json").timed
