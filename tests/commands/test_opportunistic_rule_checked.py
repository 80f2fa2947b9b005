"""`plan` checks revision 4's opportunistic rule by planning the inventory without its opportunistic workloads
(core/checker/verify.py planner_violations): a planner that let an embedding job take the owned DGX and rent a
p5 for the clinical service (revision 3's rule) is stopped with exit 70, the plan neither shown nor saved."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.solver import priority
from support.apply_cli import write_inventory
from support.inproc import run_cli

INTERNAL_ERROR = 70


def _hospital() -> dict[str, Any]:
    return {"version": 1, "name": "hospital", "regions": ["users"], "policies": {"cost_model": "cash"},
            "sites": [{"name": "hospital", "kind": "onprem", "jurisdiction": "US", "egress_usd_per_gb": 0,
                       "latency_ms": {"users": 10},
                       "pools": [{"name": "dgx", "gpu": "H100", "gpus": 8, "gpus_per_node": 8,
                                  "capacity_type": "reserved", "usd_per_gpu_hour": 2.1}]},
                      {"name": "aws", "kind": "cloud", "provider": "aws", "region": "us-east-1", "cluster": "k8s",
                       "jurisdiction": "US", "egress_usd_per_gb": 0, "latency_ms": {"users": 10},
                       "pools": [{"name": "p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64,
                                  "capacity_type": "on_demand", "usd_per_gpu_hour": 7.6}]}],
            "workloads": [{"name": "clinical", "type": "realtime_inference", "gpu": {"types": ["H100"], "count": 8},
                           "hours_per_month": 730, "tier": "fixed"},
                          {"name": "embed", "type": "embedding", "gpu": {"types": ["H100"], "count": 8},
                           "hours_per_month": 100, "tier": "opportunistic"}]}


def test_plan_keeps_the_service_on_the_dgx(tmp_path: Path) -> None:
    inventory = write_inventory(tmp_path / "hospital.yaml", _hospital())
    result = run_cli("plan", str(inventory), "--state", str(tmp_path / "s"))
    assert result.code == 0, result.output
    assert "total:     $12,264.00/month" in result.output


def test_a_plan_by_revision_3s_rule_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the planner without the stage of the others' cash alone: the embedding job's GPU-hours before cash
    monkeypatch.setattr(priority, "_others_first", lambda rank, r: False)
    monkeypatch.setattr(priority, "_opportunistic_beside_others", lambda units, model, values: False)
    inventory = write_inventory(tmp_path / "hospital.yaml", _hospital())
    out = tmp_path / "plan.json"
    result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "s"))
    assert result.code == INTERNAL_ERROR, result.output
    assert "tier priority: the fixed and burst tiers cost $56,648.00 a month priced alone, $12,264.00 without the " \
           "opportunistic workloads" in result.output
    assert "$56,648.00/month" not in result.output.split("PlanCheckFailed")[0]
    assert not out.exists()
