"""`cost --by KEY`: hand-worked lines for every key, not only "the lines add up to the total".

The inventory (worked out by hand):
- dc (on-prem, 2 L4 at $1.00, egress $0.05/GB, holds `logs`, 200 GB): `web` takes both GPUs,
  2 replicas × 730 h × $1.00 = $1,460 (fixed, realtime_inference, reserved).
- aws (cloud): `train` (training, 100 h) on on-demand L4 at $2.00 = $200, and it reads `logs`
  from dc: 200 GB × 1 pass × $0.05 = $10 of data movement, charged where it is received (aws,
  pool aws-od); `eval` (evaluation, 50 h) on aws-od = $100; `sweep` (preemptible experiment,
  100 h) on spot L4 at $0.50 = $50.
Total $1,820, the same in cash (the default cost model): dc's 2 GPUs are committed, $1,460 a
month, and web uses both, so the idle committed line is $0; g6.xlarge holds 1 GPU, so every
part-time replica's own machine costs exactly its GPU-hours. train and eval share a tier (burst)
but not a type, so --by tier and --by type differ. Teams: web is `shop`'s ($1,460); train, eval
and sweep are `ml`'s ($350 compute + $10 data).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.apply_cli import write_inventory
from support.inproc import run_cli


def document() -> dict[str, Any]:
    def rented(name: str, capacity_type: str, usd: float) -> dict[str, Any]:
        return {"name": name, "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 4,
                "capacity_type": capacity_type, "usd_per_gpu_hour": usd}

    def work(name: str, kind: str, hours: float | None, replicas: int = 1, **extra: Any) -> dict[str, Any]:
        w = {"name": name, "type": kind, "gpu": {"types": ["L4"], "count": 1}, "replicas": replicas, **extra}
        return w | ({"hours_per_month": hours} if hours else {})

    return {
        "version": 1, "name": "showback", "regions": ["users"],
        "sites": [
            {"name": "dc", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.05,
             "latency_ms": {"users": 10},
             "pools": [{"name": "dc-l4", "gpu": "L4", "gpus": 2, "capacity_type": "reserved", "usd_per_gpu_hour": 1.0}]},
            {"name": "aws", "kind": "cloud", "provider": "aws", "region": "eu-west-1", "cluster": "k8s",
             "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"users": 20},
             "pools": [rented("aws-od", "on_demand", 2.0), rented("aws-spot", "spot", 0.5)]},
        ],
        "datasets": [{"name": "logs", "site": "dc", "size_gb": 200, "sensitivity": "internal"}],
        "workloads": [
            work("web", "realtime_inference", None, replicas=2, team="shop"),
            work("train", "training", 100, datasets=["logs"], team="ml"),
            work("eval", "evaluation", 50, team="ml"),
            work("sweep", "experiment", 100, preemptible=True, checkpoint_minutes=10, team="ml"),
        ],
    }


# key -> [(line, gpus, compute, data)], dearest first, as `cost --format json` lists them
EXPECTED: dict[str, list[tuple[str, int, float, float]]] = {
    "tier": [("fixed", 2, 1460.0, 0.0), ("burst", 2, 300.0, 10.0), ("opportunistic", 1, 50.0, 0.0)],
    "type": [("realtime_inference", 2, 1460.0, 0.0), ("training", 1, 200.0, 10.0), ("evaluation", 1, 100.0, 0.0),
             ("experiment", 1, 50.0, 0.0)],
    "site": [("dc", 2, 1460.0, 0.0), ("aws", 3, 350.0, 10.0)],
    "pool": [("dc-l4", 2, 1460.0, 0.0), ("aws-od", 2, 300.0, 10.0), ("aws-spot", 1, 50.0, 0.0)],
    "workload": [("web", 2, 1460.0, 0.0), ("train", 1, 200.0, 10.0), ("eval", 1, 100.0, 0.0),
                 ("sweep", 1, 50.0, 0.0)],
    "capacity_type": [("reserved", 2, 1460.0, 0.0), ("on_demand", 2, 300.0, 10.0), ("spot", 1, 50.0, 0.0)],
    "team": [("shop", 2, 1460.0, 0.0), ("ml", 3, 350.0, 10.0)],
}
IDLE_COMMITTED = ("(idle committed)", 0, 0.0, 0.0)  # every key ends with it: every dollar is allocated


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("showback")
    inventory = write_inventory(tmp / "inventory.yaml", document())
    out = tmp / "plan.json"
    result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp / "state"))
    assert result.code == 0, result.output
    return out


@pytest.mark.parametrize("by", sorted(EXPECTED))
def test_each_line_is_worked_out_by_hand(plan_file: Path, by: str) -> None:
    result = run_cli("cost", str(plan_file), "--by", by, "--format", "json")
    assert result.code == 0, result.output
    document_ = json.loads(result.stdout)
    assert document_["total_usd_per_month"] == 1820.0
    got = [(line[by], line["gpus"], line["compute_usd_per_month"], line["data_usd_per_month"])
           for line in document_["lines"]]
    assert got == [*EXPECTED[by], IDLE_COMMITTED]
    assert [line["total_usd_per_month"] for line in document_["lines"]] == [
        round(compute + data, 2) for _, _, compute, data in [*EXPECTED[by], IDLE_COMMITTED]]


def test_every_key_is_covered() -> None:
    from hybridctl.core.pricing.showback import CostDimension

    assert {d.value for d in CostDimension} == set(EXPECTED)
