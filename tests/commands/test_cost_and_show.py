"""Showback and re-rendering saved plans."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from support.examples import EXAMPLES
from support.inproc import run_cli

ENTERPRISE = str(EXAMPLES / "enterprise")


@pytest.mark.parametrize("by", ["tier", "type", "site", "pool", "workload", "capacity_type"])
def test_every_breakdown_adds_up_to_the_total(tmp_path: Path, by: str) -> None:
    out = tmp_path / "plan.json"
    assert run_cli("plan", ENTERPRISE, "--out", str(out), "--state", str(tmp_path / "s")).code == 0
    total = json.loads(out.read_text())["total_usd_per_month"]
    result = run_cli("cost", str(out), "--by", by, "--format", "json")
    document = json.loads(result.stdout)
    assert document["by"] == by and document["total_usd_per_month"] == total
    assert sum(line["total_usd_per_month"] for line in document["lines"]) == pytest.approx(total, abs=0.05)


def test_cost_of_an_inventory_equals_cost_of_its_plan(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    run_cli("plan", ENTERPRISE, "--out", str(out), "--state", str(tmp_path / "s"))
    from_plan = run_cli("cost", str(out), "--by", "site", "--format", "csv").stdout
    from_inventory = run_cli("cost", ENTERPRISE, "--by", "site", "--format", "csv").stdout
    assert from_plan == from_inventory
    rows = list(csv.DictReader(io.StringIO(from_plan)))
    assert list(rows[0].keys()) == ["site", "gpus", "compute_usd_per_month", "data_usd_per_month", "total_usd_per_month",
                                    "gpu_hours_per_month", "idle_pay_per_use_usd_per_month"]  # the later two added last
    for column in ("total_usd_per_month", "gpu_hours_per_month"):  # every line adds up, the GPU-hours as the dollars
        assert round(sum(float(r[column]) for r in rows), 2) == round(sum(float(r[column]) for r in csv.DictReader(
            io.StringIO(run_cli("cost", str(out), "--by", "team", "--format", "csv").stdout))), 2)
    totals = [float(r["total_usd_per_month"]) for r in rows]
    assert totals == sorted(totals, reverse=True)  # dearest first
    assert "(idle committed)" in {r["site"] for r in rows}  # cash: the owned capacity nobody uses has its line


def test_show_renders_a_saved_plan_in_every_format(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    run_cli("plan", ENTERPRISE, "--out", str(out), "--state", str(tmp_path / "s"))
    table = run_cli("show", str(out))
    total = json.loads(out.read_text())["total_usd_per_month"]
    assert table.code == 0 and "Placements" in table.stdout and f"total:     ${total:,.2f}/month (cash:" in table.stdout
    markdown = run_cli("show", str(out), "--format", "markdown")
    assert markdown.stdout.startswith("### hybridctl plan: `enterprise`")
    assert json.loads(run_cli("show", str(out), "--format", "json").stdout)["inventory"] == "enterprise"


def test_show_refuses_a_file_that_is_not_a_plan(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.json"
    bogus.write_text('{"format_version": 99}')
    result = run_cli("show", str(bogus))
    assert result.code == 1 and "plan format_version 99 is not supported" in result.stderr
