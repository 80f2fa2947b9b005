"""The text plan opens with a summary: the total and its parts, the change, what is unplaced, the cloud."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

from hybridctl.core.plan.diff import diff_plans
from hybridctl.core.plan.model import Placement, Plan, PoolUsage, SolverReport, Unplaced
from hybridctl.core.plan.summary import cost_parts, objective_note, summarize
from hybridctl.render.plan import render_markdown
from hybridctl.render.plan_summary import summary_rows
from support.examples import EXAMPLES
from support.inproc import run_cli

ENTERPRISE = str(EXAMPLES / "enterprise")


def _plan(**changes: object) -> Plan:
    base = Plan(
        inventory_name="t", inventory_digest="", data_movements=(),
        placements=(Placement("chat", "fixed", "dc", "dc-h100", 2, 2, 1460.0, "cheapest"),
                    Placement("train", "burst", "aws", "aws-p5", 1, 8, 4000.0, "the cheaper pool is full")),
        unplaced=(Unplaced("batch", "needs 4 × 1 L4 in EU; its 1 eligible pool is full", 4, "opportunistic"),),
        # dc-h100: 8 GPUs × 730 h × $1 = $5,840 committed, $1,460 of it used by chat; aws-p5: one
        # 8-GPU machine for 100 h at $5 = $4,000
        pools=(PoolUsage("dc", "dc-h100", "H100", "reserved", 8, 2, 1.0, committed=True, gpus_per_node=8, machines=1,
                         usd_per_month=5840.0, amortized_usd_per_month=1460.0),
               PoolUsage("aws", "aws-p5", "H100", "on_demand", 64, 8, 5.0, committed=False, gpus_per_node=8,
                         machines=1, usd_per_month=4000.0, amortized_usd_per_month=4000.0)),
        solver=SolverReport("optimal", 10340.0 + 900.0 + 12.5, 10340.0, 0.0, 0.1, "mip", 1, 4, penalty_usd=900.0),
        compute_usd_per_month=5460.0, data_usd_per_month=500.0, budget_usd_per_month=10000.0,
        tiers={"chat": "fixed", "train": "burst", "batch": "opportunistic"})
    return replace(base, **changes)  # type: ignore[arg-type]


class TestSummaryFigures:
    def test_under_cash_the_total_is_committed_plus_pay_per_use_plus_data(self) -> None:
        parts = cost_parts(_plan())
        assert (parts.total_usd_per_month, parts.committed_usd_per_month, parts.pay_per_use_usd_per_month,
                parts.idle_committed_usd_per_month) == (10340.0, 5840.0, 4000.0, 4380.0)
        rows = summary_rows(_plan(), summarize(_plan()))
        assert rows[0] == ("total:", "$10,340.00/month (cash: committed $5,840.00 + pay-per-use $4,000.00 "
                                     "+ data $500.00)")
        assert rows[1] == ("", "$4,380.00 of the committed cost pays for GPUs no workload uses (idle; in the "
                               "committed part)")
        assert dict(rows)["budget:"] == ("$10,000.00/month: OVER BUDGET by $340.00: apply refuses this plan without "
                                         "--allow-over-budget")
        header = render_markdown(_plan()).splitlines()[1]
        assert ("committed $5,840.00 · pay-per-use $4,000.00 · data movement $500.00 (idle committed $4,380.00)"
                in header)

    def test_under_amortized_the_total_is_compute_plus_data_and_the_cash_is_named(self) -> None:
        amortized = _plan(cost_model="amortized")
        rows = dict(summary_rows(amortized, summarize(amortized)))
        assert rows["total:"] == ("$5,960.00/month (amortized: compute $5,460.00 + data $500.00; the month's cash "
                                  "is $10,340.00)")

    def test_the_objective_is_explained_when_it_is_not_the_total(self) -> None:
        note = objective_note(_plan())
        assert (note.unplaced_penalty_usd, note.other_usd) == (900.0, 12.5)
        rows = summary_rows(_plan(), summarize(_plan()))
        solver = rows[rows.index(next(r for r in rows if r[0] == "solver:")) + 1][1]
        assert ("objective $11,252.50 = total + $900.00 priced on unplaced replicas + $12.50 of stability and "
                "tie-break terms (what the solver minimized, not a cost)") in solver
        exact = _plan(solver=SolverReport("optimal", 10340.0, 10340.0, 0.0, 0.1, "mip"))
        assert not any("objective" in text for _, text in summary_rows(exact, summarize(exact)))

    def test_unplaced_work_is_listed_with_its_reason(self) -> None:
        rows = summary_rows(_plan(), summarize(_plan()))
        at = rows.index(("unplaced:", "1 workload(s), 4 replica(s):"))
        assert rows[at + 1] == ("", "batch (4): needs 4 × 1 L4 in EU; its 1 eligible pool is full")

    def test_the_change_against_the_previous_plan_is_counted(self) -> None:
        after = _plan()
        before = _plan(placements=after.placements[:1], pools=(after.pools[0], replace(after.pools[1], usd_per_month=0.0)),
                       tiers={"chat": "fixed", "batch": "opportunistic"})
        summary = summarize(after, diff_plans(before, after), "previous")
        assert dict(summary_rows(after, summary))["change:"] == "+$4,000.00/month against the previous plan: 1 added"


class TestTextPlan:
    def test_the_summary_opens_the_plan_and_fits_a_screen(self, tmp_path: Path) -> None:
        result = run_cli("plan", ENTERPRISE, "--state", str(tmp_path / "s"))
        assert result.code == 0, result.output
        lines = result.stdout.splitlines()
        # the example has a week: its strip comes under the summary, before the placements
        strip = lines.index(next(line for line in lines if line.startswith("week ")))
        summary = lines[:strip]
        assert strip < lines.index(next(line for line in lines if line.startswith("Placements")))
        assert 3 <= len(summary) <= 15, summary
        total = json.loads(run_cli("plan", ENTERPRISE, "--format", "json").stdout)["total_usd_per_month"]
        assert summary[1].startswith(f"total:     ${total:,.2f}/month")
        assert any(line.startswith("cloud:") and "create" in line for line in summary)

    def test_the_cost_tables_are_behind_detailed(self, tmp_path: Path) -> None:
        plain = run_cli("plan", ENTERPRISE, "--state", str(tmp_path / "s")).stdout
        detailed = run_cli("plan", ENTERPRISE, "--detailed", "--state", str(tmp_path / "s")).stdout
        for title in ("Cost by tier", "Cost by type", "Cost by site", "Cost by capacity type", "Pools"):
            assert title not in plain
            assert title in detailed
        assert len(plain.splitlines()) < len(detailed.splitlines())

    def test_show_has_the_summary_and_detailed_too(self, tmp_path: Path) -> None:
        out = tmp_path / "plan.json"
        run_cli("plan", ENTERPRISE, "--out", str(out), "--state", str(tmp_path / "s"))
        shown = run_cli("show", str(out), "--detailed").stdout
        assert shown.startswith("Plan enterprise:") and "Cost by site" in shown
