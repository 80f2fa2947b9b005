"""AKS agent pools of one Azure site, from the configuration hybridctl derives from a plan.

Each planned pool is one User-mode agent pool of the site's existing AKS cluster: its VM size, Spot
priority with the Delete eviction policy for spot pools (a reclaimed node is gone, as on the other
clouds), the capacity reservation group for reserved ones, the pool's zone, the GPU taint, hybridctl's
labels and autoscaling bounds from the plan. AKS does not install the NVIDIA device plugin on a GPU pool:
the k8s-queues stack's device plugin (stacks/k8s-queues/device_plugin.py) provides it on these labels.

An agent pool's name is at most 12 lower-case letters and digits: hybridctl derives it from the pool's
name (`agentPoolName`); the pool's own name stays in the labels.

This module must not import hybridctl: a user may run the stack from its own virtualenv.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_azure_native as azure

CONFIG_NAMESPACE = "hybridctl"
CAPACITY_TYPES = ("on_demand", "reserved", "spot")
GPU_TAINT = "nvidia.com/gpu=present:NoSchedule"
LABEL_SITE, LABEL_POOL, LABEL_GPU = "hybridctl.io/site", "hybridctl.io/pool", "hybridctl.io/gpu"
_AGENT_POOL_NAME = re.compile(r"^[a-z][a-z0-9]{0,11}$")
_ZONE = re.compile(r"^[1-3]$")
_GROUP = re.compile(r"^/subscriptions/[0-9a-fA-F-]{36}/resourceGroups/[A-Za-z0-9._()-]{1,90}"
                    r"/providers/Microsoft\.Compute/capacityReservationGroups/[A-Za-z0-9._-]{1,80}$")


class ConfigError(ValueError):
    """The stack configuration does not match the schema in stacks/README.md."""


@dataclass(frozen=True)
class AgentPool:
    name: str  # the inventory's pool name
    agent_pool_name: str
    vm_size: str
    capacity_type: str
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int
    zone: str | None = None
    capacity_reservation_group: str | None = None


@dataclass(frozen=True)
class AksPoolsConfig:
    site: str
    resource_group: str
    cluster_name: str
    inventory_name: str
    plan_digest: str
    agent_pools: tuple[AgentPool, ...]


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise ConfigError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


_REQUIRED = {"name", "agentPoolName", "vmSize", "capacityType", "gpuType", "gpusPerNode", "minSize",
             "desiredSize", "maxSize"}
_OPTIONAL = {"zone", "capacityReservationGroup"}


def parse_agent_pool(raw: object, where: str) -> AgentPool:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {raw!r}")
    unknown = sorted(set(raw) - _REQUIRED - _OPTIONAL)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
    pool = AgentPool(
        name=_field(raw, "name", str, where), agent_pool_name=_field(raw, "agentPoolName", str, where),
        vm_size=_field(raw, "vmSize", str, where), capacity_type=_field(raw, "capacityType", str, where),
        gpu_type=_field(raw, "gpuType", str, where), gpus_per_node=_field(raw, "gpusPerNode", int, where),
        min_size=_field(raw, "minSize", int, where), desired_size=_field(raw, "desiredSize", int, where),
        max_size=_field(raw, "maxSize", int, where),
        zone=_field(raw, "zone", str, where) if "zone" in raw else None,
        capacity_reservation_group=_field(raw, "capacityReservationGroup", str, where)
        if "capacityReservationGroup" in raw else None)
    if pool.capacity_type not in CAPACITY_TYPES:
        raise ConfigError(f"{where}.capacityType: expected one of {list(CAPACITY_TYPES)}, got {pool.capacity_type!r}")
    if not _AGENT_POOL_NAME.match(pool.agent_pool_name):
        raise ConfigError(f"{where}.agentPoolName: expected 1 to 12 lower-case letters and digits, starting with a "
                          f"letter, got {pool.agent_pool_name!r}")
    if not 0 <= pool.min_size <= pool.desired_size <= pool.max_size or pool.max_size < 1:
        raise ConfigError(f"{where}: scaling must satisfy 0 <= minSize <= desiredSize <= maxSize and maxSize >= 1, "
                          f"got min={pool.min_size} desired={pool.desired_size} max={pool.max_size}")
    if pool.zone is not None and not _ZONE.match(pool.zone):
        raise ConfigError(f"{where}.zone: expected an availability zone number 1, 2 or 3, got {pool.zone!r}")
    group = pool.capacity_reservation_group
    if group is not None and (pool.capacity_type != "reserved" or not _GROUP.match(group)):
        raise ConfigError(f"{where}.capacityReservationGroup: a reserved pool's capacity reservation group resource "
                          f"ID, got {group!r} on a {pool.capacity_type} pool")
    return pool


def load_config() -> AksPoolsConfig:
    """Read and check the stack configuration; every problem names its key."""
    cfg = pulumi.Config(CONFIG_NAMESPACE)
    raw_pools = cfg.require_object("agentPools")
    if not isinstance(raw_pools, list):
        raise ConfigError("hybridctl:agentPools: expected a list")
    pools = tuple(parse_agent_pool(p, f"hybridctl:agentPools[{i}]") for i, p in enumerate(raw_pools))
    names = [p.agent_pool_name for p in pools]
    if len(set(names)) != len(names):
        raise ConfigError("hybridctl:agentPools: agent pool names must be unique")
    return AksPoolsConfig(site=cfg.require("site"), resource_group=cfg.require("resourceGroup"),
                          cluster_name=cfg.require("clusterName"), inventory_name=cfg.require("inventoryName"),
                          plan_digest=cfg.require("planDigest"), agent_pools=pools)


def node_labels(cfg: AksPoolsConfig, pool: AgentPool) -> dict[str, str]:
    return {LABEL_SITE: cfg.site, LABEL_POOL: pool.name, LABEL_GPU: pool.gpu_type}


def cost_tags(cfg: AksPoolsConfig, pool: AgentPool) -> dict[str, str]:
    return {"hybridctl:inventory": cfg.inventory_name, "hybridctl:site": cfg.site, "hybridctl:pool": pool.name,
            "hybridctl:plan": cfg.plan_digest}


def program(cfg: AksPoolsConfig) -> dict[str, pulumi.Output[Any]]:
    cs = azure.containerservice
    pools: dict[str, pulumi.Output[Any]] = {}
    for pool in cfg.agent_pools:
        spot = pool.capacity_type == "spot"
        agent_pool = cs.AgentPool(
            f"{cfg.site}-{pool.name}",
            resource_group_name=cfg.resource_group,
            resource_name_=cfg.cluster_name,
            agent_pool_name=pool.agent_pool_name,
            mode=cs.AgentPoolMode.USER,
            os_type=cs.OSType.LINUX,
            vm_size=pool.vm_size,
            count=pool.desired_size,
            enable_auto_scaling=True,
            min_count=pool.min_size,
            max_count=pool.max_size,
            scale_set_priority=cs.ScaleSetPriority.SPOT if spot else cs.ScaleSetPriority.REGULAR,
            # Spot: a reclaimed node is deleted (not kept, deallocated, on the bill); -1 pays up to on-demand.
            scale_set_eviction_policy=cs.ScaleSetEvictionPolicy.DELETE if spot else None,
            spot_max_price=-1 if spot else None,
            capacity_reservation_group_id=pool.capacity_reservation_group,
            availability_zones=[pool.zone] if pool.zone else None,
            node_labels=node_labels(cfg, pool),
            node_taints=[GPU_TAINT],
            tags=cost_tags(cfg, pool),
            # The cluster autoscaler owns the node count between plans.
            opts=pulumi.ResourceOptions(ignore_changes=["count"]),
        )
        pools[pool.name] = agent_pool.name
    pulumi.export("agentPools", pools)
    return pools
