"""GPU node groups of one cloud site: one EKS managed node group per planned pool.

Each node group gets a launch template (a modest root disk, the instance's local NVMe for
containerd and kubelet, cost tags on instances, volumes and network interfaces, IMDSv2,
capacity-reservation or Capacity Block targeting, EFA and a cluster placement group for
multi-node work) and the tags Cluster Autoscaler needs to discover it and to scale it from zero.

The launch template's data holds nothing that changes with unrelated plan changes (no plan
digest): a node group follows its template's latest version, and a new version rolls every
node of the group.

Scheduled scaling (a timed plan's pay-per-use pools): one `aws.autoscaling.Schedule` per weekly resize on
the node group's Auto Scaling group, in the IANA zone of the pool's windows, setting min and max only;
the node group's min is the week's floor, and a deployment keeps the live group's min (the schedule's)
inside [floor, max].

Desired size: the plan's at creation; after that the live one (Cluster Autoscaler's), read from
EKS at each deployment and only moved into the new [min, max], so a deployment never scales
live nodes down to a stale number and never sends what EKS rejects (min <= desired <= max).

The program reads only its stack configuration (namespace ``hybridctl`` plus ``aws:region``),
so a user can run ``pulumi up`` here by hand with the configuration hybridctl wrote. It must not
import hybridctl: the stack's own virtualenv may not have it.
"""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi
import pulumi_aws as aws
from pools_config import ConfigError, GpuPoolsConfig, NodePool, load_config, parse_node_pool

__all__ = ["ConfigError", "GpuPoolsConfig", "NodePool", "load_config", "parse_node_pool", "program"]

# Kubernetes label keys shared with the k8s-queues stack: its ResourceFlavors select nodes by them.
LABEL_SITE = "hybridctl.io/site"
LABEL_POOL = "hybridctl.io/pool"
LABEL_CAPACITY_TYPE = "hybridctl.io/capacity-type"
LABEL_GPU = "hybridctl.io/gpu"
# Cluster Autoscaler's AWS provider (its GPULabel): a node with it is a GPU node, so while its GPUs are
# still coming up (driver, device plugin) the autoscaler does not take it for an idle node, nor scale again.
LABEL_ACCELERATOR = "k8s.amazonaws.com/accelerator"

GPU_TAINT_KEY = "nvidia.com/gpu"
EFA_RESOURCE = "vpc.amazonaws.com/efa"  # AWS's EFA device plugin: one per EFA interface
# EKS-optimized Amazon Linux 2023 with the NVIDIA driver and container toolkit preinstalled.
NVIDIA_AMI_TYPE = "AL2023_x86_64_NVIDIA"

# Reserved capacity (savings plans, reserved instances) is billed differently but launched as
# ON_DEMAND; only spot pools run on interruptible capacity.
EKS_CAPACITY_TYPE = {"on_demand": "ON_DEMAND", "reserved": "ON_DEMAND", "spot": "SPOT"}
KEEP_DESIRED = -1  # a scheduled action that leaves the group's desired capacity as it is
CAPACITY_BLOCK = "CAPACITY_BLOCK"  # a Capacity Block for ML: its own EKS capacity type and EC2 market type

# nodeadm (AL2023): the instance-store NVMe drives as one RAID0 array, mounted under /mnt/k8s-disks,
# with containerd's and kubelet's directories on it: images and pods' emptyDir volumes (model and data
# caches) use the local drives, not the root volume. EKS merges this part with its own NodeConfig.
NVME_USER_DATA = base64.b64encode("\n".join((
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="HYBRIDCTL"',
    "",
    "--HYBRIDCTL",
    "Content-Type: application/node.eks.aws",
    "",
    "---",
    "apiVersion: node.eks.aws/v1alpha1",
    "kind: NodeConfig",
    "spec:",
    "  instance:",
    "    localStorage:",
    "      strategy: RAID0",
    "",
    "--HYBRIDCTL--",
    "",
)).encode()).decode()

# The managed policies a worker node needs, and nothing more.
NODE_POLICY_ARNS = {
    "worker": "arn:aws:iam::aws:policy/AmazonEKSWorkerNodePolicy",
    "cni": "arn:aws:iam::aws:policy/AmazonEKS_CNI_Policy",
    "ecr-read": "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
}

NODE_ASSUME_ROLE_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {"Service": "ec2.amazonaws.com"},
                "Action": "sts:AssumeRole",
            }
        ],
    },
    sort_keys=True,
)


def cost_tags(cfg: GpuPoolsConfig, pool: NodePool | None = None, *, plan_digest: bool = True) -> dict[str, str]:
    """Cost-allocation tags: every bill line traces back to the inventory, pool and (but on what a launch
    template holds, where a new digest would roll every node) the plan."""
    tags = {"hybridctl:inventory": cfg.inventory_name, "hybridctl:site": cfg.site}
    if plan_digest:
        tags["hybridctl:plan-digest"] = cfg.plan_digest
    if pool is not None:
        tags["hybridctl:pool"] = pool.name
    return dict(sorted(tags.items()))


def node_labels(cfg: GpuPoolsConfig, pool: NodePool) -> dict[str, str]:
    return {
        LABEL_SITE: cfg.site,
        LABEL_POOL: pool.name,
        LABEL_CAPACITY_TYPE: pool.capacity_type,
        LABEL_GPU: pool.gpu_type,
        LABEL_ACCELERATOR: accelerator(pool.gpu_type),
    }


def accelerator(gpu_type: str) -> str:
    """The accelerator label's value: `nvidia-<gpu>` (H100 -> nvidia-h100), as Cluster Autoscaler's docs name them."""
    return "nvidia-" + re.sub(r"[^a-z0-9]+", "-", gpu_type.lower()).strip("-")


CA_PREFIX = "k8s.io/cluster-autoscaler"
ROOT_DEVICE = "/dev/xvda"  # AL2023's root volume


def autoscaler_discovery_tags(cfg: GpuPoolsConfig) -> dict[str, str]:
    """Cluster Autoscaler's auto-discovery tags (`--node-group-auto-discovery=asg:tag=...`)."""
    return {f"{CA_PREFIX}/enabled": "true", f"{CA_PREFIX}/{cfg.cluster_name}": "owned"}


def autoscaler_node_template_tags(cfg: GpuPoolsConfig, pool: NodePool) -> dict[str, str]:
    """What a node of the group would carry, so Cluster Autoscaler can scale it up from zero."""
    tags = {f"{CA_PREFIX}/node-template/label/{k}": v for k, v in node_labels(cfg, pool).items()}
    tags[f"{CA_PREFIX}/node-template/taint/{GPU_TAINT_KEY}"] = "true:NoSchedule"
    tags[f"{CA_PREFIX}/node-template/resources/{GPU_TAINT_KEY}"] = str(pool.gpus_per_node)
    if pool.efa_interfaces:
        # a group at zero is scaled up for pods asking EFA interfaces only if its template offers them
        tags[f"{CA_PREFIX}/node-template/resources/{EFA_RESOURCE}"] = str(pool.efa_interfaces)
    return tags


def update_config(pool: NodePool) -> aws.eks.NodeGroupUpdateConfigArgs:
    """How EKS rolls the group to a new launch template version: one node at a time, drained first. A
    reserved group (a capacity reservation or a Capacity Block) has every machine of its reservation in
    use, so EKS's default (launch the new nodes, then remove the old) would find no capacity for them:
    MINIMAL removes a node before it launches its replacement."""
    if pool.capacity_type == "reserved":
        return aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1, update_strategy="MINIMAL")
    return aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1)


def _cluster(cfg: GpuPoolsConfig) -> Any:
    return aws.eks.get_cluster_output(name=cfg.cluster_name)


def _subnet_ids(cfg: GpuPoolsConfig, pool: NodePool, cluster: Any) -> pulumi.Input[Sequence[str]]:
    """The pool's subnets: the configured or the cluster's, narrowed to its zone (by name or zone ID): a
    capacity reservation lives in one zone, and so does a cluster placement group. An EFA pool without
    a zone takes the first subnet."""
    base: pulumi.Input[Sequence[str]] = (
        list(cfg.subnet_ids) if cfg.subnet_ids else cluster.vpc_config.apply(lambda vpc: sorted(vpc.subnet_ids))
    )
    if pool.availability_zone:
        by = "availability-zone-id" if pool.zone_is_id else "availability-zone"
        return pulumi.Output.from_input(base).apply(lambda ids: aws.ec2.get_subnets_output(filters=[
            aws.ec2.GetSubnetsFilterArgs(name="subnet-id", values=list(ids)),
            aws.ec2.GetSubnetsFilterArgs(name=by, values=[pool.availability_zone or ""]),
        ]).ids.apply(sorted))
    if pool.efa_interfaces:
        return pulumi.Output.from_input(base).apply(lambda ids: sorted(ids)[:1])
    return base


def _launch_template(cfg: GpuPoolsConfig, pool: NodePool, cluster: Any) -> aws.ec2.LaunchTemplate:
    # Everything below is launch-template data: nothing in it may change with an unrelated plan change.
    tags = cost_tags(cfg, pool, plan_digest=False)
    placement = None
    interfaces = None
    if pool.efa_interfaces:
        # A reservation fixes where its machines are (an ODCR made in a cluster placement group, or a
        # Capacity Block, colocated by AWS): instances in another placement group would not match it.
        if not pool.reservation_id:
            group = aws.ec2.PlacementGroup(f"{pool.name}-pg", strategy="cluster", tags=cost_tags(cfg, pool))
            placement = aws.ec2.LaunchTemplatePlacementArgs(group_name=group.name)
        security_group = cluster.vpc_config.apply(lambda vpc: vpc.cluster_security_group_id)
        # One EFA interface per network card; the first also carries the node's IP traffic.
        interfaces = [
            aws.ec2.LaunchTemplateNetworkInterfaceArgs(
                device_index=0 if card == 0 else 1, network_card_index=card,
                interface_type="efa" if card == 0 else "efa-only",
                delete_on_termination="true", security_groups=[security_group],
            )
            for card in range(pool.efa_interfaces)
        ]
    reservation = None
    market = None
    if pool.reservation_id:
        reservation = aws.ec2.LaunchTemplateCapacityReservationSpecificationArgs(
            capacity_reservation_target=aws.ec2.LaunchTemplateCapacityReservationSpecificationCapacityReservationTargetArgs(
                capacity_reservation_id=pool.reservation_id))
        if pool.capacity_block:
            # EKS's Capacity Block node groups: the `capacity-block` market type beside the reservation's id.
            market = aws.ec2.LaunchTemplateInstanceMarketOptionsArgs(market_type="capacity-block")
    return aws.ec2.LaunchTemplate(
        f"{pool.name}-lt",
        description=f"GPU nodes of pool {pool.name} (hybridctl)",
        update_default_version=True,
        user_data=NVME_USER_DATA if pool.local_nvme else None,
        block_device_mappings=[aws.ec2.LaunchTemplateBlockDeviceMappingArgs(
            device_name=ROOT_DEVICE,
            ebs=aws.ec2.LaunchTemplateBlockDeviceMappingEbsArgs(
                volume_size=pool.disk_gib, volume_type="gp3", encrypted="true", delete_on_termination="true"),
        )],
        # IMDSv2 only, hop limit 1: pods (one hop away) cannot read the node role's credentials. Nothing here
        # needs 2: the VPC CNI, kube-proxy and the device plugins run on the host network, and workloads get
        # their own AWS credentials from EKS Pod Identity or IRSA, not the node's; controllers that read the
        # node role through IMDS (a Cluster Autoscaler without IRSA) do not run on these tainted GPU nodes.
        metadata_options=aws.ec2.LaunchTemplateMetadataOptionsArgs(
            http_endpoint="enabled", http_tokens="required", http_put_response_hop_limit=1),
        # EKS tags do not propagate to what the node group launches: tag it here.
        tag_specifications=[aws.ec2.LaunchTemplateTagSpecificationArgs(resource_type=kind, tags=tags)
                            for kind in ("instance", "volume", "network-interface")],
        capacity_reservation_specification=reservation,
        instance_market_options=market,
        network_interfaces=interfaces,
        placement=placement,
        tags=tags,
    )


LiveSizes = Mapping[str, tuple[int, int]]  # pool -> (min, desired) of its live Auto Scaling group


def live_sizes(cfg: GpuPoolsConfig) -> pulumi.Output[dict[str, tuple[int, int]]]:
    """Pool -> its node group's live (min, desired): its Auto Scaling group's, which the scheduled actions
    (min) and the autoscaler (desired) set, read from EC2 Auto Scaling (EKS's record of the node group,
    where it names no group); empty before the first deployment. A node group is found by its site and
    pool labels: its name is Pulumi's, with a suffix."""
    def ours(found: Sequence[Any]) -> list[Any]:
        return [g for g in found if (g.labels or {}).get(LABEL_SITE) == cfg.site and LABEL_POOL in g.labels
                and g.scaling_configs]

    def asg_name(group: Any) -> str | None:
        groups = group.resources[0].autoscaling_groups if group.resources else []
        return str(groups[0].name) if groups else None

    def sizes(found: Sequence[Any]) -> Any:
        mine = ours(found)
        asgs = [aws.autoscaling.get_group_output(name=name) if (name := asg_name(g)) else None for g in mine]
        return pulumi.Output.all(*[a for a in asgs if a is not None]).apply(lambda read: {
            g.labels[LABEL_POOL]: (int(a.min_size), int(a.desired_capacity)) if a is not None else
            (int(g.scaling_configs[0].min_size), int(g.scaling_configs[0].desired_size))
            for g, a in zip(mine, _aligned(asgs, read), strict=True)})

    def read(names: Sequence[str]) -> Any:
        groups = [aws.eks.get_node_group_output(cluster_name=cfg.cluster_name, node_group_name=n) for n in sorted(names)]
        return pulumi.Output.all(*groups).apply(sizes)
    listed = aws.eks.get_node_groups_output(cluster_name=cfg.cluster_name)
    result: pulumi.Output[dict[str, tuple[int, int]]] = listed.apply(lambda r: read(r.names or []))
    return result


def _aligned(wanted: Sequence[Any | None], read: Sequence[Any]) -> list[Any | None]:
    """`read` (the answers to the non-None of `wanted`, in order) back in `wanted`'s places."""
    answers = iter(read)
    return [next(answers) if w is not None else None for w in wanted]


def min_size(pool: NodePool, live: LiveSizes) -> int:
    """A scheduled group's min is its schedule's (the live group's), kept inside the new [floor, max]: a
    deployment at noon never lowers the minimum the morning's action raised. Otherwise the plan's."""
    current = live.get(pool.name)
    if not pool.schedule or current is None:
        return pool.min_size
    return min(max(current[0], pool.min_size), pool.max_size)


def desired_size(pool: NodePool, live: LiveSizes) -> int:
    """EKS accepts only min <= desired <= max. A new group: the plan's desired. A live one: its own desired
    moved into the new [min, max] (a failover raising min above it raises it; nothing else moves it), never
    the plan's number, which is stale once the autoscaler has scaled."""
    current = live.get(pool.name)
    if current is None:
        return pool.desired_size
    return min(max(current[1], min_size(pool, live)), pool.max_size)


def program(cfg: GpuPoolsConfig) -> dict[str, pulumi.Output[Any]]:
    """Declare the site's node role, launch templates and node groups; returns (and exports) the outputs."""
    role = aws.iam.Role(
        f"{cfg.site}-gpu-nodes",
        assume_role_policy=NODE_ASSUME_ROLE_POLICY,
        description=f"GPU worker nodes of {cfg.site} in EKS cluster {cfg.cluster_name} (hybridctl)",
        tags=cost_tags(cfg),
    )
    attachments = [
        aws.iam.RolePolicyAttachment(f"{cfg.site}-gpu-nodes-{short}", role=role.name, policy_arn=arn)
        for short, arn in NODE_POLICY_ARNS.items()
    ]
    cluster = _cluster(cfg) if not cfg.subnet_ids or any(p.efa_interfaces for p in cfg.node_pools) else None

    live = live_sizes(cfg)
    node_groups: dict[str, Any] = {}
    for pool in cfg.node_pools:
        template = _launch_template(cfg, pool, cluster)
        group = aws.eks.NodeGroup(
            pool.name,
            cluster_name=cfg.cluster_name,
            node_role_arn=role.arn,
            subnet_ids=_subnet_ids(cfg, pool, cluster),
            instance_types=list(pool.instance_types),
            capacity_type=CAPACITY_BLOCK if pool.capacity_block else EKS_CAPACITY_TYPE[pool.capacity_type],
            ami_type=NVIDIA_AMI_TYPE,
            launch_template=aws.eks.NodeGroupLaunchTemplateArgs(
                id=template.id, version=template.latest_version.apply(str)),
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=live.apply(functools.partial(min_size, pool)),
                desired_size=live.apply(functools.partial(desired_size, pool)), max_size=pool.max_size,
            ),
            labels=node_labels(cfg, pool),
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
            update_config=update_config(pool),
            tags={**cost_tags(cfg, pool), **autoscaler_discovery_tags(cfg)},
            # Nodes cannot join, nor drain on delete, without the role's policies in place.
            opts=pulumi.ResourceOptions(depends_on=attachments),
        )
        # Node-group tags stay on the EKS object; the autoscaler reads its ASG's tags.
        asg_name = group.resources.apply(lambda rs: rs[0].autoscaling_groups[0].name)
        for key, value in sorted(autoscaler_node_template_tags(cfg, pool).items()):
            aws.autoscaling.Tag(
                f"{pool.name}-ca-" + key.removeprefix(f"{CA_PREFIX}/node-template/").replace("/", "-"),
                autoscaling_group_name=asg_name,
                tag=aws.autoscaling.TagTagArgs(key=key, value=value, propagate_at_launch=False),
            )
        # A timed plan's pay-per-use pool follows the week: each resize a scheduled action on the group's ASG,
        # weekly in the zone of the pool's windows, so it keeps to their wall-clock edges across daylight
        # saving. It sets min and max only (desired -1: unchanged): raising min raises desired with it, and
        # Cluster Autoscaler removes nodes below a lowered min as they go idle, draining them.
        for action in pool.schedule:
            name = f"{pool.name}-{action.action_name}"
            aws.autoscaling.Schedule(
                name, scheduled_action_name=name, autoscaling_group_name=asg_name, recurrence=action.recurrence,
                time_zone=action.time_zone, min_size=action.min_size, desired_capacity=KEEP_DESIRED,
                max_size=action.max_size,
            )
        node_groups[pool.name] = {
            "name": group.node_group_name,
            "instanceTypes": list(pool.instance_types),
            "capacityType": CAPACITY_BLOCK if pool.capacity_block else EKS_CAPACITY_TYPE[pool.capacity_type],
            "minSize": group.scaling_config.min_size,
            "desiredSize": group.scaling_config.desired_size,
            "maxSize": pool.max_size,
            "launchTemplate": template.id,
        }

    outputs: dict[str, pulumi.Output[Any]] = {
        "site": pulumi.Output.from_input(cfg.site),
        "region": pulumi.Output.from_input(cfg.region),
        "nodeRoleArn": role.arn,
        "nodeGroups": pulumi.Output.from_input(node_groups),
    }
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
