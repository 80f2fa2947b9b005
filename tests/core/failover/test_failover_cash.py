"""Incidents are cash too (the spec's Cost section, revision 3), hand-worked on a small hospital fleet
(tests/data/showback/hospital.yaml): a failover keeps paying for the committed capacity it loses, its cost
change is the change in pay-per-use machines and data movement, shown beside the capacity lost, and the
workloads' and teams' changes add up to it to the cent.

The fleet: dc-main 2 owned L40S at $1.00/GPU-h ($1,460/month), dc-annex 2 at $1.50 ($2,190/month), the cloud
L40S on g6e.12xlarge (4 per machine) at $2.00 and H100 on p5.48xlarge (8 per machine) at $4.00. The applied
plan: er-triage 2 replicas on dc-main, billing-coder 1 on dc-annex, clinical-notes-llm 2 H100 alone on one p5
(8 × 730 × $4 = $23,360), model-eval 8 H100 for 20 h on a p5 of its own (8 × 20 × $4 = $640).
Cash: committed $3,650 + pay-per-use $24,000 = $27,650.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.drill import run_scenario
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import impacts
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.failover.serialize import runbook_to_dict
from hybridctl.core.placement.planner import plan
from hybridctl.core.pricing.incident import NO_TEAM, cash_by_workload, cash_change
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.render.failover import cash_text, delta_text, runbook_markdown
from support.failover_runs import failed_over

HOSPITAL = Path(__file__).resolve().parents[2] / "data" / "showback" / "hospital.yaml"


@pytest.fixture(scope="module")
def hospital():
    inventory = load_inventory(HOSPITAL).inventory
    base = plan(inventory)
    assert check_plan(inventory, base) == []
    return inventory, base


def test_the_applied_plan_as_worked_out(hospital) -> None:
    _, base = hospital
    assert (base.committed_usd_per_month, base.pay_per_use_usd_per_month, base.cash_usd_per_month) == (
        3650.0, 24000.0, 27650.0)
    # cash by workload: what each pays for by use (in cents); committed pools are paid whatever runs there
    assert cash_by_workload(base) == {"er-triage": 0, "billing-coder": 0, "clinical-notes-llm": 2_336_000,
                                      "model-eval": 64_000}


class TestAnOwnedSiteLost:
    def test_with_a_new_machine_the_change_is_that_machine(self, hospital) -> None:
        inventory, base = hospital
        result = replan(inventory, base, parse_events(["site-lost dc-main"]))
        # er-triage: one replica into the annex's idle GPU (owned: free), one onto a new g6e.12xlarge:
        # 4 × 730 × $2 = $5,840 for the machine, which it carries alone (1 GPU used, 3 idle)
        change = cash_change(base, result.after)
        assert (change.before_usd_per_month, change.after_usd_per_month, change.usd_per_month) == (
            27650.0, 33490.0, 5840.0)
        # the owned site still paid: 2 GPUs, 2 × 730 × $1 — before, the plan showed +$4,380 (the lost $1,460
        # counted as a saving), and er-triage +$1,095 (amortized compute), adding up to nothing
        assert (change.lost_gpus, change.lost_usd_per_month) == (2, 1460.0)
        assert change.by_workload == {"er-triage": 5840.0}
        assert change.by_team(base.teams) == {"emergency": 5840.0}
        rows = {i.workload: (i.usd_per_month_before, i.usd_per_month_after) for i in impacts(inventory, result)}
        assert rows == {"er-triage": (0.0, 5840.0)}

    def test_without_a_new_machine_nothing_changes_but_the_capacity_lost(self, hospital) -> None:
        inventory, base = hospital
        result = run_scenario(inventory, base, Scenario("annex-halved", parse_events(["capacity annex-l40s=-50%"])),
                              FailoverOptions())
        # billing-coder keeps the annex GPU left; 1 of the annex's 2 GPUs lost, 730 × $1.50 still paid.
        # Before: −$1,095.00, the lost GPU shown as a saving.
        assert (result.usd_per_month_before, result.usd_per_month_after, result.usd_per_month_delta) == (
            27650.0, 27650.0, 0.0)
        assert (result.committed_lost_gpus, result.committed_lost_usd_per_month) == (1, 1095.0)
        assert delta_text(result) == "±$0.00 (±$0.00 extra spend; 1 GPU lost, $1,095.00 still paid)"
        assert result.usd_per_month_delta_by_team == ()

    def test_a_move_between_owned_pools_costs_no_cash(self, hospital) -> None:
        inventory, base = hospital
        result = replan(inventory, base, parse_events(["capacity main-l40s=-50%"]))
        # one er-triage replica moves to the annex's idle GPU: owned to owned, $0 (was +$1,095 amortized)
        (row,) = impacts(inventory, result)
        assert (row.workload, row.usd_per_month_delta) == ("er-triage", 0.0)
        assert cash_change(base, result.after).usd_per_month == 0.0


def test_the_runbook_shows_cash_beside_the_capacity_lost_and_its_rows_add_up(hospital) -> None:
    inventory, base = hospital
    runbook, _ = failed_over(inventory, base, parse_events(["site-lost dc-main"]))
    assert runbook.usd_per_month_delta == 5840.0
    assert sum(i.usd_per_month_delta for i in runbook.impacts) + runbook.unlisted_usd_per_month_delta == 5840.0
    assert runbook.unlisted_usd_per_month_delta == 0.0
    assert cash_text(runbook) == ("$27,650.00 → $33,490.00/month in cash (+$5,840.00: +$5,840.00 extra spend); committed capacity lost: "
                                  "2 GPUs ($1,460.00/month, still paid)")
    assert cash_text(runbook) in runbook_markdown(runbook)
    assert "Cash change by team: emergency +$5,840.00." in runbook_markdown(runbook)
    document = runbook_to_dict(runbook)
    summary = document["summary"]
    assert (summary["usd_per_month_delta"], summary["committed_lost"], summary["usd_per_month_delta_by_team"]) == (
        5840.0, {"gpus": 2, "usd_per_month": 1460.0}, {"emergency": 5840.0})
    # the after plan is priced over what is left (the lost pools at 0): with the lost capacity still paid, it is the
    # summary's "after", never a saving (an audit read two "after" totals in one runbook)
    after_plan = document["after_plan"]["total_usd_per_month"]
    assert (after_plan, summary["usd_per_month_after"]) == (32030.0, 33490.0)
    assert round(after_plan + summary["committed_lost"]["usd_per_month"], 2) == summary["usd_per_month_after"]


def test_work_that_stays_where_it_is_is_the_unlisted_part_of_the_change(hospital) -> None:
    """The p5's price doubles: nothing can move (no other H100), so no workload has a row; the cash change is
    theirs all the same, and the runbook says so on a line of its own, so that the rows add up to the summary."""
    inventory, base = hospital
    runbook, _ = failed_over(inventory, base, parse_events(["price aws-p5=x2"]))
    # clinical-notes-llm's machine 8 × 730 × $8 = $46,720 (+$23,360); model-eval's 8 × 20 × $8 = $1,280 (+$640)
    assert runbook.cash.by_workload == {"clinical-notes-llm": 23360.0, "model-eval": 640.0}
    assert runbook.impacts == ()
    assert runbook.usd_per_month_delta == runbook.unlisted_usd_per_month_delta == 24000.0
    assert "And +$24,000.00/month: workloads that stay where they are" in runbook_markdown(runbook)


def test_teams_add_up_to_the_change_to_the_cent() -> None:
    from hybridctl.core.pricing.incident import CashChange

    # three workloads sharing a machine's change in thirds: cents allocated, never lost to rounding
    change = CashChange(100.0, 200.0, {"a": 33.34, "b": 33.33, "c": 33.33}, ())
    teams = change.by_team({"a": "x", "b": "x"})
    assert teams == {"x": 66.67, NO_TEAM: 33.33}
    assert round(sum(teams.values()), 2) == change.usd_per_month == 100.0


def test_on_the_enterprise_fleet_every_scenario_adds_up_to_the_cent() -> None:
    """Every standard scenario of the enterprise example: the workloads' cash changes add up to the scenario's,
    so do the teams'; the rows the runbook shows plus the unlisted line are those same changes."""
    from hybridctl.core.failover.drill import drill
    from hybridctl.core.failover.scenario import standard_scenarios
    from support.examples import EXAMPLES
    from support.plan_week import AT_PLAN_WEEK

    inventory = load_inventory(EXAMPLES / "enterprise").inventory
    base = plan(inventory, options=AT_PLAN_WEEK)
    report = drill(inventory, base, standard_scenarios(inventory))
    some_lost = False
    for r in report.results:
        change = cash_change(base, replan(inventory, base, r.scenario.events).after)
        cents = round(change.usd_per_month * 100)
        assert sum(round(v * 100) for v in change.by_workload.values()) == cents, r.scenario.name
        assert sum(round(v * 100) for v in change.by_team(base.teams).values()) == cents, r.scenario.name
        assert dict(r.usd_per_month_delta_by_team) == change.by_team(base.teams), r.scenario.name
        listed = {i.workload for i in r.impacts}
        rows = {i.workload: round(i.usd_per_month_delta * 100) for i in r.impacts}
        assert {w: c for w, c in rows.items() if c} == {w: round(v * 100) for w, v in change.by_workload.items()
                                                        if w in listed}, r.scenario.name
        unlisted = sum(round(v * 100) for w, v in change.by_workload.items() if w not in listed)
        assert round(r.unlisted_usd_per_month_delta * 100) == unlisted, r.scenario.name
        some_lost |= r.committed_lost_gpus > 0
        # a lost owned site is never a saving of its committed cost
        assert r.usd_per_month_after - r.usd_per_month_before == pytest.approx(r.usd_per_month_delta, abs=0.005)
    assert some_lost
