"""The report's heat map of a timed plan's week (issue 31 item 4), as a person's browser shows it: one row per
pool, one column per segment of the plan's week (UTC), each cell's text the plan's own pool_weeks figures."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hybridctl.core.plan.serialize import plan_from_json
from hybridctl.core.week.clock import week_clock
from hybridctl.render.report import render_report
from hybridctl.render.report_week import figure
from support.browser import Browser
from support.inproc import run_cli

CLINIC = Path(__file__).resolve().parents[1] / "data" / "week-view" / "clinic.yaml"

HEAT_FACTS = """(() => {
  const table = document.querySelector('table[data-table=heat]');
  if (!table) return null;
  const rows = {};
  for (const tr of table.querySelectorAll('tr[data-pool]')) {
    rows[tr.dataset.pool] = [...tr.querySelectorAll('td[data-segment]')].map(td => ({
      gpus: +td.dataset.gpus, machines: +td.dataset.machines, idle: +td.dataset.idleGpuHours,
      text: td.innerText.replace(/\\s+/g, ' ').trim(), shade: getComputedStyle(td).backgroundColor,
      width: td.getBoundingClientRect().width}));
  }
  return {week: table.dataset.week, caption: table.querySelector('caption').textContent,
          note: document.querySelector('[data-figure=heat-week]').textContent,
          columns: [...table.querySelectorAll('th[data-segment]')].map(th => th.innerText.replace(/\\s+/g, ' ').trim()),
          rows};
})()"""


@pytest.fixture(scope="module")
def timed_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("heat")
    plan_file, html = work / "plan.json", work / "report.html"
    assert run_cli("plan", str(CLINIC), "--week", "2026-W48", "--out", str(plan_file),
                   "--state", str(work / "s")).code == 0
    result = run_cli("report", str(plan_file), "--out", str(html))
    assert result.code == 0, result.output
    return plan_file, html


def test_the_heat_map_shows_each_pool_over_the_week(timed_report: tuple[Path, Path], tmp_path: Path) -> None:
    plan_file, html = timed_report
    raw = json.loads(plan_file.read_text())
    plan = plan_from_json(plan_file.read_text())
    with Browser(tmp_path / "chromium-profile") as browser:
        session, visit = browser.visit(html)
        facts = browser.evaluate(session, HEAT_FACTS)
        browser.screenshot(session, tmp_path / "heat.png")
    assert visit.console_errors == []
    assert facts is not None, "no heat map in the report of a timed plan"
    assert facts["week"] == "2026-W48" and "2026-W48" in facts["caption"] and "UTC" in facts["caption"]
    assert "UTC" in facts["note"]
    assert facts["columns"] == [f"{week_clock(s.start_hour)} → {week_clock(s.end_hour)} {figure(s.hours)} h"
                                for s in plan.segments]
    capacity = {p.pool: (p.capacity_gpus, p.committed) for p in plan.pools}
    assert set(facts["rows"]) == {w["pool"] for w in raw["pool_weeks"]}
    for week in raw["pool_weeks"]:
        cells = facts["rows"][week["pool"]]
        total, committed = capacity[week["pool"]]
        assert [c["gpus"] for c in cells] == pytest.approx(week["gpus"])
        assert [c["machines"] for c in cells] == pytest.approx(week["machines"])
        assert [c["idle"] for c in cells] == pytest.approx(week["idle_committed_gpu_hours"])
        for cell, gpus, machines, idle in zip(cells, week["gpus"], week["machines"], week["idle_committed_gpu_hours"],
                                              strict=True):
            tail = f"idle {figure(idle)} GPU-h" if committed else f"{figure(machines)} machine"
            assert cell["text"].startswith(f"{figure(gpus)} / {total} {tail}"), cell
            assert cell["width"] > 20
    # shaded by the share held: an empty cell is white, the owned pool's full day service dark
    own = facts["rows"]["own-h100"]
    full = next(k for k, g in enumerate(raw["pool_weeks"][0]["gpus"]) if g == 16)
    empty = raw["pool_weeks"][0]["gpus"].index(0.0)
    assert own[empty]["shade"] == "rgb(255, 255, 255)" and own[full]["shade"] != own[empty]["shade"]


def test_every_name_in_the_heat_map_is_escaped(timed_report: tuple[Path, Path]) -> None:
    plan = plan_from_json(timed_report[0].read_text())
    hostile = '<img src=x onerror=alert(1)>"'
    renamed = replace(plan, week='2026-W48"><script>alert(2)</script>',
                      pools=tuple(replace(p, pool=hostile if p.pool == "own-h100" else p.pool, site=hostile)
                                  for p in plan.pools),
                      placements=tuple(replace(p, pool=hostile if p.pool == "own-h100" else p.pool)
                                       for p in plan.placements))
    text = render_report(renamed)
    heat = text[text.index('data-table="heat"'):]
    heat = heat[:heat.index("</table>")]
    assert "<img" not in heat and "<script>" not in heat
    assert "&lt;img src=x onerror=alert(1)&gt;&#34;" in heat and "&lt;script&gt;alert(2)" in heat


def test_an_untimed_plan_has_no_heat_map(tmp_path: Path) -> None:
    # the same fleet without its windows: always on, one segment, no week
    untimed = tmp_path / "untimed.yaml"
    untimed.write_text("\n".join(line.replace("hours_per_month: 40", "hours_per_month: 730")
                                 .replace("type: fine_tuning", "type: fine_tuning\n    hours_per_month: 730")
                                 for line in CLINIC.read_text().splitlines()
                                 if "schedule:" not in line and "windows:" not in line))
    plan_file, html = tmp_path / "plan.json", tmp_path / "r.html"
    assert run_cli("plan", str(untimed), "--out", str(plan_file), "--state", str(tmp_path / "s")).code == 0
    assert not plan_from_json(plan_file.read_text()).segments
    assert run_cli("report", str(plan_file), "--out", str(html)).code == 0
    text = html.read_text()
    assert 'data-table="heat"' not in text and "The week:" not in text
