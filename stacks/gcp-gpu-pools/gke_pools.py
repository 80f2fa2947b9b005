"""GKE node pools of one Google Cloud site, from the configuration hybridctl derives from a plan.

Each planned pool is one node pool of the site's existing GKE cluster: its machine type and guest
accelerators (GKE installs the NVIDIA driver: `gpu_driver_installation_config`, so no device plugin is
deployed here), Spot VMs for spot pools, the named reservation for reserved ones (and none otherwise, so
on-demand nodes never eat a reservation), the pool's zone, the GPU taint, hybridctl's labels (the k8s-queues
stack's ResourceFlavors select them) and autoscaling bounds from the plan.

This module must not import hybridctl: a user may run the stack from its own virtualenv.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_gcp as gcp

CONFIG_NAMESPACE = "hybridctl"
CAPACITY_TYPES = ("on_demand", "reserved", "spot")
GPU_TAINT_KEY = "nvidia.com/gpu"
LABEL_SITE, LABEL_POOL, LABEL_GPU = "hybridctl.io/site", "hybridctl.io/pool", "hybridctl.io/gpu"
_ZONE = re.compile(r"^[a-z]+-[a-z]+\d+-[a-z]$")  # us-central1-a
_RESERVATION = re.compile(r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_ACCELERATOR = re.compile(r"^nvidia-[a-z0-9-]+$")


class ConfigError(ValueError):
    """The stack configuration does not match the schema in stacks/README.md."""


@dataclass(frozen=True)
class NodePool:
    name: str
    machine_type: str
    accelerator: str  # the GKE accelerator type: nvidia-h100-80gb, nvidia-l4, ...
    capacity_type: str
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int
    zone: str | None = None
    reservation: str | None = None


@dataclass(frozen=True)
class GkePoolsConfig:
    site: str
    project: str | None  # None: the provider's default project (GOOGLE_PROJECT, gcloud's configuration)
    region: str
    cluster_name: str
    inventory_name: str
    plan_digest: str
    node_pools: tuple[NodePool, ...]


def _field(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise ConfigError(f"{where}: missing field {key!r}")
    value = obj[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ConfigError(f"{where}.{key}: expected {kind.__name__}, got {value!r}")
    return value


_REQUIRED = {"name", "machineType", "accelerator", "capacityType", "gpuType", "gpusPerNode", "minSize",
             "desiredSize", "maxSize"}
_OPTIONAL = {"zone", "reservation"}


def parse_node_pool(raw: object, where: str) -> NodePool:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {raw!r}")
    unknown = sorted(set(raw) - _REQUIRED - _OPTIONAL)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
    pool = NodePool(
        name=_field(raw, "name", str, where), machine_type=_field(raw, "machineType", str, where),
        accelerator=_field(raw, "accelerator", str, where), capacity_type=_field(raw, "capacityType", str, where),
        gpu_type=_field(raw, "gpuType", str, where), gpus_per_node=_field(raw, "gpusPerNode", int, where),
        min_size=_field(raw, "minSize", int, where), desired_size=_field(raw, "desiredSize", int, where),
        max_size=_field(raw, "maxSize", int, where),
        zone=_field(raw, "zone", str, where) if "zone" in raw else None,
        reservation=_field(raw, "reservation", str, where) if "reservation" in raw else None)
    if pool.capacity_type not in CAPACITY_TYPES:
        raise ConfigError(f"{where}.capacityType: expected one of {list(CAPACITY_TYPES)}, got {pool.capacity_type!r}")
    if not _ACCELERATOR.match(pool.accelerator):
        raise ConfigError(f"{where}.accelerator: expected a GKE accelerator type (nvidia-...), got {pool.accelerator!r}")
    if pool.gpus_per_node < 1:
        raise ConfigError(f"{where}.gpusPerNode: must be at least 1")
    if not 0 <= pool.min_size <= pool.desired_size <= pool.max_size or pool.max_size < 1:
        raise ConfigError(f"{where}: scaling must satisfy 0 <= minSize <= desiredSize <= maxSize and maxSize >= 1, "
                          f"got min={pool.min_size} desired={pool.desired_size} max={pool.max_size}")
    if pool.zone is not None and not _ZONE.match(pool.zone):
        raise ConfigError(f"{where}.zone: expected a zone such as us-central1-a, got {pool.zone!r}")
    if pool.reservation is not None and (pool.capacity_type != "reserved" or not _RESERVATION.match(pool.reservation)):
        raise ConfigError(f"{where}.reservation: a reserved pool's Compute Engine reservation name, got "
                          f"{pool.reservation!r} on a {pool.capacity_type} pool")
    if pool.reservation is not None and pool.zone is None:
        raise ConfigError(f"{where}.zone: a reservation is zonal: the pool needs the reservation's zone")
    return pool


def load_config() -> GkePoolsConfig:
    """Read and check the stack configuration; every problem names its key."""
    cfg = pulumi.Config(CONFIG_NAMESPACE)
    raw_pools = cfg.require_object("nodePools")
    if not isinstance(raw_pools, list):
        raise ConfigError("hybridctl:nodePools: expected a list")
    pools = tuple(parse_node_pool(p, f"hybridctl:nodePools[{i}]") for i, p in enumerate(raw_pools))
    names = [p.name for p in pools]
    if len(set(names)) != len(names):
        raise ConfigError("hybridctl:nodePools: pool names must be unique")
    google = pulumi.Config("gcp")
    return GkePoolsConfig(site=cfg.require("site"), project=google.get("project"),
                          region=google.require("region"), cluster_name=cfg.require("clusterName"),
                          inventory_name=cfg.require("inventoryName"), plan_digest=cfg.require("planDigest"),
                          node_pools=pools)


def node_labels(cfg: GkePoolsConfig, pool: NodePool) -> dict[str, str]:
    return {LABEL_SITE: cfg.site, LABEL_POOL: pool.name, LABEL_GPU: pool.gpu_type}


def cost_labels(cfg: GkePoolsConfig, pool: NodePool) -> dict[str, str]:
    """GCP resource labels (billing export): lower-case keys and values, at most 63 characters."""
    digest = cfg.plan_digest.removeprefix("sha256:")[:12]
    return {"hybridctl-inventory": cfg.inventory_name, "hybridctl-site": cfg.site, "hybridctl-pool": pool.name,
            "hybridctl-plan": digest}


def _reservation_affinity(pool: NodePool) -> gcp.container.NodePoolNodeConfigReservationAffinityArgs:
    if pool.reservation is None:
        # On-demand and spot nodes never consume a reservation another pool pays for.
        return gcp.container.NodePoolNodeConfigReservationAffinityArgs(consume_reservation_type="NO_RESERVATION")
    return gcp.container.NodePoolNodeConfigReservationAffinityArgs(
        consume_reservation_type="SPECIFIC_RESERVATION", key="compute.googleapis.com/reservation-name",
        values=[pool.reservation])


def program(cfg: GkePoolsConfig) -> dict[str, pulumi.Output[Any]]:
    pools: dict[str, pulumi.Output[Any]] = {}
    for pool in cfg.node_pools:
        node_pool = gcp.container.NodePool(
            f"{cfg.site}-{pool.name}",
            cluster=cfg.cluster_name,
            location=cfg.region,
            project=cfg.project,
            node_locations=[pool.zone] if pool.zone else None,
            initial_node_count=pool.desired_size,
            autoscaling=gcp.container.NodePoolAutoscalingArgs(
                total_min_node_count=pool.min_size, total_max_node_count=pool.max_size, location_policy="ANY"),
            management=gcp.container.NodePoolManagementArgs(auto_repair=True, auto_upgrade=True),
            node_config=gcp.container.NodePoolNodeConfigArgs(
                machine_type=pool.machine_type,
                spot=pool.capacity_type == "spot",
                guest_accelerators=[gcp.container.NodePoolNodeConfigGuestAcceleratorArgs(
                    type=pool.accelerator, count=pool.gpus_per_node,
                    gpu_driver_installation_config=gcp.container
                    .NodePoolNodeConfigGuestAcceleratorGpuDriverInstallationConfigArgs(gpu_driver_version="LATEST"))],
                reservation_affinity=_reservation_affinity(pool),
                labels=node_labels(cfg, pool),
                resource_labels=cost_labels(cfg, pool),
                taints=[gcp.container.NodePoolNodeConfigTaintArgs(key=GPU_TAINT_KEY, value="present",
                                                                  effect="NO_SCHEDULE")],
                oauth_scopes=["https://www.googleapis.com/auth/cloud-platform"],
            ),
            # The autoscaler owns the node count between plans.
            opts=pulumi.ResourceOptions(ignore_changes=["initialNodeCount"]),
        )
        pools[pool.name] = node_pool.name
    pulumi.export("nodePools", pools)
    return pools
