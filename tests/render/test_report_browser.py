"""The HTML report as a person sees it: a real headless Chromium loads the file (Debian's chromium,
installed by .ci/setup.sh). No console errors, no request leaves the file, the charts drew, and the
numbers on the page are the plan's. A screenshot is kept for a person to look at."""

from __future__ import annotations

import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hybridctl.core.plan.diff import diff_plans
from hybridctl.core.plan.serialize import plan_from_json
from hybridctl.core.plan.summary import summarize
from hybridctl.render.plan_summary import change_line
from support.browser import Browser
from support.examples import EXAMPLES
from support.inproc import run_cli

ENTERPRISE = str(EXAMPLES / "enterprise")

PAGE_FACTS = """(() => {
  const text = (sel) => { const e = document.querySelector(sel); return e ? e.textContent.trim() : null; };
  const charts = [...document.querySelectorAll('figure[data-chart] svg')].map(svg => {
    const box = svg.getBoundingClientRect();
    const shapes = [...svg.querySelectorAll('rect')].filter(r => r.getBoundingClientRect().width > 0);
    return {chart: svg.closest('figure').dataset.chart, width: box.width, height: box.height, shapes: shapes.length};
  });
  const bars = {};
  for (const g of document.querySelectorAll('figure[data-chart^="cost-"] g[data-bar]')) {
    const chart = g.closest('figure').dataset.chart;
    (bars[chart] = bars[chart] || {})[g.dataset.bar] = parseFloat(g.dataset.usd);
  }
  const pools = {};
  for (const g of document.querySelectorAll('g[data-pool]')) pools[g.dataset.pool] = [+g.dataset.used, +g.dataset.capacity];
  const cells = {};
  for (const td of document.querySelectorAll('table[data-table=placement] td[data-replicas]')) {
    const w = td.closest('tr').dataset.workload;
    cells[w + '@' + td.dataset.site] = +td.dataset.replicas;
  }
  const drill = {};
  for (const td of document.querySelectorAll('table[data-table=drill] td[data-status]')) {
    const row = td.closest('tr').dataset.scenario;
    drill[row] = (drill[row] || 0) + 1;
  }
  return {total: text('[data-figure=total]'), committed: text('[data-figure=committed]'),
          pay_per_use: text('[data-figure=pay-per-use]'), idle: text('[data-figure=idle]'), data: text('[data-figure=data]'),
          budget: text('[data-figure=budget]'), placed: text('[data-figure=placed]'), gpus: text('[data-figure=gpus]'),
          change: text('[data-figure=change]'),
          diff_workloads: [...document.querySelectorAll('table[data-table=diff] tr td:first-child')].map(td => td.textContent), charts, bars, pools, cells, drill,
          tooltips: document.querySelectorAll('svg title').length,
          headroom: text('[data-figure=headroom]'), planned_on: text('[data-figure=planned-on]'),
          idle_ppu: text('[data-figure=idle-pay-per-use]'), scenario_cash: text('[data-figure=scenario-cash]'),
          prices: document.querySelectorAll('table[data-table=prices] tr').length - 1,
          tiers: [...document.querySelectorAll('table[data-table=tiers] tr td:first-child')].map(td => td.textContent),
          matrix_rows: [...document.querySelectorAll('table[data-table=placement] tr:not([data-closing=total]) td[data-usd]')]
            .map(td => Math.round(parseFloat(td.dataset.usd) * 100)).reduce((a, b) => a + b, 0),
          matrix_total: text('table[data-table=placement] tr[data-closing=total] td'),
          scripts: document.querySelectorAll('script').length};
})()"""


def usd(value: float) -> str:
    return f"${value:,.2f}"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, Path]:
    work = tmp_path_factory.mktemp("report")
    plan_file, previous, drill = work / "plan.json", work / "previous.json", work / "drill.json"
    assert run_cli("plan", ENTERPRISE, "--out", str(plan_file), "--state", str(work / "s")).code == 0
    # the previous plan: llm-pretrain had 2 replicas instead of 4, and eu-central-1's p5 cost $6.91 a GPU-hour
    # (the example has a week: 2 more deferrable replicas fit the owned H100s' free hours at no cost)
    smaller = work / "smaller"
    shutil.copytree(ENTERPRISE, smaller)
    workloads = (smaller / "workloads.yaml").read_text()
    assert workloads.count("replicas: 4\n    hours_per_month: 500") == 1
    (smaller / "workloads.yaml").write_text(workloads.replace("replicas: 4\n    hours_per_month: 500",
                                                              "replicas: 2\n    hours_per_month: 500"))
    sites = (smaller / "sites.yaml").read_text()
    assert sites.count("capacity_type: on_demand, usd_per_gpu_hour: 7.91}") == 1
    (smaller / "sites.yaml").write_text(sites.replace("usd_per_gpu_hour: 7.91}", "usd_per_gpu_hour: 6.91}"))
    assert run_cli("plan", str(smaller), "--out", str(previous), "--state", str(work / "s")).code == 0
    run_cli("drill", ENTERPRISE, "--format", "json", "--json-out", str(drill))  # exit 1 when a scenario fails
    assert json.loads(drill.read_text())["scenarios"]
    html = work / "report.html"
    result = run_cli("report", str(plan_file), "--drill", str(drill), "--previous", str(previous), "--out", str(html))
    assert result.code == 0, result.output
    return html, plan_file, drill, previous


def test_the_report_in_a_real_browser(report: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    html, plan_file, drill_file, previous_file = report
    plan = plan_from_json(plan_file.read_text())
    with Browser(tmp_path / "chromium-profile") as browser:
        session, visit = browser.visit(html)
        facts = browser.evaluate(session, PAGE_FACTS)
        shot = browser.screenshot(session, tmp_path / "report.png")
    print(f"\nscreenshot of the HTML report: {shot}")

    assert visit.console_errors == []
    assert [url for url in visit.requests if url != html.resolve().as_uri()] == []  # offline: nothing fetched
    assert facts["scripts"] == 0

    charts = {c["chart"]: c for c in facts["charts"]}
    assert set(charts) == {"cost-tier", "cost-site", "cost-team", "pools"}
    for chart in charts.values():
        assert chart["width"] > 100 and chart["height"] > 10 and chart["shapes"] > 0, chart
    assert facts["tooltips"] > len(plan.pools)

    assert facts["total"] == usd(plan.total_usd_per_month)
    assert facts["committed"] == usd(plan.committed_usd_per_month)
    assert facts["pay_per_use"] == usd(plan.pay_per_use_usd_per_month)
    assert facts["idle"] == usd(plan.idle_committed_usd_per_month)
    assert facts["data"] == usd(plan.data_usd_per_month)
    assert facts["budget"] == usd(plan.budget_usd_per_month or 0)
    assert facts["placed"] == str(len({p.workload for p in plan.placements}))
    assert facts["gpus"] == str(sum(p.gpus for p in plan.placements))

    # each chart adds up to the plan's total, the idle committed cost on a bar of its own
    for chart in ("cost-tier", "cost-site", "cost-team"):
        bars = facts["bars"][chart]
        assert bars["idle committed"] == pytest.approx(plan.idle_committed_usd_per_month)
        assert sum(bars.values()) == pytest.approx(plan.total_usd_per_month, abs=0.05)
    assert set(facts["bars"]["cost-team"]) == {*plan.teams.values(), "idle committed"} | (
        {"(no team)"} if set(plan.tiers) - set(plan.teams) else set())

    assert facts["pools"] == {p.pool: [p.used_gpus, p.capacity_gpus] for p in plan.pools}
    expected_cells: dict[str, int] = {}
    for p in plan.placements:
        key = f"{p.demand or p.workload}@{p.site}"
        expected_cells[key] = expected_cells.get(key, 0) + p.replicas
    assert facts["cells"] == expected_cells

    drill = json.loads(drill_file.read_text())
    assert facts["drill"] == {s["name"]: sum(1 for w in s["workloads"] if w["status"] != "unchanged")
                              for s in drill["scenarios"] if any(w["status"] != "unchanged" for w in s["workloads"])}
    before = plan_from_json(previous_file.read_text())
    assert facts["change"] == change_line(summarize(plan, diff_plans(before, plan), "previous"))
    assert facts["change"].startswith(f"+{usd(plan.total_usd_per_month - before.total_usd_per_month)}/month")
    assert "llm-pretrain" in facts["diff_workloads"]
    assert shot.stat().st_size > 10_000

    # for finance: budget and headroom, the plan's date, prices, tiers, idle and the scenarios' cash
    headroom = (plan.budget_usd_per_month or 0) - plan.total_usd_per_month
    assert facts["headroom"].endswith(f"headroom {usd(headroom)}/month") if headroom >= 0 else "OVER BUDGET" in facts["headroom"]
    assert facts["planned_on"] == datetime.fromtimestamp(plan_file.stat().st_mtime, UTC).date().isoformat()
    assert facts["prices"] == len(plan.pools)
    assert set(facts["tiers"]) == set(plan.tiers.values())
    assert facts["idle_ppu"].startswith("$") or facts["idle_ppu"].startswith("none")
    assert all(f"{s['name']}: " in facts["scenario_cash"] for s in drill["scenarios"])
    # the placement matrix's cost column, with its closing rows, adds up to the total to the cent
    assert facts["matrix_rows"] == round(plan.total_usd_per_month * 100)
    assert facts["matrix_total"] == usd(plan.total_usd_per_month)


def test_names_from_the_files_are_escaped(report: tuple[Path, Path, Path, Path], tmp_path: Path) -> None:
    _, plan_file, drill_file, _ = report
    drill = json.loads(drill_file.read_text())  # a drill report is not signed: anything may be in it
    drill["scenarios"][0]["name"] = "<script>alert(1)</script>"
    drill["scenarios"][0]["description"] = '"><img src=x onerror=alert(2)>'
    hostile = tmp_path / "drill.json"
    hostile.write_text(json.dumps(drill))
    out = tmp_path / "r.html"
    assert run_cli("report", str(plan_file), "--drill", str(hostile), "--out", str(out)).code == 0
    text = out.read_text()
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "<img src=x" not in text


def test_a_drill_file_that_is_not_one(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(EXAMPLES / "cloud-burst.yaml"), "--out", str(plan_file),
                   "--state", str(tmp_path / "s")).code == 0
    (tmp_path / "d.json").write_text('{"format_version": 1}')
    result = run_cli("report", str(plan_file), "--drill", str(tmp_path / "d.json"), "--out", str(tmp_path / "r.html"))
    assert result.code == 1 and "not a hybridctl drill report" in result.output
    assert not (tmp_path / "r.html").exists()
