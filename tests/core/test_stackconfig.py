"""Plan -> Pulumi stack configuration, and the cloud changes between two configurations."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Placement, Plan, SolverReport
from hybridctl.core.stackconfig import (
    CloudChange,
    GpuPoolsStackConfig,
    NodePoolConfig,
    QueuesStackConfig,
    StackConfigs,
    diff_stack_configs,
    nodes_for,
    plan_digest,
    stack_configs,
)


def cloud_site(name: str, region: str, cluster: str, pools: list[dict[str, Any]]) -> dict[str, Any]:
    return {"name": name, "kind": "cloud", "provider": "aws", "region": region, "cluster": cluster,
            "jurisdiction": "US", "egress_usd_per_gb": 0.09, "latency_ms": {"us-users": 15}, "pools": pools}


def inventory(**policies: Any) -> Inventory:
    return Inventory.model_validate({
        "version": 1, "name": "acme", "regions": ["us-users"], "policies": policies,
        "sites": [
            {"name": "dc-ash", "kind": "onprem", "jurisdiction": "US", "egress_usd_per_gb": 0.02,
             "latency_ms": {"us-users": 10},
             "pools": [{"name": "ash-h100", "gpu": "H100", "gpus": 32, "capacity_type": "reserved", "usd_per_gpu_hour": 1.8}]},
            cloud_site("aws-use1", "us-east-1", "ml-use1", [
                {"name": "use1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 128, "capacity_type": "on_demand"},
                {"name": "use1-p5-spot", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64, "capacity_type": "spot",
                 "usd_per_gpu_hour": 2.45},
                {"name": "use1-g6-res", "gpu": "L4", "instance_type": "g6.12xlarge", "max_gpus": 16, "capacity_type": "reserved",
                 "usd_per_gpu_hour": 0.5},
                {"name": "use1-g5-od", "gpu": "A10G", "instance_type": "g5.xlarge", "max_gpus": 8, "capacity_type": "on_demand"},
            ]),
            cloud_site("aws-euw1", "eu-west-1", "ml-euw1", [
                {"name": "euw1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64, "capacity_type": "on_demand"},
            ]),
            cloud_site("aws-usw2", "us-west-2", "ml-usw2", [
                {"name": "usw2-g6-od", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 8, "capacity_type": "on_demand"},
            ]),
        ],
    })


def place(workload: str, tier: str, site: str, pool: str, gpus: int) -> Placement:
    return Placement(workload=workload, tier=tier, site=site, pool=pool, replicas=1, gpus=gpus, usd_per_month=0.0)


def make_plan(*placements: Placement) -> Plan:
    return Plan(
        inventory_name="acme", inventory_digest="sha256:inv", placements=placements, unplaced=(), data_movements=(),
        pools=(), solver=SolverReport("optimal", 0.0, 0.0, 0.0, 0.0), compute_usd_per_month=0.0, data_usd_per_month=0.0,
        tiers={p.workload: p.tier for p in placements},
    )


PLAN = make_plan(
    place("chat", "fixed", "aws-use1", "use1-p5-od", 12),
    place("pretrain", "burst", "aws-use1", "use1-p5-od", 20),
    place("recs", "fixed", "aws-use1", "use1-g6-res", 4),
    place("sweeps", "opportunistic", "aws-use1", "use1-p5-spot", 24),
    place("onprem-train", "burst", "dc-ash", "ash-h100", 32),
)


def by_site(configs: StackConfigs) -> dict[str, GpuPoolsStackConfig]:
    return {c.site: c for c in configs.gpu_pools}


def pools_of(configs: StackConfigs, site: str) -> dict[str, NodePoolConfig]:
    return {p.name: p for p in by_site(configs)[site].node_pools}


def queues_of(configs: StackConfigs, cluster: str) -> QueuesStackConfig:
    (found,) = [q for q in configs.queues if q.cluster_name == cluster]
    return found


class TestNodeGroups:
    def test_one_stack_per_cloud_site_with_planned_pools(self) -> None:
        configs = stack_configs(inventory(), PLAN, "sha256:p")
        assert [(c.stack_name, c.region, c.cluster_name) for c in configs.gpu_pools] == [
            ("acme-aws-use1", "us-east-1", "ml-use1")
        ]

    def test_only_planned_pools_get_a_node_group(self) -> None:
        assert set(pools_of(stack_configs(inventory(), PLAN, "d"), "aws-use1")) == {"use1-p5-od", "use1-p5-spot", "use1-g6-res"}

    def test_min_covers_fixed_desired_covers_fixed_and_burst_max_is_the_quota(self) -> None:
        p5 = pools_of(stack_configs(inventory(), PLAN, "d"), "aws-use1")["use1-p5-od"]
        # 12 fixed GPUs on 8-GPU nodes: 2 nodes; + 20 burst = 32 GPUs: 4 nodes; quota 128 GPUs: 16 nodes.
        assert (p5.min_size, p5.desired_size, p5.max_size) == (2, 4, 16)
        assert (p5.instance_type, p5.capacity_type, p5.gpu_type, p5.gpus_per_node) == ("p5.48xlarge", "on_demand", "H100", 8)

    def test_opportunistic_only_pools_start_empty_and_may_grow_to_quota(self) -> None:
        spot = pools_of(stack_configs(inventory(), PLAN, "d"), "aws-use1")["use1-p5-spot"]
        assert (spot.min_size, spot.desired_size, spot.max_size, spot.capacity_type) == (0, 0, 8, "spot")

    def test_max_never_falls_below_desired(self) -> None:
        # 9 GPUs need 3 four-GPU nodes although the 16-GPU quota floors to 4 nodes; 17 would exceed it.
        plan = make_plan(place("recs", "fixed", "aws-use1", "use1-g6-res", 16), place("more", "burst", "aws-use1", "use1-g6-res", 1))
        g6 = pools_of(stack_configs(inventory(), plan, "d"), "aws-use1")["use1-g6-res"]
        assert (g6.min_size, g6.desired_size, g6.max_size) == (4, 5, 5)

    @pytest.mark.parametrize(("gpus", "per_node", "nodes"), [(0, 8, 0), (1, 8, 1), (8, 8, 1), (9, 8, 2), (3, 1, 3)])
    def test_nodes_round_up(self, gpus: int, per_node: int, nodes: int) -> None:
        assert nodes_for(gpus, per_node) == nodes

    def test_values_are_the_stack_schema(self) -> None:
        values = by_site(stack_configs(inventory(), PLAN, "sha256:p"))["aws-use1"].values()
        assert {k: v for k, v in values.items() if k != "nodePools"} == {
            "aws:region": "us-east-1", "site": "aws-use1", "clusterName": "ml-use1",
            "inventoryName": "acme", "planDigest": "sha256:p",
        }
        assert values["nodePools"][0] == {  # type: ignore[index]
            "name": "use1-p5-od", "instanceType": "p5.48xlarge", "capacityType": "on_demand", "gpuType": "H100",
            "gpusPerNode": 8, "minSize": 2, "desiredSize": 4, "maxSize": 16,
        }

    def test_the_default_digest_is_the_plan_files_and_is_stable(self) -> None:
        configs = stack_configs(inventory(), PLAN)
        assert configs.gpu_pools[0].plan_digest == plan_digest(PLAN)
        assert plan_digest(PLAN).startswith("sha256:") and len(plan_digest(PLAN)) == 71
        assert plan_digest(PLAN) != plan_digest(make_plan(*PLAN.placements[:-1]))


class TestQueues:
    def test_one_queue_stack_per_cluster_with_planned_pools(self) -> None:
        configs = stack_configs(inventory(), PLAN, "d")
        assert [q.stack_name for q in configs.queues] == ["acme-ml-use1"]
        assert queues_of(configs, "ml-use1").cohort == "acme"

    def test_a_flavor_per_planned_pool_selecting_its_nodes(self) -> None:
        flavors = {f.name: f for f in queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1").flavors}
        assert set(flavors) == {"use1-p5-od", "use1-p5-spot", "use1-g6-res"}
        assert dict(flavors["use1-p5-spot"].node_labels) == {"hybridctl.io/pool": "use1-p5-spot", "hybridctl.io/site": "aws-use1"}
        assert flavors["use1-g6-res"].gpu_type == "L4"

    def test_each_tier_lists_the_flavors_it_may_use_cheapest_first_with_planned_gpus(self) -> None:
        queues = queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1")
        as_pairs = {tier: [(q.flavor, q.gpus) for q in queues.quotas(tier)] for tier in ("fixed", "burst", "opportunistic")}
        assert as_pairs == {
            "fixed": [("use1-g6-res", 4), ("use1-p5-od", 12)],  # $0.50 before $6.88; never spot
            "burst": [("use1-g6-res", 0), ("use1-p5-od", 20)],
            "opportunistic": [("use1-g6-res", 0), ("use1-p5-spot", 24)],  # on-demand not allowed by default
        }

    def test_on_demand_opens_to_opportunistic_when_the_policy_allows(self) -> None:
        queues = queues_of(stack_configs(inventory(allow_on_demand_for_opportunistic=True), PLAN, "d"), "ml-use1")
        assert [q.flavor for q in queues.quotas("opportunistic")] == ["use1-g6-res", "use1-p5-spot", "use1-p5-od"]

    def test_a_local_queue_for_each_workload_placed_in_the_cluster(self) -> None:
        queues = queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1")
        assert [(w.name, w.tier) for w in queues.workloads] == [
            ("chat", "fixed"), ("pretrain", "burst"), ("recs", "fixed"), ("sweeps", "opportunistic"),
        ]
        assert queues.multikueue_clusters == ()
        assert "multiKueueClusters" not in queues.values()

    def test_burst_spanning_clusters_makes_the_biggest_burst_cluster_dispatch_to_the_others(self) -> None:
        plan = make_plan(
            place("pretrain", "burst", "aws-use1", "use1-p5-od", 16),
            place("pretrain", "burst", "aws-euw1", "euw1-p5-od", 32),
            place("finetune", "burst", "aws-use1", "use1-p5-od", 8),
            place("chat", "fixed", "aws-use1", "use1-p5-od", 8),
            place("recs", "fixed", "aws-usw2", "usw2-g6-od", 2),
        )
        configs = stack_configs(inventory(), plan, "d")
        euw1, use1, usw2 = (queues_of(configs, c) for c in ("ml-euw1", "ml-use1", "ml-usw2"))
        assert euw1.multikueue_clusters == ("ml-use1",) and use1.multikueue_clusters == () and usw2.multikueue_clusters == ()
        assert euw1.values()["multiKueueClusters"] == [{"name": "ml-use1", "kubeconfigSecret": "ml-use1-kubeconfig"}]
        # Every burst workload can be mirrored between the two: both queue both.
        assert {w.name for w in euw1.workloads} == {"pretrain", "finetune"}
        assert {w.name for w in use1.workloads} == {"pretrain", "finetune", "chat"}
        assert {w.name for w in usw2.workloads} == {"recs"}

    def test_no_cloud_placements_means_no_stacks(self) -> None:
        configs = stack_configs(inventory(), make_plan(place("onprem-train", "burst", "dc-ash", "ash-h100", 32)), "d")
        assert configs == StackConfigs((), ())


def changes(before: StackConfigs | None, after: StackConfigs) -> list[tuple[str, str, str, str]]:
    return [(c.kind, c.name, c.action, c.detail) for c in diff_stack_configs(before, after)]


class TestDiff:
    def test_nothing_applied_yet_creates_every_stack_and_object(self) -> None:
        found = diff_stack_configs(None, stack_configs(inventory(), PLAN, "d"))
        assert CloudChange("aws-gpu-pools", "acme-aws-use1", "stack", "acme-aws-use1", "create") in found
        assert CloudChange("aws-gpu-pools", "acme-aws-use1", "node-group", "use1-p5-od", "create",
                           "p5.48xlarge min 2, desired 4, max 16") in found
        assert [c.name for c in found if c.kind == "cluster-queue"] == ["acme-fixed", "acme-burst", "acme-opportunistic"]
        assert {c.action for c in found} == {"create"}

    def test_the_same_plan_changes_nothing_even_with_a_new_digest(self) -> None:
        assert diff_stack_configs(stack_configs(inventory(), PLAN, "a"), stack_configs(inventory(), PLAN, "b")) == ()

    def test_more_burst_resizes_the_node_group_and_the_burst_queue(self) -> None:
        more = make_plan(*PLAN.placements, place("pretrain2", "burst", "aws-use1", "use1-p5-od", 16))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), more, "d"))
        assert ("node-group", "use1-p5-od", "resize", "min 2, desired 4→6, max 16") in found
        assert ("cluster-queue", "acme-burst", "resize", "use1-p5-od 20→36 GPUs") in found
        assert ("local-queue", "pretrain2", "create", "tier burst") in found
        assert len(found) == 3

    def test_a_pool_leaving_the_plan_deletes_its_node_group_and_flavor(self) -> None:
        fewer = make_plan(*(p for p in PLAN.placements if p.pool != "use1-p5-spot"))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), fewer, "d"))
        assert ("node-group", "use1-p5-spot", "delete", "p5.48xlarge ×0") in found
        assert ("resource-flavor", "use1-p5-spot", "delete", "") in found
        assert ("cluster-queue", "acme-opportunistic", "update", "flavors use1-g6-res") in found
        assert ("local-queue", "sweeps", "delete", "") in found

    def test_a_site_leaving_the_plan_deletes_its_stacks(self) -> None:
        found = diff_stack_configs(stack_configs(inventory(), PLAN, "d"), StackConfigs((), ()))
        assert CloudChange("aws-gpu-pools", "acme-aws-use1", "stack", "acme-aws-use1", "delete") in found
        assert CloudChange("k8s-queues", "acme-ml-use1", "stack", "acme-ml-use1", "delete") in found
        assert {c.action for c in found} == {"delete"}

    def test_a_changed_instance_type_is_a_replacement(self) -> None:
        before = stack_configs(inventory(), PLAN, "d")
        site = before.gpu_pools[0]
        pools = tuple(replace(p, instance_type="p5e.48xlarge") if p.name == "use1-p5-od" else p for p in site.node_pools)
        after = StackConfigs((replace(site, node_pools=pools),), before.queues)
        assert changes(before, after) == [("node-group", "use1-p5-od", "replace", "p5.48xlarge/on_demand→p5e.48xlarge/on_demand")]

    def test_a_workload_changing_tier_repoints_its_local_queue(self) -> None:
        moved = make_plan(*(replace(p, tier="burst") if p.workload == "chat" else p for p in PLAN.placements))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), moved, "d"))
        assert ("local-queue", "chat", "update", "tier fixed→burst") in found
        assert ("node-group", "use1-p5-od", "resize", "min 2→0, desired 4, max 16") in found

    def test_burst_starting_to_span_clusters_creates_multikueue(self) -> None:
        spread = make_plan(*PLAN.placements, place("pretrain", "burst", "aws-euw1", "euw1-p5-od", 8))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), spread, "d"))
        assert ("multikueue", "burst", "create", "workers ml-euw1") in found
        assert ("stack", "acme-ml-euw1", "create", "") in found
