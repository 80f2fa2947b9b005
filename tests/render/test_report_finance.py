"""The report's section for finance, on the hand-worked hospital fleet (tests/data/showback/hospital.yaml):
budget $40,000, total $27,650 → headroom $12,350 (69 % used); 1 idle owned GPU ($1,095); the p5 that
clinical-notes-llm has alone is $17,520 of idle pay-per-use; losing the main data centre costs +$5,840 in
cash with its 2 GPUs ($1,460) still paid."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.failover.drill import drill
from hybridctl.core.failover.scenario import parse_scenario_file
from hybridctl.core.failover.serialize import drill_to_dict
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.render.report import drill_view, render_report
from hybridctl.render.report_finance import budget_text, finance_view

DATA = Path(__file__).resolve().parents[1] / "data" / "showback"


@pytest.fixture(scope="module")
def hospital():
    inventory = load_inventory(DATA / "hospital.yaml").inventory
    return inventory, plan(inventory)


def test_budget_idle_and_prices(hospital) -> None:
    _, result = hospital
    view = finance_view(result, "2026-11-26")
    assert budget_text(view.budget) == "$27,650.00 of $40,000.00 (69% used); headroom $12,350.00/month"
    assert (view.idle_committed_gpus, view.idle_committed_usd_per_month) == (1, 1095.0)
    assert view.idle_pay_per_use_usd_per_month == 17520.0
    assert view.idle_pay_per_use == (
        "1 machine of 8 H100 (aws-p5) at 2/8 GPUs for clinical-notes-llm: $17,520.00/month idle",)
    assert {p.pool: p.source for p in view.prices}["aws-p5"] == "the inventory's usd_per_gpu_hour"
    assert view.catalog_read_on == ""  # every hospital pool sets its own price


def test_the_scenarios_cash_and_the_plan_date_are_on_the_page(hospital) -> None:
    inventory, result = hospital
    scenarios = parse_scenario_file((DATA / "hospital-drills.yaml").read_text(), "hospital-drills.yaml")[0]
    report = drill(inventory, result, scenarios)
    view = drill_view(json.dumps(drill_to_dict(report)), "drill.json")
    html = render_report(result, drill=view, planned_on="2026-11-26")
    assert "main-dc-lost: +$5,840.00/month (+$5,840.00 extra spend) (2 committed GPU(s) lost, $1,460.00/month still paid)" in html
    assert "annex-halved: ±$0.00/month (±$0.00 extra spend) (1 committed GPU(s) lost, $1,095.00/month still paid)" in html
    assert 'data-figure="planned-on">2026-11-26<' in html


def test_the_summary_hints_what_would_avoid_the_idle_machine(hospital) -> None:
    from hybridctl.core.pricing.shares import IdleMachines
    from hybridctl.render.plan_summary import machine_shape_hint, shape_hint_lines

    _, result = hospital
    # a 2-GPU replica on a p5: the catalog has no smaller H100 machine, so the way out is another type or site
    assert shape_hint_lines(result) == [
        "aws-p5: $17,520.00/month idle on 8-GPU machines; no smaller H100 shape in the catalog: add a GPU type "
        "to gpu.types, or a pool at another site"]
    # 1-GPU replicas on 4-GPU L40S machines: the catalog's 1-GPU L40S machine, cheapest first
    l40s = IdleMachines("aws-g6e", "L40S", 1, 1, 4, ("embed",), 5_000.0)
    assert machine_shape_hint(l40s) == (
        "aws-g6e: $5,000.00/month idle on 4-GPU machines; a pool of a smaller L40S shape fits them: "
        "g6e.xlarge (1 GPU, $1.861/h), g6e.2xlarge (1 GPU, $2.242/h)")


def test_an_untimed_fleets_part_time_work_is_hinted_a_schedule() -> None:
    from hybridctl.render.plan_summary import part_time_hint
    from support.examples import EXAMPLES
    from support.plan_week import AT_PLAN_WEEK

    # cloud-burst has no schedule: foundation-pretrain (4 × 8 owned GPUs, 600 h) and nightly-eval (4 × 1 GPU,
    # 90 h) hold their owned GPUs all month: 32 × 130 + 4 × 640 = 6,720 GPU-hours held and not used
    result = plan(load_inventory(EXAMPLES / "cloud-burst.yaml").inventory)
    held = [pl for pl in result.placements if pl.pool in {"ash-h100", "ash-l40s"} and pl.hours_per_month < 730]
    unused = sum(pl.gpus * (730 - pl.hours_per_month) for pl in held)
    assert part_time_hint(result) == (f"foundation-pretrain, nightly-eval hold owned GPUs all month ({unused:,.0f} "
                                      "GPU-h unused): a `schedule` would time-share them")
    timed = plan(load_inventory(EXAMPLES / "train-onprem-serve-cloud.yaml").inventory, options=AT_PLAN_WEEK)
    assert timed.segments and part_time_hint(timed) == ""
