"""GPU node groups of one cloud site: one EKS managed node group per planned pool.

The program reads only its stack configuration (namespace ``hybridctl`` plus ``aws:region``),
so a user can run ``pulumi up`` here by hand with the configuration hybridctl wrote. It must not
import hybridctl: the stack's own virtualenv may not have it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

CONFIG_NAMESPACE = "hybridctl"

# Kubernetes label keys shared with the k8s-queues stack: its ResourceFlavors select nodes by them.
LABEL_SITE = "hybridctl.io/site"
LABEL_POOL = "hybridctl.io/pool"
LABEL_CAPACITY_TYPE = "hybridctl.io/capacity-type"
LABEL_GPU = "hybridctl.io/gpu"

GPU_TAINT_KEY = "nvidia.com/gpu"
# EKS-optimized Amazon Linux 2023 with the NVIDIA driver and container toolkit preinstalled.
NVIDIA_AMI_TYPE = "AL2023_x86_64_NVIDIA"

# Reserved capacity (savings plans, reserved instances) is billed differently but launched as
# ON_DEMAND; only spot pools run on interruptible capacity.
EKS_CAPACITY_TYPE = {"on_demand": "ON_DEMAND", "reserved": "ON_DEMAND", "spot": "SPOT"}

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


class ConfigError(ValueError):
    """The stack configuration does not match the schema in stacks/README.md."""


@dataclass(frozen=True)
class NodePool:
    name: str
    instance_type: str
    capacity_type: str  # on_demand | spot | reserved
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int


@dataclass(frozen=True)
class GpuPoolsConfig:
    site: str
    region: str
    cluster_name: str
    inventory_name: str
    plan_digest: str
    node_pools: tuple[NodePool, ...]
    subnet_ids: tuple[str, ...] = ()  # empty: the cluster's own subnets


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise ConfigError(f"{where}: missing field {key!r}")
    value = obj[key]
    # bool is an int in Python; a size of `true` is a schema error, not 1.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


def parse_node_pool(raw: object, where: str) -> NodePool:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {raw!r}")
    known = {"name", "instanceType", "capacityType", "gpuType", "gpusPerNode", "minSize", "desiredSize", "maxSize"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
    pool = NodePool(
        name=_field(raw, "name", str, where),
        instance_type=_field(raw, "instanceType", str, where),
        capacity_type=_field(raw, "capacityType", str, where),
        gpu_type=_field(raw, "gpuType", str, where),
        gpus_per_node=_field(raw, "gpusPerNode", int, where),
        min_size=_field(raw, "minSize", int, where),
        desired_size=_field(raw, "desiredSize", int, where),
        max_size=_field(raw, "maxSize", int, where),
    )
    if pool.capacity_type not in EKS_CAPACITY_TYPE:
        raise ConfigError(f"{where}.capacityType: expected one of {sorted(EKS_CAPACITY_TYPE)}, got {pool.capacity_type!r}")
    if pool.gpus_per_node < 1:
        raise ConfigError(f"{where}.gpusPerNode: must be at least 1")
    # EKS rejects a scaling config outside 0 <= min <= desired <= max, max >= 1.
    if not 0 <= pool.min_size <= pool.desired_size <= pool.max_size or pool.max_size < 1:
        raise ConfigError(
            f"{where}: scaling must satisfy 0 <= minSize <= desiredSize <= maxSize and maxSize >= 1, "
            f"got min={pool.min_size} desired={pool.desired_size} max={pool.max_size}"
        )
    return pool


def load_config() -> GpuPoolsConfig:
    """Read and check the stack configuration; every problem names its key."""
    cfg = pulumi.Config(CONFIG_NAMESPACE)
    raw_pools = cfg.require_object("nodePools")
    if not isinstance(raw_pools, list):
        raise ConfigError("hybridctl:nodePools: expected a list")
    pools = tuple(parse_node_pool(p, f"hybridctl:nodePools[{i}]") for i, p in enumerate(raw_pools))
    names = [p.name for p in pools]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ConfigError(f"hybridctl:nodePools: pool names must be unique, repeated: {', '.join(duplicates)}")
    raw_subnets = cfg.get_object("subnetIds") or []
    if not isinstance(raw_subnets, list) or not all(isinstance(s, str) for s in raw_subnets):
        raise ConfigError("hybridctl:subnetIds: expected a list of subnet ids")
    return GpuPoolsConfig(
        site=cfg.require("site"),
        region=pulumi.Config("aws").require("region"),
        cluster_name=cfg.require("clusterName"),
        inventory_name=cfg.require("inventoryName"),
        plan_digest=cfg.require("planDigest"),
        node_pools=pools,
        subnet_ids=tuple(raw_subnets),
    )


def cost_tags(cfg: GpuPoolsConfig, pool: NodePool | None = None) -> dict[str, str]:
    """Cost-allocation tags: every bill line traces back to the inventory, plan and pool."""
    tags = {
        "hybridctl:inventory": cfg.inventory_name,
        "hybridctl:plan-digest": cfg.plan_digest,
        "hybridctl:site": cfg.site,
    }
    if pool is not None:
        tags["hybridctl:pool"] = pool.name
    return tags


def node_labels(cfg: GpuPoolsConfig, pool: NodePool) -> dict[str, str]:
    return {
        LABEL_SITE: cfg.site,
        LABEL_POOL: pool.name,
        LABEL_CAPACITY_TYPE: pool.capacity_type,
        LABEL_GPU: pool.gpu_type,
    }


def _subnet_ids(cfg: GpuPoolsConfig) -> pulumi.Input[Sequence[str]]:
    if cfg.subnet_ids:
        return list(cfg.subnet_ids)
    cluster = aws.eks.get_cluster_output(name=cfg.cluster_name)
    return cluster.vpc_config.apply(lambda vpc: list(vpc.subnet_ids))


def program(cfg: GpuPoolsConfig) -> dict[str, pulumi.Output[Any]]:
    """Declare the site's node role and node groups; returns (and exports) the stack outputs."""
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
    subnet_ids = _subnet_ids(cfg)

    node_groups: dict[str, Any] = {}
    for pool in cfg.node_pools:
        group = aws.eks.NodeGroup(
            pool.name,
            cluster_name=cfg.cluster_name,
            node_role_arn=role.arn,
            subnet_ids=subnet_ids,
            instance_types=[pool.instance_type],
            capacity_type=EKS_CAPACITY_TYPE[pool.capacity_type],
            ami_type=NVIDIA_AMI_TYPE,
            scaling_config=aws.eks.NodeGroupScalingConfigArgs(
                min_size=pool.min_size, desired_size=pool.desired_size, max_size=pool.max_size
            ),
            labels=node_labels(cfg, pool),
            taints=[aws.eks.NodeGroupTaintArgs(key=GPU_TAINT_KEY, value="true", effect="NO_SCHEDULE")],
            update_config=aws.eks.NodeGroupUpdateConfigArgs(max_unavailable=1),
            tags=cost_tags(cfg, pool),
            # Nodes cannot join, nor drain on delete, without the role's policies in place.
            opts=pulumi.ResourceOptions(depends_on=attachments),
        )
        node_groups[pool.name] = {
            "name": group.node_group_name,
            "instanceType": pool.instance_type,
            "capacityType": EKS_CAPACITY_TYPE[pool.capacity_type],
            "minSize": pool.min_size,
            "desiredSize": pool.desired_size,
            "maxSize": pool.max_size,
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
