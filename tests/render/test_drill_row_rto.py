"""Issue 34, item 12(f): a report row's RTO, when the scenario touches several workloads with an RTO, is
the tightest of them (the minimum), counting only the workloads the scenario changes."""

from __future__ import annotations

import json

from hybridctl.render.report import DRILL_FORMAT_VERSION, drill_view


def test_the_row_shows_the_tightest_rto_of_the_touched_workloads() -> None:
    # touched: chat (RTO 30), search (RTO 10), batch (no RTO); unchanged: recs (RTO 5, not counted).
    # min(30, 10) = 10 in both orders. Taking the first listed would give 30 in the first scenario (chat
    # first), the last listed 30 in the second (chat last), the largest 30, counting recs 5. No RTO: None.
    workloads = [
        {"workload": "chat", "status": "moved", "rto_minutes": 30, "outage_minutes": 12},
        {"workload": "search", "status": "moved", "rto_minutes": 10, "outage_minutes": 12},
        {"workload": "batch", "status": "degraded"},
        {"workload": "recs", "status": "unchanged", "rto_minutes": 5},
    ]
    reordered = [workloads[1], workloads[0], workloads[2], workloads[3]]
    report = {"format_version": DRILL_FORMAT_VERSION, "inventory": "t.yaml", "passed": False, "scenarios": [
        {"name": "dc-a down", "passed": False, "recovery_minutes": 12, "workloads": workloads},
        {"name": "dc-b down", "passed": False, "recovery_minutes": 12, "workloads": reordered},
        {"name": "quiet", "passed": True, "recovery_minutes": 0, "workloads": [workloads[3]]},
    ]}
    rows = drill_view(json.dumps(report), "drill.json").rows
    assert [(r.name, r.rto_minutes) for r in rows] == [("dc-a down", 10.0), ("dc-b down", 10.0), ("quiet", None)]


def test_a_drill_report_is_read_as_strictly_as_a_plan_file() -> None:
    # NaN was rendered "−$nan/month" at exit 0; a key given twice and an escape sequence are refused alike
    import pytest
    from hybridctl.render.report import DrillFileError

    head = f'{{"format_version": {DRILL_FORMAT_VERSION}, "scenarios": [{{"name": "x", "usd_per_month_delta": '
    for text, words in ((head + "NaN}]}", "NaN is not a JSON number"),
                        (head + '1, "name": "y"}]}', "appears twice"),
                        (head + '1, "reason": "\\u001b[2J"}]}', "control character")):
        with pytest.raises(DrillFileError, match=words):
            drill_view(text, "drill.json")
