"""Site teams (spec, "Site teams"): a site with `teams` runs only those teams' workloads; a workload
without `team` may not run there; `validate` reports an allow-list naming a site its team may not use."""

from __future__ import annotations

import textwrap
from dataclasses import replace
from pathlib import Path

from hybridctl.core.checker.check import check_plan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from support.cases import inventory, onprem, owned, placed, work
from support.inproc import run_cli


def _fleet(*workloads: dict[str, object]) -> Inventory:
    subsidiary = {**onprem("sub-dc", "EU", owned("sub-h100", "H100", 8, 0.5)), "teams": ["radiology"]}
    return inventory([subsidiary, onprem("main-dc", "EU", owned("main-h100", "H100", 8, 2.0))], list(workloads))


def test_a_site_with_teams_runs_only_their_workloads() -> None:
    inv = _fleet(work("scans", types=["H100"], team="radiology"), work("billing", types=["H100"], team="finance"),
                 work("adhoc", types=["H100"]))
    result = plan(inv)
    # the subsidiary's cheap GPUs go to radiology only; the others pay the main site's price
    assert placed(result) == {"scans": {"sub-h100": 1}, "billing": {"main-h100": 1}, "adhoc": {"main-h100": 1}}
    assert check_plan(inv, result) == []


def test_an_unplaced_reason_names_the_sites_teams() -> None:
    inv = _fleet(work("billing", types=["H100"], team="finance", sites=["sub-dc"]))
    [missing] = plan(inv).unplaced
    assert missing.reason == ("no eligible pool: no pool at a site its team may use "
                              "(team finance: sub-dc runs only radiology)")


def test_the_checker_refuses_a_workload_on_another_teams_site() -> None:
    inv = _fleet(work("billing", types=["H100"], team="finance"))
    result = plan(inv)
    [pl] = result.placements
    moved = replace(result, placements=(replace(pl, site="sub-dc", pool="sub-h100", usd_per_month=50.0),))
    assert any("site sub-dc runs only teams ['radiology'], the workload's team is finance" in p
               for p in check_plan(inv, moved))


def test_validate_reports_an_allow_list_naming_a_site_the_team_may_not_use(tmp_path: Path) -> None:
    path = tmp_path / "inventory.yaml"
    path.write_text(textwrap.dedent("""\
        version: 1
        name: teams
        regions: [users]
        sites:
          - name: sub-dc
            kind: onprem
            jurisdiction: EU
            egress_usd_per_gb: 0
            latency_ms: {users: 10}
            teams: [radiology]
            pools:
              - {name: sub-h100, gpu: H100, gpus: 8, capacity_type: reserved, usd_per_gpu_hour: 0.5}
          - name: main-dc
            kind: onprem
            jurisdiction: EU
            egress_usd_per_gb: 0
            latency_ms: {users: 10}
            pools:
              - {name: main-h100, gpu: H100, gpus: 8, capacity_type: reserved, usd_per_gpu_hour: 2.0}
        datasets: []
        workloads:
          - name: billing
            type: training
            team: finance
            gpu: {types: [H100], count: 1}
            hours_per_month: 100
            sites:
              - main-dc
              - sub-dc
        """))
    result = run_cli("validate", str(path))
    assert result.code == 1, result.output
    said = " ".join(result.output.split())  # the console wraps long lines
    # at the allow-list entry's line and column
    assert ("29:9 error workload billing: site 'sub-dc' in `sites` runs only the workloads of teams radiology, and this "
            "workload's team is 'finance' [site-team]") in said
    assert "hint: set `team` to one of radiology, or drop 'sub-dc' from `sites`" in said
