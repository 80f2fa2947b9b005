"""The examples' node groups as `synth` declares them, read as an EKS operator would (issue 33): zones
and reservations kept, a modest root beside the local NVMe, IMDSv2 at one hop, the accelerator label,
and an EFA pool in a placement group in its zone; every request valid against botocore's models."""

from __future__ import annotations

import base64
from functools import cache

import pytest
from eks_model import reservation_errors
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.paths import inventories_dir, stacks_dir
from support.examples import BASE, EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK
from test_synth_contracts import create_launch_template, create_nodegroup, validate

NODE_GROUP, LAUNCH_TEMPLATE = "aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"
PLACEMENT_GROUP, GET_SUBNETS = "aws:ec2/placementGroup:PlacementGroup", "aws:ec2/getSubnets:getSubnets"


def synth_pools(inventory: Inventory) -> list[ProgramRun]:
    configs = stack_configs(inventory, plan(inventory, options=AT_PLAN_WEEK), "sha256:test")
    return [synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in configs.gpu_pools]


@cache
def example_runs(name: str) -> list[ProgramRun]:
    return synth_pools(load_inventory(inventories_dir() / name).inventory)


CLOUD_EXAMPLES = [p.name for p in EXAMPLE_PATHS if example_runs(p.name)]


def zone_lookups(run: ProgramRun) -> set[tuple[str, str]]:
    return {(f["name"], f["values"][0]) for i in run.invokes if i.token == GET_SUBNETS
            for f in i.args["filters"] if f["name"] != "subnet-id"}


def test_the_enterprise_reservation_and_zone_pools_are_pinned_to_their_zones() -> None:
    runs = {r.stack: r for r in example_runs("enterprise")}
    use1 = runs["enterprise-aws-us-east-1"]
    # use1-p5-reserved: reservation cr-0a1b2c3d4e5f60718 lives in use1-az4; use1b-g6-od serves from use1-az2
    assert zone_lookups(use1) == {("availability-zone-id", "use1-az4"), ("availability-zone-id", "use1-az2")}
    reserved = use1.one(NODE_GROUP, "use1-p5-reserved").inputs
    assert reserved["subnetIds"] == ["<unknown: the cluster's subnets in use1-az4>"]
    # 8 reserved GPUs: the one p5 reserved is always up, and rolls by removing it before its replacement
    assert reserved["scalingConfig"] == {"minSize": 1, "desiredSize": 1, "maxSize": 1}
    assert reserved["updateConfig"] == {"maxUnavailable": 1, "updateStrategy": "MINIMAL"}
    assert use1.one(LAUNCH_TEMPLATE, "use1-p5-reserved-lt").inputs["capacityReservationSpecification"] == {
        "capacityReservationTarget": {"capacityReservationId": "cr-0a1b2c3d4e5f60718"}}


@pytest.mark.parametrize("name", CLOUD_EXAMPLES)
def test_every_gpu_node_as_an_eks_operator_expects_it(name: str) -> None:
    for run in example_runs(name):
        for group in run.of_type(NODE_GROUP):
            assert group.inputs["labels"]["k8s.amazonaws.com/accelerator"].startswith("nvidia-"), group.name
        for template in run.of_type(LAUNCH_TEMPLATE):
            inputs = template.inputs
            assert inputs["metadataOptions"]["httpPutResponseHopLimit"] == 1, template.name
            assert inputs["blockDeviceMappings"][0]["ebs"]["volumeSize"] == 100, template.name
            assert "strategy: RAID0" in base64.b64decode(inputs["userData"]).decode(), template.name
            assert "hybridctl:plan-digest" not in str(inputs), template.name


def test_the_cloud_burst_efa_pool_launches_in_a_placement_group_in_its_zone() -> None:
    """long-context-pretrain's 16-GPU replicas each span two p5.48xlarge: use1-p5-od, pinned to use1-az4,
    gets 32 EFA interfaces per node and one cluster placement group, so a gang's nodes share a spine."""
    (run,) = example_runs("cloud-burst.yaml")
    template = run.one(LAUNCH_TEMPLATE, "use1-p5-od-lt").inputs
    assert len(template["networkInterfaces"]) == 32
    assert template["placement"] == {"groupName": "<unknown: name of PlacementGroup use1-p5-od-pg>"}
    assert run.one(PLACEMENT_GROUP, "use1-p5-od-pg").inputs["strategy"] == "cluster"
    assert run.one(NODE_GROUP, "use1-p5-od").inputs["subnetIds"] == ["<unknown: the cluster's subnets in use1-az4>"]
    assert [t.name for t in run.of_type(PLACEMENT_GROUP)] == ["use1-p5-od-pg"]
    # single-node work stays out of the fabric: the spot and L40S pools have neither EFA nor a group
    for name in ("use1-p5-spot-lt", "use1-g6e-od-lt"):
        assert not run.one(LAUNCH_TEMPLATE, name).inputs.get("networkInterfaces"), name


@pytest.mark.parametrize("name", CLOUD_EXAMPLES)
def test_node_groups_and_launch_templates_are_valid_aws_requests(name: str) -> None:
    runs = example_runs(name)
    groups = [g for r in runs for g in r.of_type(NODE_GROUP)]
    templates = [t for r in runs for t in r.of_type(LAUNCH_TEMPLATE)]
    assert groups and len(templates) == len(groups)
    assert {g.name: validate("eks", "CreateNodegroup", create_nodegroup(g)) for g in groups} == {g.name: [] for g in groups}
    assert {t.name: validate("ec2", "CreateLaunchTemplate", create_launch_template(t)) for t in templates} == {
        t.name: [] for t in templates}


def test_a_capacity_block_marked_in_the_inventory_is_launched_as_one() -> None:
    """`reservation_type: capacity_block` reaches EC2 and EKS as AWS documents a Capacity Block node group
    (eks_model.reservation_errors): the `capacity-block` market type, CAPACITY_BLOCK, the reservation's zone."""

    on_demand = "{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}"
    block = ("{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, capacity_type: reserved, "
             "usd_per_gpu_hour: 3.1, reservation_id: cr-0fedcba9876543210, failure_domain: use1-az4, "
             "reservation_type: capacity_block}")
    text = BASE.replace(on_demand, block) + "    sites: [aws-use1]\n"  # the training workload, on the block
    (run,) = synth_pools(load_sources([Source("inv.yaml", text)]).inventory)
    group, template = run.one(NODE_GROUP, "use1-p5").inputs, run.one(LAUNCH_TEMPLATE, "use1-p5-lt").inputs
    zones = {s: "use1-az4" for s in group["subnetIds"] if s == "<unknown: the cluster's subnets in use1-az4>"}
    assert reservation_errors(template, group, "use1-az4", zones, capacity_block=True) == []
    assert validate("eks", "CreateNodegroup", create_nodegroup(run.one(NODE_GROUP, "use1-p5"))) == []
    assert validate("ec2", "CreateLaunchTemplate", create_launch_template(run.one(LAUNCH_TEMPLATE, "use1-p5-lt"))) == []


@pytest.mark.parametrize("name", CLOUD_EXAMPLES)
def test_no_scheduled_action_of_any_example_forces_a_size(name: str) -> None:
    """Every scheduled resize sets min and max only (desiredCapacity -1: none sent), in an IANA zone; every
    reserved group rolls MINIMAL."""
    for run in example_runs(name):
        for schedule in run.of_type("aws:autoscaling/schedule:Schedule"):
            assert schedule.inputs["desiredCapacity"] == -1, (run.stack, schedule.name)
            assert "/" in schedule.inputs["timeZone"]
        for group in run.of_type(NODE_GROUP):
            reserved = group.inputs["labels"]["hybridctl.io/capacity-type"] == "reserved"
            assert (group.inputs["updateConfig"].get("updateStrategy") == "MINIMAL") == reserved, group.name
