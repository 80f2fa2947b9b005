"""Incidents are cash too, revision 4 (the spec's Cost section): an incident's cash change is split into the extra
spend (what the fleet pays more to keep running) and the work stopped (the workloads down, each named with the cash
it paid before), in every view, adding up to the total to the cent; and a workload down never reads "RTO met".

The fleet, hand-worked: cloud-a rents L4s on g6.xlarge (1 GPU a machine) at $0.8049/GPU-h, cloud-b at $1.3333.
Four burst batch jobs may run only at cloud-a (`sites: [cloud-a]`), 1 GPU each for 100, 200, 300 and 400 hours a month:
$80.49, $160.98, $241.47 and $321.96 ($804.90 in all). `api` (always on, 1 GPU) runs at cloud-a for
730 × $0.8049 = $587.577 and moves to cloud-b when cloud-a is lost: 730 × $1.3333 = $973.309.
Losing cloud-a: the four jobs stop (−$804.90 of work stopped) and `api` costs $385.73 more (the extra spend, the
rounding of the two plans' lines to the cent included): the cash falls by $419.17, which is no saving.
"""

from __future__ import annotations

import json

import pytest
from hybridctl.core.failover.drill import DrillReport, run_scenario
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import FailoverOptions
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.failover.serialize import drill_to_json, runbook_to_dict
from hybridctl.core.pricing.cents import to_cents
from hybridctl.render.failover import cash_text, delta_text, drill_markdown, rto_text, runbook_markdown
from hybridctl.render.report import drill_view, render_report
from support.cases import cash_inventory, cloud, owned, rented, solve, work
from support.failover_runs import failed_over

JOBS = {"job-100": 100, "job-200": 200, "job-300": 300, "job-400": 400}


@pytest.fixture(scope="module")
def fleet():
    inventory = cash_inventory(
        [cloud("cloud-a", "EU", rented("a-l4", "L4", "g6.xlarge", 8, 0.8049)),
         cloud("cloud-b", "EU", rented("b-l4", "L4", "g6.xlarge", 8, 1.3333))],
        [*(work(name, types=["L4"], hours=hours, kind="batch_inference", tier="burst", sites=["cloud-a"],
                rto_minutes=30)
           for name, hours in JOBS.items()),
         work("api", types=["L4"], hours=730, kind="realtime_inference", rto_minutes=60)])
    base = solve(inventory)
    assert {p.workload: p.pool for p in base.placements} == {**dict.fromkeys(JOBS, "a-l4"), "api": "a-l4"}
    return inventory, base


SITE_LOST = parse_events(["site-lost cloud-a"])


def test_the_cash_change_is_the_extra_spend_beside_the_work_stopped(fleet) -> None:
    inventory, base = fleet
    runbook, _ = failed_over(inventory, base, SITE_LOST)
    cash = runbook.cash
    # before: one bare −$419.17, read as a saving
    assert cash.usd_per_month == -419.17
    assert dict(cash.stopped) == {"job-100": 80.49, "job-200": 160.98, "job-300": 241.47, "job-400": 321.96}
    assert (cash.stopped_usd_per_month, cash.extra_usd_per_month) == (804.9, 385.73)
    # to the cent: extra spend − work stopped is the change, and each line is a workload's
    assert to_cents(cash.extra_usd_per_month) - to_cents(cash.stopped_usd_per_month) == to_cents(cash.usd_per_month)
    assert sum(map(to_cents, cash.stopped.values())) == to_cents(cash.stopped_usd_per_month)
    assert to_cents(cash.by_workload["api"]) == to_cents(cash.extra_usd_per_month)
    assert cash_text(runbook) == (
        "$1,392.48 → $973.31/month in cash (−$419.17: +$385.73 extra spend, −$804.90 of work stopped "
        "(job-100 $80.49, job-200 $160.98, job-300 $241.47, job-400 $321.96))")


def test_the_runbook_file_and_its_json_show_the_split(fleet) -> None:
    inventory, base = fleet
    runbook, _ = failed_over(inventory, base, SITE_LOST)
    assert cash_text(runbook) in runbook_markdown(runbook)
    summary = runbook_to_dict(runbook)["summary"]
    assert isinstance(summary, dict)
    assert (summary["usd_per_month_delta"], summary["usd_per_month_extra"], summary["usd_per_month_work_stopped"]) == (
        -419.17, 385.73, 804.9)
    assert summary["work_stopped"] == {"job-100": 80.49, "job-200": 160.98, "job-300": 241.47, "job-400": 321.96}


def test_the_drill_row_table_json_and_report_show_the_split(fleet) -> None:
    inventory, base = fleet
    result = run_scenario(inventory, base, Scenario("cloud-a-lost", SITE_LOST), FailoverOptions())
    split = ("+$385.73 extra spend, −$804.90 of work stopped "
             "(job-100 $80.49, job-200 $160.98, job-300 $241.47, job-400 $321.96)")
    assert delta_text(result) == f"−$419.17 ({split})"
    report = DrillReport(inventory.name, base, (result,), 0.0)
    assert delta_text(result) in drill_markdown(report)
    scenario = json.loads(drill_to_json(report))["scenarios"][0]
    assert (scenario["usd_per_month_delta"], scenario["usd_per_month_extra"],
            scenario["usd_per_month_work_stopped"]) == (-419.17, 385.73, 804.9)
    assert to_cents(scenario["usd_per_month_extra"]) - sum(map(to_cents, scenario["work_stopped"].values())) \
        == to_cents(scenario["usd_per_month_delta"])
    view = drill_view(drill_to_json(report), "drill.json")
    assert view.rows[0].cash_split_text == split
    assert f"cloud-a-lost: −$419.17/month ({split})" in render_report(base, drill=view)


def test_a_drill_of_nothing_stopped_shows_only_extra_spend(fleet) -> None:
    inventory, base = fleet
    result = run_scenario(inventory, base, Scenario("dearer", parse_events(["price a-l4=x2"])), FailoverOptions())
    assert result.work_stopped == {}
    assert result.extra_usd_per_month == result.usd_per_month_delta
    assert "work stopped" not in delta_text(result)


class TestADownWorkloadNeverMeetsItsRto:
    def test_an_expected_loss_is_down_not_met(self) -> None:
        # survives_site_loss: false: the drill does not fail on it, but it is down, and no column reads it as met
        inventory = cash_inventory(
            [cloud("cloud-a", "EU", rented("a-l4", "L4", "g6.xlarge", 8, 0.8049)),
             cloud("cloud-b", "EU", rented("b-l4", "L4", "g6.xlarge", 8, 1.3333))],
            [work("camera", types=["L4"], hours=730, kind="realtime_inference", sites=["cloud-a"], rto_minutes=15,
                  survives_site_loss=False)])
        base = solve(inventory)
        result = run_scenario(inventory, base, Scenario("cloud-a-lost", SITE_LOST), FailoverOptions())
        (camera,) = result.impacts
        assert (camera.status.value, camera.expected_loss, camera.meets_rto) == ("down", True, False)
        assert result.passed  # an expected loss does not fail the gate
        assert "met" not in rto_text(result)
        report = DrillReport(inventory.name, base, (result,), 0.0)
        row = drill_view(drill_to_json(report), "drill.json").rows[0]
        assert row.rto_met is False

    def test_a_drill_row_with_a_burst_workload_down_does_not_read_met(self, fleet) -> None:
        inventory, base = fleet
        result = run_scenario(inventory, base, Scenario("cloud-a-lost", SITE_LOST), FailoverOptions())
        assert result.lost and "met" not in rto_text(result).replace("missed", "")


def test_a_workload_left_with_fewer_replicas_stops_the_cash_of_the_ones_it_lost() -> None:
    # svc: one replica on the owned L4 (committed: no cash), one rented at cloud-a (730 × $0.8049 = $587.58);
    # losing cloud-a leaves it one replica: the $587.58 is work stopped, not a saving
    inventory = cash_inventory(
        [{"name": "dc", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0, "latency_ms": {"users": 10},
          "pools": [owned("dc-l4", "L4", 1, 0.70)]},
         cloud("cloud-a", "EU", rented("a-l4", "L4", "g6.xlarge", 8, 0.8049))],
        [work("svc", types=["L4"], replicas=2, hours=730, kind="realtime_inference")])
    base = solve(inventory)
    runbook, _ = failed_over(inventory, base, SITE_LOST)
    (svc,) = runbook.impacts
    assert (svc.status.value, svc.replicas_running) == ("degraded", 1)
    assert dict(runbook.cash.stopped) == {"svc": 587.58}
    assert (runbook.cash.usd_per_month, runbook.cash.extra_usd_per_month) == (-587.58, 0.0)
