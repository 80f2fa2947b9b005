"""What a drill moves and takes down is readable where no scrollbar helps: off a terminal the scenario and
workload names are never cut, and the HTML report lists each scenario's impact as well as the wide matrix."""

from __future__ import annotations

import json
import re

import pytest
from hybridctl.core.failover.drill import drill
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.failover.serialize import drill_to_dict
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.render.report import drill_view, render_report
from support.examples import EXAMPLES
from support.inproc import run_cli


@pytest.fixture(scope="module")
def cloud_burst():
    inventory = load_inventory(EXAMPLES / "cloud-burst.yaml").inventory
    base = plan(inventory)
    return base, drill(inventory, base, standard_scenarios(inventory))


@pytest.mark.parametrize("columns", ["80", "140"])
def test_no_name_is_cut_off_a_terminal(cloud_burst, monkeypatch, columns: str) -> None:
    _, report = cloud_burst
    monkeypatch.setenv("COLUMNS", columns)
    done = run_cli("drill", str(EXAMPLES / "cloud-burst.yaml"), "--standard")
    assert "…" not in done.stdout
    for r in report.results:  # each scenario's name whole on its row, as people grep for it
        assert re.search(rf"│ {re.escape(r.scenario.name)} +│", done.stdout), r.scenario.name


def test_the_report_lists_each_scenarios_impact(cloud_burst) -> None:
    base, report = cloud_burst
    html = render_report(base, drill=drill_view(json.dumps(drill_to_dict(report)), "drill.json"))
    items = dict(re.findall(r'<li data-scenario-impact="([^"]+)"><b>[^<]+</b> — ([^<]+)</li>', html))
    assert set(items) == {r.scenario.name for r in report.results}
    for r in report.results:
        down = sorted(i.workload for i in r.lost)
        if down:
            assert f"down: {', '.join(w for w in report_order(html) if w in down)}" in items[r.scenario.name]
        if not (r.lost or r.moved or r.degraded):
            assert items[r.scenario.name] == "no workload moves or goes down"
    assert "@media print { .scroll { overflow: visible; }" in html


def report_order(html: str) -> list[str]:
    """The matrix's workload columns, in their order (the list names them in the same order)."""
    return re.findall(r'<th class="workload" title="([^"]+)">', html)
