"""The report's drill table shows over budget as a column, as the drill does (issue 32, item 4): a scenario
over budget is never a bare "pass", and a fixed-tier loss is never "RTO met"."""

from __future__ import annotations

import json
import re
from pathlib import Path

from support.inproc import run_cli

DATA = Path(__file__).parents[1] / "data" / "drill"


def _report(tmp_path: Path, *drill_args: str) -> str:
    plan, drill, html = tmp_path / "plan.json", tmp_path / "drill.json", tmp_path / "report.html"
    assert run_cli("plan", str(DATA / "clinics.yaml"), "--out", str(plan)).code == 0
    run_cli("drill", str(DATA / "clinics.yaml"), *drill_args, "--json-out", str(drill))
    assert json.loads(drill.read_text())["scenarios"]
    result = run_cli("report", str(plan), "--drill", str(drill), "--out", str(html))
    assert result.code == 0, result.output
    return html.read_text()


def _row(html: str, scenario: str) -> str:
    match = re.search(rf'<tr data-scenario="{scenario}">(.*?)</tr>', html, re.S)
    assert match, scenario
    return match.group(1)


def test_over_budget_is_a_column_with_its_allowance(tmp_path: Path) -> None:
    html = _report(tmp_path, "--scenario", str(DATA / "clinics-drills.yaml"))
    assert "<th>over budget</th>" in html
    # dc-main lost: $9,796.60 of cash against the $9,000 budget
    assert 'data-over-budget="796.60">$796.60 over (warning)<' in _row(html, "site-lost-dc-main")
    assert "$796.60 over (within $3,000.00 allowed)" in _row(html, "main-dc-and-triage")


def test_a_fixed_loss_is_a_missed_rto_not_met(tmp_path: Path) -> None:
    row = _row(_report(tmp_path, "--standard"), "site-lost-clinic-a")
    assert ">FAIL<" in row and "1 fixed down" in row
    assert " met<" not in row and "missed" in row
