"""The HTML report as a person sees it: a real headless Chromium loads the file (Debian's chromium,
installed by .ci/setup.sh). No console errors, no request leaves the file, the charts drew, and the
numbers on the page are the plan's. A screenshot is kept for a person to look at."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.plan.serialize import plan_from_json
from hybridctl.core.plan_summary import pool_idle_committed
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
  return {total: text('[data-figure=total]'), compute: text('[data-figure=compute]'), data: text('[data-figure=data]'),
          budget: text('[data-figure=budget]'), placed: text('[data-figure=placed]'), gpus: text('[data-figure=gpus]'),
          change: text('[data-figure=change]'), charts, bars, pools, cells, drill,
          tooltips: document.querySelectorAll('svg title').length,
          scripts: document.querySelectorAll('script').length};
})()"""


def usd(value: float) -> str:
    return f"${value:,.2f}"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    work = tmp_path_factory.mktemp("report")
    plan_file, previous, drill = work / "plan.json", work / "previous.json", work / "drill.json"
    assert run_cli("plan", ENTERPRISE, "--out", str(plan_file), "--state", str(work / "s")).code == 0
    older = json.loads(plan_file.read_text())  # the previous plan did not have llm-pretrain yet
    gone = [p for p in older["placements"] if p["workload"] == "llm-pretrain"]
    older["placements"] = [p for p in older["placements"] if p["workload"] != "llm-pretrain"]
    older["compute_usd_per_month"] -= sum(p["usd_per_month"] for p in gone)
    del older["tiers"]["llm-pretrain"]
    previous.write_text(json.dumps(older))
    assert run_cli("drill", ENTERPRISE, "--format", "json", "--json-out", str(drill)).code == 0
    html = work / "report.html"
    result = run_cli("report", str(plan_file), "--drill", str(drill), "--previous", str(previous), "--out", str(html))
    assert result.code == 0, result.output
    return html, plan_file, drill


def test_the_report_in_a_real_browser(report: tuple[Path, Path, Path], tmp_path: Path) -> None:
    html, plan_file, drill_file = report
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
    assert facts["compute"] == usd(plan.compute_usd_per_month)
    assert facts["data"] == usd(plan.data_usd_per_month)
    assert facts["budget"] == usd(plan.budget_usd_per_month or 0)
    assert facts["placed"] == str(len({p.workload for p in plan.placements}))
    assert facts["gpus"] == str(sum(p.gpus for p in plan.placements))

    # the bars add up to the plan: compute + data by tier, and the idle committed cost on a bar of its own
    idle = round(sum(pool_idle_committed(plan).values()), 2)
    tiers = facts["bars"]["cost-tier"]
    assert tiers.pop("idle committed") == pytest.approx(idle)
    assert sum(tiers.values()) == pytest.approx(plan.total_usd_per_month, abs=0.05)
    assert sum(facts["bars"]["cost-site"].values()) == pytest.approx(plan.total_usd_per_month + idle, abs=0.05)

    assert facts["pools"] == {p.pool: [p.used_gpus, p.capacity_gpus] for p in plan.pools}
    expected_cells: dict[str, int] = {}
    for p in plan.placements:
        key = f"{p.demand or p.workload}@{p.site}"
        expected_cells[key] = expected_cells.get(key, 0) + p.replicas
    assert facts["cells"] == expected_cells

    drill = json.loads(drill_file.read_text())
    assert facts["drill"] == {s["name"]: sum(1 for w in s["workloads"] if w["status"] != "unchanged")
                              for s in drill["scenarios"] if any(w["status"] != "unchanged" for w in s["workloads"])}
    added = sum(p.usd_per_month for p in plan.placements if p.workload == "llm-pretrain")
    assert facts["change"] == f"+{usd(added)}/month against the previous plan: 1 added"
    assert shot.stat().st_size > 10_000


def test_names_from_the_files_are_escaped(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(EXAMPLES / "cloud-burst.yaml"), "--out", str(plan_file),
                   "--state", str(tmp_path / "s")).code == 0
    document = json.loads(plan_file.read_text())
    document["placements"][0]["reason"] = "<script>alert(1)</script>"
    plan_file.write_text(json.dumps(document))
    out = tmp_path / "r.html"
    assert run_cli("report", str(plan_file), "--out", str(out)).code == 0
    text = out.read_text()
    assert "<script>alert(1)" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text


def test_a_drill_file_that_is_not_one(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    assert run_cli("plan", str(EXAMPLES / "cloud-burst.yaml"), "--out", str(plan_file),
                   "--state", str(tmp_path / "s")).code == 0
    (tmp_path / "d.json").write_text('{"format_version": 1}')
    result = run_cli("report", str(plan_file), "--drill", str(tmp_path / "d.json"), "--out", str(tmp_path / "r.html"))
    assert result.code == 1 and "not a hybridctl drill report" in result.output
    assert not (tmp_path / "r.html").exists()
