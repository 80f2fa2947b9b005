"""Plan -> Pulumi stack configuration, and the cloud changes between two configurations."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hybridctl.core.deploy.stackconfig import nodes_for, plan_digest, stack_configs
from hybridctl.core.deploy.stackdiff import CloudChange, diff_stack_configs
from hybridctl.core.deploy.stackvalues import (
    GpuPoolsStackConfig,
    NodePoolConfig,
    QueuesStackConfig,
    StackConfigs,
)
from hybridctl.core.inventory.models import Dataset, Inventory, ReservationType, Workload
from hybridctl.core.plan.model import Placement, Plan, PoolUsage, SolverReport


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

    def test_opportunistic_pools_start_with_their_planned_machines_and_may_shrink_to_zero(self) -> None:
        spot = pools_of(stack_configs(inventory(), PLAN, "d"), "aws-use1")["use1-p5-spot"]
        # 24 planned opportunistic GPUs: 3 machines started; none is always on.
        assert (spot.min_size, spot.desired_size, spot.max_size, spot.capacity_type) == (0, 3, 8, "spot")

    def test_the_plans_machine_counts_size_the_node_group_when_the_plan_carries_them(self) -> None:
        usage = PoolUsage("aws-use1", "use1-p5-spot", "H100", "spot", 64, 24, 2.45)
        object.__setattr__(usage, "machines", 4)  # a plan that counts whole machines per pool
        spot = pools_of(stack_configs(inventory(), replace(PLAN, pools=(usage,)), "d"), "aws-use1")["use1-p5-spot"]
        assert (spot.min_size, spot.desired_size) == (0, 4)

    def test_spot_pools_diversify_over_same_shape_instance_types(self) -> None:
        pools = pools_of(stack_configs(inventory(), PLAN, "d"), "aws-use1")
        assert pools["use1-p5-spot"].types == ("p5.48xlarge",)  # the catalog has one 8×H100 type
        assert pools["use1-p5-od"].types == ("p5.48xlarge",)

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
            "name": "use1-p5-od", "instanceTypes": ["p5.48xlarge"], "capacityType": "on_demand", "gpuType": "H100",
            "gpusPerNode": 8, "minSize": 2, "desiredSize": 4, "maxSize": 16, "diskGiB": 100, "localNvme": True,
        }

    def test_the_default_digest_is_the_plan_files_and_is_stable(self) -> None:
        configs = stack_configs(inventory(), PLAN)
        assert configs.gpu_pools[0].plan_digest == plan_digest(PLAN)
        assert plan_digest(PLAN).startswith("sha256:") and len(plan_digest(PLAN)) == 71
        assert plan_digest(PLAN) != plan_digest(make_plan(*PLAN.placements[:-1]))

    def test_a_plans_digest_is_its_files_however_many_plans_were_digested_between(self) -> None:
        import hashlib

        from hybridctl.core.plan.serialize import plan_to_json

        plans = [make_plan(*PLAN.placements[:n]) for n in range(len(PLAN.placements), 0, -1)] * 3
        for one in plans:  # kept digests of other plans, and this one's again
            assert plan_digest(one) == "sha256:" + hashlib.sha256(plan_to_json(one, plan_file=True).encode()).hexdigest()


class TestQueues:
    def test_one_queue_stack_per_cluster_with_planned_pools(self) -> None:
        configs = stack_configs(inventory(), PLAN, "d")
        assert [q.stack_name for q in configs.queues] == ["acme-ml-use1"]
        assert queues_of(configs, "ml-use1").cohort == "acme"

    def test_a_flavor_per_planned_pool_selecting_its_nodes(self) -> None:
        flavors = {f.name: f for f in queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1").flavors}
        assert set(flavors) == {"use1-p5-od", "use1-p5-spot", "use1-g6-res"}
        assert dict(flavors["use1-p5-spot"].node_labels) == {
            "hybridctl.io/gpu": "H100", "hybridctl.io/pool": "use1-p5-spot", "hybridctl.io/site": "aws-use1"}
        assert flavors["use1-g6-res"].gpu_type == "L4"

    def test_each_queue_reaches_only_its_gpu_types_cheapest_first_with_planned_gpus(self) -> None:
        queues = queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1")
        as_pairs = {q.name: [(f.flavor, f.gpus) for f in q.flavors] for q in queues.cluster_queues}
        assert as_pairs == {
            "acme-fixed-h100": [("use1-p5-od", 12)],  # never spot, never L4
            "acme-fixed-l4": [("use1-g6-res", 16)],  # 4 planned, and the reserved pool's 12 no other queue reaches
            "acme-burst-h100": [("use1-p5-od", 20)],
            "acme-opportunistic-h100-spot": [("use1-p5-spot", 24)],  # on-demand not allowed by default
        }
        assert {(w.name, w.cluster_queue) for w in queues.workloads} == {
            ("chat", "acme-fixed-h100"), ("recs", "acme-fixed-l4"), ("pretrain", "acme-burst-h100"),
            ("sweeps", "acme-opportunistic-h100-spot")}

    def test_on_demand_opens_to_opportunistic_when_the_policy_allows(self) -> None:
        queues = queues_of(stack_configs(inventory(allow_on_demand_for_opportunistic=True), PLAN, "d"), "ml-use1")
        assert [q.flavor for q in queues.quotas("acme-opportunistic-h100-spot")] == ["use1-p5-spot", "use1-p5-od"]

    def test_a_local_queue_for_each_workload_placed_in_the_cluster(self) -> None:
        queues = queues_of(stack_configs(inventory(), PLAN, "d"), "ml-use1")
        assert [(w.name, w.tier) for w in queues.workloads] == [
            ("chat", "fixed"), ("pretrain", "burst"), ("recs", "fixed"), ("sweeps", "opportunistic"),
        ]
        assert queues.multikueue_clusters == ()
        assert "multiKueueClusters" not in queues.values()

    def test_burst_spanning_clusters_makes_the_smallest_share_dispatch_to_the_others(self) -> None:
        plan = make_plan(
            place("pretrain", "burst", "aws-use1", "use1-p5-od", 16),
            place("pretrain", "burst", "aws-euw1", "euw1-p5-od", 32),
            place("finetune", "burst", "aws-use1", "use1-p5-od", 8),
            place("chat", "fixed", "aws-use1", "use1-p5-od", 8),
            place("recs", "fixed", "aws-usw2", "usw2-g6-od", 2),
        )
        configs = stack_configs(inventory(), plan, "d")
        euw1, use1, usw2 = (queues_of(configs, c) for c in ("ml-euw1", "ml-use1", "ml-usw2"))
        # Only pretrain spans clusters: ml-use1 plans 16 of its GPUs, ml-euw1 32, so ml-use1 dispatches.
        assert use1.multikueue_clusters == ("ml-euw1",) and euw1.multikueue_clusters == () and usw2.multikueue_clusters == ()
        assert use1.values()["multiKueueClusters"] == [{"name": "ml-euw1", "kubeconfigSecret": "ml-euw1-kubeconfig"}]
        assert {w.name for w in euw1.workloads} == {"pretrain"}
        assert {w.name for w in use1.workloads} == {"pretrain", "finetune", "chat"}
        assert {w.name for w in usw2.workloads} == {"recs"}
        # finetune runs only in ml-use1: its queue stays local; pretrain's dispatches.
        dispatched = {q.name for q in use1.cluster_queues if q.dispatched}
        assert {w.cluster_queue for w in use1.workloads if w.name == "pretrain"} == dispatched
        assert not {w.cluster_queue for w in use1.workloads if w.name == "finetune"} & dispatched

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
        assert [c.name for c in found if c.kind == "cluster-queue"] == [
            "acme-burst-h100", "acme-fixed-h100", "acme-fixed-l4", "acme-opportunistic-h100-spot"]
        assert {c.action for c in found} == {"create"}

    def test_the_same_plan_changes_nothing_even_with_a_new_digest(self) -> None:
        assert diff_stack_configs(stack_configs(inventory(), PLAN, "a"), stack_configs(inventory(), PLAN, "b")) == ()

    def test_more_burst_resizes_the_node_group_and_the_burst_queue(self) -> None:
        more = make_plan(*PLAN.placements, place("pretrain2", "burst", "aws-use1", "use1-p5-od", 16))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), more, "d"))
        assert ("node-group", "use1-p5-od", "resize",
                "min 2, desired 4→6, max 16 (a live group keeps its own desired size, moved within min and max)") in found
        assert ("cluster-queue", "acme-burst-h100", "resize", "use1-p5-od 20→36 GPUs") in found
        assert ("namespace", "pretrain2", "create", "tier burst") in found
        assert ("local-queue", "pretrain2", "create", "queue acme-burst-h100") in found
        assert len(found) == 4

    def test_a_pool_leaving_the_plan_deletes_its_node_group_and_flavor(self) -> None:
        fewer = make_plan(*(p for p in PLAN.placements if p.pool != "use1-p5-spot"))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), fewer, "d"))
        assert ("node-group", "use1-p5-spot", "delete", "p5.48xlarge ×3") in found
        assert ("resource-flavor", "use1-p5-spot", "delete", "") in found
        assert ("cluster-queue", "acme-opportunistic-h100-spot", "delete", "") in found
        assert ("local-queue", "sweeps", "delete", "its pending jobs are no longer admitted") in found
        # The namespace is retained, never deleted with the stack's objects.
        assert ("namespace", "sweeps", "release", "kept in the cluster, no longer managed") in found
        deleted = next(c for c in diff_stack_configs(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), fewer, "d"))
                       if c.kind == "node-group")
        assert deleted.destructive and deleted.removes_machines

    def test_a_site_leaving_the_plan_deletes_its_stacks(self) -> None:
        found = diff_stack_configs(stack_configs(inventory(), PLAN, "d"), StackConfigs((), ()))
        # Its node groups have machines: deleting them needs more than --auto-approve.
        assert CloudChange("aws-gpu-pools", "acme-aws-use1", "stack", "acme-aws-use1", "delete", removes_machines=True) in found
        assert CloudChange("k8s-queues", "acme-ml-use1", "stack", "acme-ml-use1", "delete") in found
        assert {c.action for c in found} == {"delete", "release"}

    def test_a_changed_instance_type_is_a_replacement(self) -> None:
        before = stack_configs(inventory(), PLAN, "d")
        site = before.gpu_pools[0]
        pools = tuple(replace(p, instance_type="p5e.48xlarge") if p.name == "use1-p5-od" else p for p in site.node_pools)
        after = StackConfigs((replace(site, node_pools=pools),), before.queues)
        assert changes(before, after) == [("node-group", "use1-p5-od", "replace", "p5.48xlarge on_demand→p5e.48xlarge on_demand")]

    def test_on_demand_to_reserved_is_no_replacement(self) -> None:
        before = stack_configs(inventory(), PLAN, "d")
        site = before.gpu_pools[0]
        pools = tuple(replace(p, capacity_type="reserved") if p.name == "use1-p5-od" else p for p in site.node_pools)
        after = StackConfigs((replace(site, node_pools=pools),), before.queues)
        # the capacity-type label only: no new launch template version, no node rolled
        assert changes(before, after) == [("node-group", "use1-p5-od", "update", "capacity on_demand→reserved")]

    def test_a_workload_changing_tier_repoints_its_local_queue(self) -> None:
        moved = make_plan(*(replace(p, tier="burst") if p.workload == "chat" else p for p in PLAN.placements))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), moved, "d"))
        # spec.clusterQueue is immutable: the LocalQueue is replaced, and shown so.
        assert ("local-queue", "chat", "replace", "queue acme-fixed-h100→acme-burst-h100") in found
        assert ("node-group", "use1-p5-od", "resize", "min 2→0, desired 4, max 16") in found

    def test_burst_starting_to_span_clusters_creates_multikueue(self) -> None:
        spread = make_plan(*PLAN.placements, place("pretrain", "burst", "aws-euw1", "euw1-p5-od", 8))
        found = changes(stack_configs(inventory(), PLAN, "d"), stack_configs(inventory(), spread, "d"))
        # ml-euw1 plans 8 of pretrain's GPUs, ml-use1 20: the smaller share dispatches.
        assert ("multikueue", "burst", "create", "workers ml-use1") in found
        assert ("stack", "acme-ml-euw1", "create", "") in found


class TestLaunchTemplateInputs:
    @staticmethod
    def with_work(**pool_changes: Any) -> Inventory:
        base = inventory()
        sites = [s.model_copy(update={"pools": [p.model_copy(update=pool_changes) if p.name == "use1-g6-res" else p
                                                for p in s.pools]}) for s in base.sites]
        return base.model_copy(update={
            "sites": sites,
            "datasets": [Dataset.model_validate({"name": "corpus", "site": "aws-use1", "size_gb": 500,
                                                 "sensitivity": "internal"})],
            "workloads": [Workload.model_validate({
                "name": "pretrain", "type": "pretraining", "gpu": {"types": ["H100"], "count": 16},
                "hours_per_month": 100, "model_gb": 300, "datasets": ["corpus"]})],
        })

    def test_the_root_holds_the_os_beside_local_nvme_and_never_datasets(self) -> None:
        from hybridctl.core.deploy.stackconfig import disk_gib
        p5 = pools_of(stack_configs(self.with_work(), PLAN, "d"), "aws-use1")["use1-p5-od"]
        # containerd and kubelet (images, caches) on the 8 local NVMe drives: the root holds the OS.
        assert (p5.disk_gib, p5.local_nvme) == (100, True)
        # Without local NVMe: the 300 GB model (280 GiB) and 100 GiB for the OS and images; the 500 GB corpus
        # stays where the plan reads it from.
        assert disk_gib(self.with_work().workloads, local_nvme_gb=0) == 380

    def test_multi_node_work_on_an_efa_type_gets_an_interface_per_network_card(self) -> None:
        pools = pools_of(stack_configs(self.with_work(), PLAN, "d"), "aws-use1")
        assert pools["use1-p5-od"].efa_interfaces == 32  # 16-GPU replicas span two p5.48xlarge
        assert pools["use1-p5-spot"].efa_interfaces == 0  # sweeps is not multi-node work

    def test_reserved_pools_carry_their_reservation_and_zone_pools_their_zone(self) -> None:
        inv = self.with_work(reservation_id="cr-0123456789abcdef0", failure_domain="us-east-1b")
        g6 = pools_of(stack_configs(inv, PLAN, "d"), "aws-use1")["use1-g6-res"]
        assert (g6.reservation_id, g6.availability_zone) == ("cr-0123456789abcdef0", "us-east-1b")
        other_domain = self.with_work(failure_domain="rack-7")
        assert pools_of(stack_configs(other_domain, PLAN, "d"), "aws-use1")["use1-g6-res"].availability_zone is None

    def test_a_capacity_block_group_is_created_at_zero(self) -> None:
        """Its machines launch only inside the block's dates. Before: created at the whole reservation (the
        reserved rule), launching before the block starts."""
        inv = self.with_work(reservation_id="cr-0123456789abcdef0", failure_domain="us-east-1b",
                             reservation_type=ReservationType.CAPACITY_BLOCK)
        g6 = pools_of(stack_configs(inv, PLAN, "d"), "aws-use1")["use1-g6-res"]
        assert g6.capacity_block and (g6.min_size, g6.desired_size, g6.max_size) == (0, 0, 4)
        ordinary = pools_of(stack_configs(self.with_work(reservation_id="cr-0123456789abcdef0",
                                                         failure_domain="us-east-1b"), PLAN, "d"), "aws-use1")["use1-g6-res"]
        assert (ordinary.min_size, ordinary.desired_size, ordinary.max_size) == (4, 4, 4)


class TestReach:
    def test_opportunistic_work_that_is_not_preemptible_never_reaches_spot(self) -> None:
        inv = inventory(allow_on_demand_for_opportunistic=True).model_copy(update={"workloads": [
            Workload.model_validate({"name": "embed", "type": "embedding", "gpu": {"types": ["H100"], "count": 8},
                                     "hours_per_month": 50}),
            Workload.model_validate({"name": "sweeps", "type": "experiment", "gpu": {"types": ["H100"], "count": 8},
                                     "hours_per_month": 50, "preemptible": True, "checkpoint_minutes": 15}),
        ]})
        plan = make_plan(place("embed", "opportunistic", "aws-use1", "use1-p5-od", 8),
                         place("sweeps", "opportunistic", "aws-use1", "use1-p5-spot", 8))
        queues = queues_of(stack_configs(inv, plan, "d"), "ml-use1")
        queue_of = {w.name: w.cluster_queue for w in queues.workloads}
        assert [f.flavor for f in queues.quotas(queue_of["embed"])] == ["use1-p5-od"]
        assert [f.flavor for f in queues.quotas(queue_of["sweeps"])] == ["use1-p5-spot", "use1-p5-od"]

    def test_a_workload_reaches_every_pool_of_its_gpu_types_and_no_other(self) -> None:
        inv = inventory().model_copy(update={"workloads": [
            Workload.model_validate({"name": "chat", "type": "realtime_inference", "team": "support",
                                     "gpu": {"types": ["A10G", "L4"], "count": 1}}),
        ]})
        plan = make_plan(place("chat", "fixed", "aws-use1", "use1-g6-res", 4), place("x", "fixed", "aws-use1", "use1-p5-od", 8),
                         place("y", "fixed", "aws-use1", "use1-g5-od", 1))
        queues = queues_of(stack_configs(inv, plan, "d"), "ml-use1")
        (chat,) = [w for w in queues.workloads if w.name == "chat"]
        assert (chat.cluster_queue, chat.team) == ("acme-fixed-a10g-l4", "support")
        # the reserved pool's GPUs that no queue borrows are the fixed queue's headroom
        assert [(f.flavor, f.gpus) for f in queues.quotas(chat.cluster_queue)] == [("use1-g6-res", 16), ("use1-g5-od", 0)]
