"""The markdown plan counts what it means: placements of so many workloads (a workload split over two
pools is two placements of one workload)."""

from __future__ import annotations

from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import plan
from hybridctl.render.plan import render_markdown

# big's two 4-GPU replicas: one fills the 4 owned GPUs, the other goes to the cloud; one runs in the cloud
SPLIT = """\
version: 1
name: counts
regions: [eu-users]
policies: {cost_model: amortized}
sites:
  - {name: dc-a, kind: onprem, jurisdiction: EU, egress_usd_per_gb: 0.01, latency_ms: {eu-users: 10},
     pools: [{name: a-l40s, gpu: L40S, gpus: 4, gpus_per_node: 4, capacity_type: reserved, usd_per_gpu_hour: 1.0}]}
  - {name: aws, kind: cloud, provider: aws, region: us-east-1, cluster: k8s-aws, jurisdiction: EU,
     egress_usd_per_gb: 0.09, latency_ms: {eu-users: 20},
     pools: [{name: aws-l40s, gpu: L40S, instance_type: g6e.12xlarge, max_gpus: 16, capacity_type: on_demand,
              usd_per_gpu_hour: 2.0}]}
workloads:
  - {name: big, type: realtime_inference, gpu: {types: [L40S], count: 4}, replicas: 2}
  - {name: one, type: realtime_inference, gpu: {types: [L40S], count: 1}, sites: [aws]}
"""


def test_the_markdown_counts_placements_of_workloads() -> None:
    result = plan(load_sources([Source("counts.yaml", SPLIT)]).inventory)
    assert (len(result.placements), len({p.workload for p in result.placements})) == (3, 2)
    assert "· 3 placements of 2 workloads · 0 workloads unplaced" in render_markdown(result)
