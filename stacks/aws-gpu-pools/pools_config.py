"""The aws-gpu-pools stack configuration: parsed and checked before any resource is declared.

Schema (namespace ``hybridctl`` plus ``aws:region``) is documented in stacks/README.md. This
module must not import hybridctl: a user may run the stack from its own virtualenv.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import pulumi

CONFIG_NAMESPACE = "hybridctl"
CAPACITY_TYPES = ("on_demand", "reserved", "spot")
_RESERVATION = re.compile(r"^cr-[0-9a-f]{8,17}$")
_ZONE = re.compile(r"^[a-z]{2}(-[a-z]+)+-\d[a-z]$")  # a zone name: us-east-1a
_ZONE_ID = re.compile(r"^[a-z]{2,4}\d-az\d+$")  # a zone ID: use1-az1, the same physical zone in every account
# gp3 root volume bounds (GiB); the AL2023 NVIDIA AMI needs more than its 20 GiB default.
DISK_MIN_GIB, DISK_MAX_GIB = 20, 16_384


# Scheduled actions of one Auto Scaling group: AWS allows 125 (Service Quotas, "Scheduled actions per Auto
# Scaling group"); a longer list is refused here rather than half-applied.
MAX_SCHEDULE_ACTIONS = 125
_RECURRENCE = re.compile(r"^(\d{1,2}) (\d{1,2}) \* \* (\d)\Z")  # "M H * * D", weekly, in its time zone
_TIME_ZONE = re.compile(r"^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+){0,2}\Z")  # an IANA name: Europe/Dublin


class ConfigError(ValueError):
    """The stack configuration does not match the schema in stacks/README.md."""


@dataclass(frozen=True)
class ScheduledSize:
    """A weekly resize of a node group's Auto Scaling group: from `recurrence` (cron, on `time_zone`'s clock) on,
    these bounds. Desired is never set: raising min raises it, and below a lowered min Cluster Autoscaler
    removes nodes as they go idle (drained), never busy ones."""

    recurrence: str
    time_zone: str
    min_size: int
    max_size: int

    @property
    def action_name(self) -> str:
        """A name that says when (`mon-0730`): the same time keeps its action across plans."""
        minute, hour, day = (int(f) for f in _RECURRENCE.match(self.recurrence).groups())  # type: ignore[union-attr]
        return f"{_DAYS[day]}-{hour:02d}{minute:02d}"


_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's day numbers


@dataclass(frozen=True)
class NodePool:
    name: str
    instance_types: tuple[str, ...]  # the first is the pool's own; spot pools list same-shape alternatives
    capacity_type: str  # on_demand | spot | reserved
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int
    disk_gib: int = 200
    efa_interfaces: int = 0  # > 0: EFA network interfaces (one per network card) and a cluster placement group
    reservation_id: str | None = None  # an EC2 capacity reservation the nodes launch into
    availability_zone: str | None = None  # only the cluster's subnets in this zone (a name or a zone ID)
    capacity_block: bool = False  # the reservation is a Capacity Block for ML
    local_nvme: bool = False  # instance-store NVMe: one RAID0 array for containerd and kubelet
    schedule: tuple[ScheduledSize, ...] = ()  # pay-per-use pools of a timed plan: weekly resizes

    @property
    def zone_is_id(self) -> bool:
        return bool(self.availability_zone and _ZONE_ID.match(self.availability_zone))


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


_REQUIRED = {"name", "instanceTypes", "capacityType", "gpuType", "gpusPerNode", "minSize", "desiredSize", "maxSize"}
_OPTIONAL = {"diskGiB", "efaInterfaces", "reservationId", "availabilityZone", "capacityBlock", "localNvme", "schedule"}
_ACTION_FIELDS = {"recurrence", "timeZone", "minSize", "maxSize"}


def parse_schedule(raw: object, pool: NodePool, where: str) -> tuple[ScheduledSize, ...]:
    """A pool's weekly resizes: each a weekly cron in range in an IANA time zone (one for the whole pool),
    sizes with min <= max inside the node group's [minSize, maxSize], each time once; only pay-per-use
    pools (reserved machines are always paid)."""
    if not isinstance(raw, list) or not raw:
        raise ConfigError(f"{where}: expected a non-empty list of scheduled sizes")
    if len(raw) > MAX_SCHEDULE_ACTIONS:
        raise ConfigError(f"{where}: {len(raw)} scheduled sizes, AWS allows {MAX_SCHEDULE_ACTIONS} per Auto Scaling group")
    if pool.capacity_type == "reserved":
        raise ConfigError(f"{where}: a reserved pool keeps its size (its machines are paid whether they run or not)")
    actions = []
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, Mapping) or set(item) != _ACTION_FIELDS:
            raise ConfigError(f"{at}: expected an object with exactly {', '.join(sorted(_ACTION_FIELDS))}, got {item!r}")
        recurrence = _field(item, "recurrence", str, at)
        match = _RECURRENCE.match(recurrence)
        if match is None or int(match.group(1)) > 59 or int(match.group(2)) > 23 or int(match.group(3)) > 6:
            raise ConfigError(f"{at}.recurrence: expected a weekly cron 'M H * * D' (minute 0-59, hour 0-23, "
                              f"day 0-6 with 0 Sunday), got {recurrence!r}")
        zone = _field(item, "timeZone", str, at)
        if not _TIME_ZONE.match(zone):
            raise ConfigError(f"{at}.timeZone: expected an IANA time zone such as Europe/Dublin, got {zone!r}")
        action = ScheduledSize(recurrence, zone, _field(item, "minSize", int, at), _field(item, "maxSize", int, at))
        if not pool.min_size <= action.min_size <= action.max_size <= pool.max_size:
            raise ConfigError(
                f"{at}: sizes must satisfy minSize {pool.min_size} <= min <= max <= maxSize {pool.max_size} "
                f"of the pool, got min={action.min_size} max={action.max_size}")
        actions.append(action)
    if len({a.time_zone for a in actions}) > 1:
        raise ConfigError(f"{where}: every scheduled size of a pool recurs in one time zone")
    names = [a.action_name for a in actions]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{where}: two sizes at the same time: {', '.join(repeated)}")
    return tuple(actions)


def parse_node_pool(raw: object, where: str) -> NodePool:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {raw!r}")
    unknown = sorted(set(raw) - _REQUIRED - _OPTIONAL)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
    types = _field(raw, "instanceTypes", list, where)
    if not types or not all(isinstance(t, str) and t for t in types) or len(set(types)) != len(types):
        raise ConfigError(f"{where}.instanceTypes: expected a non-empty list of distinct instance types")
    reservation = raw.get("reservationId")
    zone = raw.get("availabilityZone")
    pool = NodePool(
        name=_field(raw, "name", str, where),
        instance_types=tuple(types),
        capacity_type=_field(raw, "capacityType", str, where),
        gpu_type=_field(raw, "gpuType", str, where),
        gpus_per_node=_field(raw, "gpusPerNode", int, where),
        min_size=_field(raw, "minSize", int, where),
        desired_size=_field(raw, "desiredSize", int, where),
        max_size=_field(raw, "maxSize", int, where),
        disk_gib=_field(raw, "diskGiB", int, where) if "diskGiB" in raw else 200,
        efa_interfaces=_field(raw, "efaInterfaces", int, where) if "efaInterfaces" in raw else 0,
        reservation_id=reservation,
        availability_zone=zone,
        capacity_block=_field(raw, "capacityBlock", bool, where) if "capacityBlock" in raw else False,
        local_nvme=_field(raw, "localNvme", bool, where) if "localNvme" in raw else False,
    )
    if pool.capacity_type not in CAPACITY_TYPES:
        raise ConfigError(f"{where}.capacityType: expected one of {list(CAPACITY_TYPES)}, got {pool.capacity_type!r}")
    if pool.gpus_per_node < 1:
        raise ConfigError(f"{where}.gpusPerNode: must be at least 1")
    if len(pool.instance_types) > 1 and pool.capacity_type != "spot":
        raise ConfigError(f"{where}.instanceTypes: only spot pools list more than one instance type")
    # EKS rejects a scaling config outside 0 <= min <= desired <= max, max >= 1.
    if not 0 <= pool.min_size <= pool.desired_size <= pool.max_size or pool.max_size < 1:
        raise ConfigError(
            f"{where}: scaling must satisfy 0 <= minSize <= desiredSize <= maxSize and maxSize >= 1, "
            f"got min={pool.min_size} desired={pool.desired_size} max={pool.max_size}"
        )
    if not DISK_MIN_GIB <= pool.disk_gib <= DISK_MAX_GIB:
        raise ConfigError(f"{where}.diskGiB: expected {DISK_MIN_GIB}..{DISK_MAX_GIB}, got {pool.disk_gib}")
    if not 0 <= pool.efa_interfaces <= 32:
        raise ConfigError(f"{where}.efaInterfaces: expected 0..32, got {pool.efa_interfaces}")
    if reservation is not None and (not isinstance(reservation, str) or not _RESERVATION.match(reservation)):
        raise ConfigError(f"{where}.reservationId: expected an EC2 capacity reservation id (cr-…), got {reservation!r}")
    if reservation is not None and pool.capacity_type != "reserved":
        raise ConfigError(f"{where}.reservationId: only reserved pools launch into a capacity reservation")
    if zone is not None and (not isinstance(zone, str) or not (_ZONE.match(zone) or _ZONE_ID.match(zone))):
        raise ConfigError(f"{where}.availabilityZone: expected an availability zone name such as us-east-1a "
                          f"or a zone ID such as use1-az1, got {zone!r}")
    # A capacity reservation lives in one zone: instances launched elsewhere cannot use it.
    if reservation is not None and zone is None:
        raise ConfigError(f"{where}.availabilityZone: a pool with reservationId needs the reservation's zone")
    if pool.capacity_block and reservation is None:
        raise ConfigError(f"{where}.capacityBlock: only a pool with reservationId launches into a Capacity Block")
    if "schedule" in raw:
        pool = replace(pool, schedule=parse_schedule(raw["schedule"], pool, f"{where}.schedule"))
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
