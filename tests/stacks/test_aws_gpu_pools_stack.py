"""The aws-gpu-pools program under Pulumi's mocks: what it asks AWS for, resource by resource."""

from __future__ import annotations

import inspect
import json
from typing import Any

import pulumi_aws
import pytest
from eks_model import EksRejects, LiveNodeGroup, check_scaling, reservation_errors, rolls, sent_desired
from pulumi_stack_harness import (
    CLUSTER_SUBNETS,
    GET_CLUSTER,
    ProgramRun,
    config_values,
    import_stack_module,
    run_program,
)

gpu_pools = import_stack_module("aws-gpu-pools", "gpu_pools")

ROLE = "aws:iam/role:Role"
LAUNCH_TEMPLATE = "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
ASG_TAG = "aws:autoscaling/tag:Tag"
ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"

POOLS: list[dict[str, Any]] = [
    {"name": "p5-on-demand", "instanceTypes": ["p5.48xlarge"], "capacityType": "on_demand", "gpuType": "H100",
     "gpusPerNode": 8, "minSize": 2, "desiredSize": 3, "maxSize": 16, "diskGiB": 500, "efaInterfaces": 32,
     "availabilityZone": "use1-az4", "localNvme": True},
    {"name": "p5-spot", "instanceTypes": ["p5.48xlarge", "p5e.48xlarge"], "capacityType": "spot", "gpuType": "H100",
     "gpusPerNode": 8, "minSize": 0, "desiredSize": 1, "maxSize": 8},
    {"name": "g6-reserved", "instanceTypes": ["g6.12xlarge"], "capacityType": "reserved", "gpuType": "L4",
     "gpusPerNode": 4, "minSize": 4, "desiredSize": 4, "maxSize": 4, "reservationId": "cr-0123456789abcdef0",
     "availabilityZone": "us-east-1b"},
]


def stack_config(**overrides: Any) -> dict[str, str]:
    values: dict[str, Any] = {
        "aws:region": "us-east-1",
        "site": "aws-us-east-1",
        "clusterName": "ml-use1",
        "inventoryName": "acme-hybrid",
        "planDigest": "sha256:5f2c0e",
        "nodePools": POOLS,
    }
    values.update(overrides)
    return config_values("hybridctl", values)


def run(**overrides: Any) -> ProgramRun:
    return run_program(lambda: gpu_pools.program(gpu_pools.load_config()), stack_config(**overrides))


@pytest.fixture(scope="module")
def site() -> ProgramRun:
    return run()


def node_group(run_: ProgramRun, pool: str) -> dict[str, Any]:
    return run_.one(NODE_GROUP, pool).inputs


class TestResourceInventory:
    def test_registers_exactly_one_role_three_attachments_and_a_node_group_per_pool(self, site: ProgramRun) -> None:
        # Each pool: a launch template, a node group and 7 node-template tags on its ASG (the EFA pool an 8th, its
        # EFA interfaces); the EFA pool a placement group.
        assert site.type_counts() == {ROLE: 1, ATTACHMENT: 3, NODE_GROUP: 3, LAUNCH_TEMPLATE: 3, PLACEMENT_GROUP: 1,
                                      ASG_TAG: 22}
        assert sorted(r.name for r in site.of_type(NODE_GROUP)) == sorted(p["name"] for p in POOLS)

    def test_a_single_pool_gives_a_single_node_group(self) -> None:
        one = run(nodePools=POOLS[:1])
        assert one.type_counts()[NODE_GROUP] == 1

    def test_runs_are_isolated_from_each_other(self, site: ProgramRun) -> None:
        # A second run in the same process sees only its own resources.
        again = run(nodePools=POOLS[1:2])
        assert [r.name for r in again.of_type(NODE_GROUP)] == ["p5-spot"]
        assert len(site.of_type(NODE_GROUP)) == 3


class TestNodeGroups:
    @pytest.mark.parametrize(("pool", "expected"), [("p5-on-demand", "ON_DEMAND"), ("p5-spot", "SPOT"), ("g6-reserved", "ON_DEMAND")])
    def test_capacity_type_is_spot_only_for_spot_pools(self, site: ProgramRun, pool: str, expected: str) -> None:
        assert node_group(site, pool)["capacityType"] == expected

    @pytest.mark.parametrize("pool", POOLS, ids=lambda p: p["name"])
    def test_scaling_and_instance_type_follow_the_config(self, site: ProgramRun, pool: dict[str, Any]) -> None:
        inputs = node_group(site, pool["name"])
        assert inputs["scalingConfig"] == {
            "minSize": pool["minSize"], "desiredSize": pool["desiredSize"], "maxSize": pool["maxSize"],
        }
        assert inputs["instanceTypes"] == pool["instanceTypes"]
        assert inputs["amiType"] == "AL2023_x86_64_NVIDIA"
        assert inputs["clusterName"] == "ml-use1"

    def test_labels_let_kueue_flavors_select_the_pool(self, site: ProgramRun) -> None:
        assert node_group(site, "p5-spot")["labels"] == {
            "hybridctl.io/site": "aws-us-east-1",
            "hybridctl.io/pool": "p5-spot",
            "hybridctl.io/capacity-type": "spot",
            "hybridctl.io/gpu": "H100",
            "k8s.amazonaws.com/accelerator": "nvidia-h100",
        }

    def test_gpu_nodes_carry_cluster_autoscalers_accelerator_label_also_when_scaled_from_zero(self, site: ProgramRun) -> None:
        # Cluster Autoscaler's AWS provider treats a node with this label as a GPU node whose GPUs may still be coming up.
        assert {g.name: g.inputs["labels"]["k8s.amazonaws.com/accelerator"] for g in site.of_type(NODE_GROUP)} == {
            "p5-on-demand": "nvidia-h100", "p5-spot": "nvidia-h100", "g6-reserved": "nvidia-l4"}
        tags = {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in site.of_type(ASG_TAG) if t.name.startswith("g6-")}
        assert tags["k8s.io/cluster-autoscaler/node-template/label/k8s.amazonaws.com/accelerator"] == "nvidia-l4"

    def test_every_node_group_carries_the_gpu_noschedule_taint(self, site: ProgramRun) -> None:
        for group in site.of_type(NODE_GROUP):
            assert group.inputs["taints"] == [{"key": "nvidia.com/gpu", "value": "true", "effect": "NO_SCHEDULE"}]

    def test_subnets_come_from_the_existing_cluster(self, site: ProgramRun) -> None:
        assert [i.args for i in site.invokes if i.token == GET_CLUSTER] == [{"name": "ml-use1"}]
        assert node_group(site, "p5-spot")["subnetIds"] == sorted(CLUSTER_SUBNETS)

    def test_an_efa_pool_without_a_zone_keeps_one_subnet(self) -> None:
        # A cluster placement group lives in one zone.
        pool = {k: v for k, v in POOLS[0].items() if k != "availabilityZone"}
        assert node_group(run(nodePools=[pool]), "p5-on-demand")["subnetIds"] == sorted(CLUSTER_SUBNETS)[:1]

    def test_a_zone_pool_keeps_only_the_cluster_subnets_in_its_zone_by_name_or_by_zone_id(self, site: ProgramRun) -> None:
        lookups = [i for i in site.invokes if i.token == "aws:ec2/getSubnets:getSubnets"]
        assert sorted(({f["name"]: f["values"] for f in i.args["filters"]} for i in lookups), key=str) == [
            {"subnet-id": sorted(CLUSTER_SUBNETS), "availability-zone": ["us-east-1b"]},
            {"subnet-id": sorted(CLUSTER_SUBNETS), "availability-zone-id": ["use1-az4"]}]


# The cluster's subnets with their zones (name, ID), for the tests that model where instances land.
ZONED_SUBNETS = {"subnet-0a1": ("us-east-1a", "use1-az6"), "subnet-0b2": ("us-east-1b", "use1-az1"),
                 "subnet-0c3": ("us-east-1c", "use1-az4")}


class TestReservationsAndZones:
    """Where a reservation's instances may launch (eks_model.reservation_errors: one zone, Capacity Blocks)."""

    @staticmethod
    def zoned(*pools: dict[str, Any]) -> ProgramRun:
        return run_program(lambda: gpu_pools.program(gpu_pools.load_config()), stack_config(nodePools=list(pools)),
                           subnet_zones=ZONED_SUBNETS)

    @pytest.mark.parametrize("zone", ["us-east-1b", "use1-az1"])
    def test_a_reserved_pool_launches_only_in_its_reservations_zone(self, zone: str) -> None:
        run_ = self.zoned({**POOLS[2], "availabilityZone": zone})
        group, template = node_group(run_, "g6-reserved"), run_.one(LAUNCH_TEMPLATE, "g6-reserved-lt").inputs
        assert group["subnetIds"] == ["subnet-0b2"]
        assert reservation_errors(template, group, "us-east-1b", {s: z[0] for s, z in ZONED_SUBNETS.items()}, False) == []

    def test_a_reservation_without_its_zone_is_refused(self) -> None:
        pool = {k: v for k, v in POOLS[2].items() if k != "availabilityZone"}
        with pytest.raises(gpu_pools.ConfigError, match=r"availabilityZone: a pool with reservationId needs"):
            gpu_pools.parse_node_pool(pool, "hybridctl:nodePools[2]")

    def test_a_capacity_block_is_targeted_as_one(self) -> None:
        block = {**POOLS[0], "name": "p5-block", "capacityType": "reserved", "reservationId": "cr-0fedcba9876543210",
                 "capacityBlock": True, "minSize": 2, "desiredSize": 2, "maxSize": 2}
        run_ = self.zoned(block)
        group, template = node_group(run_, "p5-block"), run_.one(LAUNCH_TEMPLATE, "p5-block-lt").inputs
        assert template["instanceMarketOptions"] == {"marketType": "capacity-block"}
        assert template["capacityReservationSpecification"] == {
            "capacityReservationTarget": {"capacityReservationId": "cr-0fedcba9876543210"}}
        assert reservation_errors(template, group, "us-east-1c", {s: z[0] for s, z in ZONED_SUBNETS.items()}, True) == []
        # Where the reservation puts its machines is the reservation's: no placement group of the stack's.
        assert run_.of_type(PLACEMENT_GROUP) == [] and "placement" not in template
        # and both requests are what the EKS and EC2 API models accept (CAPACITY_BLOCK, capacity-block)
        from test_synth_contracts import create_launch_template, create_nodegroup, validate
        assert validate("eks", "CreateNodegroup", create_nodegroup(run_.one(NODE_GROUP, "p5-block"))) == []
        assert validate("ec2", "CreateLaunchTemplate", create_launch_template(run_.one(LAUNCH_TEMPLATE, "p5-block-lt"))) == []

    def test_an_ordinary_reservation_is_not_a_capacity_block(self, site: ProgramRun) -> None:
        template = site.one(LAUNCH_TEMPLATE, "g6-reserved-lt").inputs
        assert "instanceMarketOptions" not in template and node_group(site, "g6-reserved")["capacityType"] == "ON_DEMAND"

    def test_an_efa_pool_and_its_placement_group_are_in_the_pools_zone(self) -> None:
        run_ = self.zoned(POOLS[0])
        assert node_group(run_, "p5-on-demand")["subnetIds"] == ["subnet-0c3"]  # use1-az4
        assert run_.one(LAUNCH_TEMPLATE, "p5-on-demand-lt").inputs["placement"] == {
            "groupName": "<unknown: name of PlacementGroup p5-on-demand-pg>"}

    def test_explicit_subnets_skip_the_cluster_lookup(self) -> None:
        pinned = run(subnetIds=["subnet-private-a", "subnet-private-b"], nodePools=POOLS[1:2])
        # only the live node groups' sizes are read
        assert [i.token for i in pinned.invokes] == ["aws:eks/getNodeGroups:getNodeGroups"]
        for group in pinned.of_type(NODE_GROUP):
            assert group.inputs["subnetIds"] == ["subnet-private-a", "subnet-private-b"]


def live_group(pool: str, desired: int, site_: str = "aws-us-east-1") -> dict[str, Any]:
    """EKS's DescribeNodegroup answer for a node group of the stack (found by its labels)."""
    return {"labels": {"hybridctl.io/site": site_, "hybridctl.io/pool": pool},
            "scalingConfigs": [{"minSize": 1, "desiredSize": desired, "maxSize": 16}]}


class TestScaling:
    """What a deployment sends as the node group's scaling configuration, checked by EKS's rule (eks_model)."""

    def test_a_failover_raising_min_above_the_live_desired_raises_desired_too(self) -> None:
        # Created with min 1, desired 1; the failover's plan keeps 3 machines always on.
        eks = LiveNodeGroup(1, 1, 16)
        failover = {**POOLS[1], "name": "p5-od", "capacityType": "on_demand", "instanceTypes": ["p5.48xlarge"],
                    "minSize": 3, "desiredSize": 3, "maxSize": 16}
        run_ = run_program(lambda: gpu_pools.program(gpu_pools.load_config()), stack_config(nodePools=[failover]),
                           node_groups={"p5-od-4c1e2a": live_group("p5-od", 1)})
        group = run_.one(NODE_GROUP, "p5-od")
        scaling = group.inputs["scalingConfig"]
        eks.update_config(scaling["minSize"], sent_desired(group.inputs, group.options, in_state=1), scaling["maxSize"])
        assert (eks.min_size, eks.desired) == (3, 3)

    def test_a_deployment_never_scales_live_nodes_down_to_a_stale_desired(self) -> None:
        # The autoscaler runs 6 machines; the plan said 3 and min rises from 1 to 2.
        pool = {**POOLS[1], "minSize": 2, "desiredSize": 3, "maxSize": 8}
        run_ = run_program(lambda: gpu_pools.program(gpu_pools.load_config()), stack_config(nodePools=[pool]),
                           node_groups={"p5-spot-9f": live_group("p5-spot", 6), "other-team": live_group("x", 1, "elsewhere")})
        group = run_.one(NODE_GROUP, "p5-spot")
        assert sent_desired(group.inputs, group.options, in_state=3) == 6
        check_scaling(2, 6, 8)

    def test_a_lower_max_brings_desired_within_it(self) -> None:
        pool = {**POOLS[1], "minSize": 0, "desiredSize": 1, "maxSize": 4}
        run_ = run_program(lambda: gpu_pools.program(gpu_pools.load_config()), stack_config(nodePools=[pool]),
                           node_groups={"p5-spot-9f": live_group("p5-spot", 6)})
        group = run_.one(NODE_GROUP, "p5-spot").inputs["scalingConfig"]
        check_scaling(group["minSize"], group["desiredSize"], group["maxSize"])
        assert group["desiredSize"] == 4

    def test_a_new_node_group_starts_at_the_plans_desired(self, site: ProgramRun) -> None:
        assert [i.args for i in site.invokes if i.token == "aws:eks/getNodeGroups:getNodeGroups"] == [{"clusterName": "ml-use1"}]
        assert node_group(site, "p5-on-demand")["scalingConfig"]["desiredSize"] == 3

    def test_the_eks_rule_the_tests_apply(self) -> None:
        with pytest.raises(EksRejects, match="Minimum capacity 3 can't be greater than desired size 1"):
            LiveNodeGroup(1, 1, 16).update_config(3, 1, 16)

    def test_autoscaler_discovers_the_group_and_can_scale_it_from_zero(self, site: ProgramRun) -> None:
        tags = node_group(site, "p5-spot")["tags"]
        assert tags["k8s.io/cluster-autoscaler/enabled"] == "true"
        assert tags["k8s.io/cluster-autoscaler/ml-use1"] == "owned"
        on_asg = {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in site.of_type(ASG_TAG)
                  if t.name.startswith("p5-spot-")}
        assert on_asg["k8s.io/cluster-autoscaler/node-template/label/hybridctl.io/pool"] == "p5-spot"
        assert on_asg["k8s.io/cluster-autoscaler/node-template/taint/nvidia.com/gpu"] == "true:NoSchedule"
        assert on_asg["k8s.io/cluster-autoscaler/node-template/resources/nvidia.com/gpu"] == "8"
        assert {t.inputs["autoscalingGroupName"] for t in site.of_type(ASG_TAG) if t.name.startswith("p5-spot-")} == {
            "<unknown: ASG of NodeGroup p5-spot>"}


class TestLaunchTemplates:
    def test_no_plan_digest_in_launch_template_data(self) -> None:
        # A new digest would be a new template version, which rolls every node (eks_model.rolls).
        one, other = run(planDigest="sha256:aaaa"), run(planDigest="sha256:bbbb")
        for template in one.of_type(LAUNCH_TEMPLATE):
            assert not rolls(template.inputs, other.one(LAUNCH_TEMPLATE, template.name).inputs), template.name
            assert "hybridctl:plan-digest" not in json.dumps(template.inputs)

    def test_imdsv2_with_a_hop_limit_of_one(self, site: ProgramRun) -> None:
        for template in site.of_type(LAUNCH_TEMPLATE):
            assert template.inputs["metadataOptions"] == {
                "httpEndpoint": "enabled", "httpTokens": "required", "httpPutResponseHopLimit": 1}

    def test_local_nvme_is_one_raid0_array_for_containerd_and_kubelet(self, site: ProgramRun) -> None:
        import base64
        data = base64.b64decode(site.one(LAUNCH_TEMPLATE, "p5-on-demand-lt").inputs["userData"]).decode()
        assert "Content-Type: application/node.eks.aws" in data and "kind: NodeConfig" in data
        assert "localStorage:\n      strategy: RAID0" in data
        assert "userData" not in site.one(LAUNCH_TEMPLATE, "p5-spot-lt").inputs

    def test_root_disk_is_sized_encrypted_gp3(self, site: ProgramRun) -> None:
        lt = site.one(LAUNCH_TEMPLATE, "p5-on-demand-lt").inputs
        assert lt["blockDeviceMappings"] == [{"deviceName": "/dev/xvda", "ebs": {
            "volumeSize": 500, "volumeType": "gp3", "encrypted": "true", "deleteOnTermination": "true"}}]

    def test_instances_volumes_and_interfaces_carry_the_cost_tags(self, site: ProgramRun) -> None:
        lt = site.one(LAUNCH_TEMPLATE, "p5-spot-lt").inputs
        assert [t["resourceType"] for t in lt["tagSpecifications"]] == ["instance", "volume", "network-interface"]
        assert all(t["tags"]["hybridctl:pool"] == "p5-spot" for t in lt["tagSpecifications"])

    def test_multi_node_pools_get_efa_and_a_cluster_placement_group(self, site: ProgramRun) -> None:
        lt = site.one(LAUNCH_TEMPLATE, "p5-on-demand-lt").inputs
        assert len(lt["networkInterfaces"]) == 32
        assert [i["interfaceType"] for i in lt["networkInterfaces"][:2]] == ["efa", "efa-only"]
        assert site.one(PLACEMENT_GROUP, "p5-on-demand-pg").inputs["strategy"] == "cluster"
        assert "networkInterfaces" not in site.one(LAUNCH_TEMPLATE, "p5-spot-lt").inputs

    def test_reserved_pools_launch_into_their_capacity_reservation(self, site: ProgramRun) -> None:
        lt = site.one(LAUNCH_TEMPLATE, "g6-reserved-lt").inputs
        assert lt["capacityReservationSpecification"] == {
            "capacityReservationTarget": {"capacityReservationId": "cr-0123456789abcdef0"}}

    def test_node_groups_use_their_template(self, site: ProgramRun) -> None:
        assert node_group(site, "p5-spot")["launchTemplate"] == {
            "id": "<unknown: id of LaunchTemplate p5-spot-lt>", "version": "1"}


class TestNodeRole:
    def test_role_is_assumable_by_ec2_only(self, site: ProgramRun) -> None:
        (role,) = site.of_type(ROLE)
        policy = json.loads(role.inputs["assumeRolePolicy"])
        assert policy["Statement"] == [
            {"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ]

    def test_only_the_managed_policies_a_node_needs(self, site: ProgramRun) -> None:
        (role,) = site.of_type(ROLE)
        attached = sorted(a.inputs["policyArn"] for a in site.of_type(ATTACHMENT))
        assert attached == [
            "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
            "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
            "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
        ]
        # Attached to this role (its provider-assigned name), and node groups use its ARN.
        assert {a.inputs["role"] for a in site.of_type(ATTACHMENT)} == {f"<unknown: name of Role {role.name}>"}
        assert {g.inputs["nodeRoleArn"] for g in site.of_type(NODE_GROUP)} == {f"<unknown: arn of Role {role.name}>"}


def _is_taggable(type_token: str) -> bool:
    """Whether the pulumi-aws resource behind a type token accepts `tags`, read from its Args class."""
    module, cls = type_token.split(":")[1].split("/")[0], type_token.rsplit(":", 1)[-1]
    args_cls = getattr(getattr(pulumi_aws, module), f"{cls}Args")
    return "tags" in inspect.signature(args_cls.__init__).parameters


class TestCostAllocationTags:
    def test_every_taggable_resource_is_tagged(self, site: ProgramRun) -> None:
        taggable = [r for r in site.resources if _is_taggable(r.type)]
        assert {r.type for r in taggable} == {ROLE, NODE_GROUP, LAUNCH_TEMPLATE, PLACEMENT_GROUP}
        for resource in taggable:
            tags = resource.inputs["tags"]
            assert tags["hybridctl:inventory"] == "acme-hybrid", resource.name
            assert tags["hybridctl:site"] == "aws-us-east-1", resource.name
            # not on launch templates: a new digest there would roll every node
            assert tags.get("hybridctl:plan-digest") == (None if resource.type == LAUNCH_TEMPLATE else "sha256:5f2c0e")

    def test_node_groups_are_tagged_with_their_pool(self, site: ProgramRun) -> None:
        for group in site.of_type(NODE_GROUP):
            assert group.inputs["tags"]["hybridctl:pool"] == group.name
        for template in site.of_type(LAUNCH_TEMPLATE):
            assert template.inputs["tags"]["hybridctl:pool"] == template.name.removesuffix("-lt")


class TestOutputs:
    def test_exports_node_group_names_and_scaling_per_pool(self, site: ProgramRun) -> None:
        groups = site.outputs["nodeGroups"]
        assert set(groups) == {p["name"] for p in POOLS}
        assert groups["p5-spot"] == {
            "name": "<unknown: name of NodeGroup p5-spot>", "instanceTypes": ["p5.48xlarge", "p5e.48xlarge"],
            "capacityType": "SPOT", "minSize": 0, "desiredSize": 1, "maxSize": 8,
            "launchTemplate": "<unknown: id of LaunchTemplate p5-spot-lt>",
        }
        assert site.outputs["region"] == "us-east-1"
        assert site.outputs["site"] == "aws-us-east-1"


class TestConfigChecks:
    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"capacityType": "preemptible"}, "capacityType"),
            ({"minSize": 5, "desiredSize": 3}, "minSize <= desiredSize"),
            ({"maxSize": 0, "minSize": 0, "desiredSize": 0}, "maxSize >= 1"),
            ({"gpusPerNode": 0}, "gpusPerNode"),
            ({"minSize": True}, "minSize"),
            ({"instanceTyp": "p5.48xlarge"}, "unknown field"),
            ({"instanceTypes": ["p5.48xlarge", "p5e.48xlarge"]}, "only spot pools"),
            ({"diskGiB": 10}, "diskGiB"),
            ({"reservationId": "cr-0123456789abcdef0"}, "only reserved pools"),
            ({"availabilityZone": "us-east-1"}, "availabilityZone"),
            ({"capacityBlock": True}, "capacityBlock"),
            ({"localNvme": "yes"}, "localNvme"),
        ],
    )
    def test_a_bad_pool_is_rejected_with_its_key(self, change: dict[str, Any], message: str) -> None:
        pool = {**POOLS[0], **change}
        with pytest.raises(gpu_pools.ConfigError, match=message) as err:
            gpu_pools.parse_node_pool(pool, "hybridctl:nodePools[0]")
        assert "hybridctl:nodePools[0]" in str(err.value)

    def test_the_program_fails_before_registering_anything_on_bad_config(self) -> None:
        with pytest.raises(gpu_pools.ConfigError, match="repeated: p5-spot"):
            run(nodePools=[POOLS[1], POOLS[1]])

    def test_aws_region_is_required(self) -> None:
        config = {k: v for k, v in stack_config().items() if k != "aws:region"}
        with pytest.raises(Exception, match="aws:region"):
            run_program(lambda: gpu_pools.program(gpu_pools.load_config()), config)


class TestRollingAndScalingFromZero:
    def test_a_reserved_group_rolls_with_minimal_and_the_others_with_eks_s_default(self, site: ProgramRun) -> None:
        """Before: every group rolled EKS's default way (new nodes first), which a reservation whose every
        machine runs has no capacity for."""
        assert node_group(site, "g6-reserved")["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
        assert node_group(site, "p5-on-demand")["updateConfig"] == {"maxUnavailable": 1}
        from test_synth_contracts import create_nodegroup, validate
        assert validate("eks", "CreateNodegroup", create_nodegroup(site.one(NODE_GROUP, "g6-reserved"))) == []

    def test_an_efa_group_at_zero_advertises_its_efa_interfaces_to_the_autoscaler(self, site: ProgramRun) -> None:
        """Before: the template tags named GPUs only, so Cluster Autoscaler never scaled an EFA group up from
        zero for pods asking `vpc.amazonaws.com/efa`."""
        tags = {t.inputs["tag"]["key"]: t.inputs["tag"]["value"] for t in site.of_type(ASG_TAG)
                if t.name.startswith("p5-on-demand-")}
        assert tags["k8s.io/cluster-autoscaler/node-template/resources/vpc.amazonaws.com/efa"] == "32"
        assert not [t for t in site.of_type(ASG_TAG) if "efa" in t.inputs["tag"]["key"] and not t.name.startswith("p5-on-demand-")]
