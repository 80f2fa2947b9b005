"""The values of the Pulumi stack configurations: exactly what the programs in stacks/ read
(schema: stacks/README.md). stackconfig.py derives them from a plan; stackdiff.py compares them;
`synth` and the Pulumi driver hand `values()` to the programs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

PROJECT_GPU_POOLS = "aws-gpu-pools"
PROJECT_QUEUES = "k8s-queues"
KUBECONFIG_SECRET_SUFFIX = "-kubeconfig"  # MultiKueue worker credentials: a Secret the operator creates
PLAN_DIGEST_KEY = "planDigest"  # a stack's tag: the digest of the plan file it was deployed from
DISK_FLOOR_GIB = 200  # a node's root volume never below this (stackconfig.disk_gib)
# The root volume of a type with local NVMe: the OS and its logs only (containerd and kubelet live on the NVMe)
ROOT_WITH_NVME_GIB = 100

MINUTES_PER_DAY = 24 * 60
_CRON_DAYS = ("1", "2", "3", "4", "5", "6", "0")  # Monday first, as the week is counted; cron: 0 = Sunday

JsonValue = str | int | float | bool | None | list["JsonValue"] | dict[str, "JsonValue"]


UTC_ZONE = "Etc/UTC"


@dataclass(frozen=True, order=True)
class ScalingAction:
    """From `minute` of every week (from Monday 00:00 UTC, in the plan's week) on: the node group's Auto
    Scaling group sizes. `desired_size` is the machines the plan expects then (shown, never sent: the
    action sets min and max, and Cluster Autoscaler moves desired between them). `zone` is the IANA zone
    the action recurs in, `wall_minute` its minute of the week on that zone's clock (from Monday 00:00
    there): a window's edge stays at its wall-clock time across daylight saving."""

    minute: int
    min_size: int
    desired_size: int
    max_size: int
    zone: str = UTC_ZONE
    wall_minute: int | None = None  # None: `minute`, in UTC

    @property
    def recurrence(self) -> str:
        """The weekly cron of the action, on its zone's clock: "M H * * D"."""
        day, rest = divmod(self.minute if self.wall_minute is None else self.wall_minute, MINUTES_PER_DAY)
        return f"{rest % 60} {rest // 60} * * {_CRON_DAYS[day]}"


@dataclass(frozen=True)
class NodePoolConfig:
    name: str
    instance_type: str
    capacity_type: str
    gpu_type: str
    gpus_per_node: int
    min_size: int
    desired_size: int
    max_size: int
    instance_types: tuple[str, ...] = ()  # spot: every catalog type of the same GPU and shape; default (instance_type,)
    disk_gib: int = DISK_FLOOR_GIB
    efa_interfaces: int = 0  # > 0: multi-node work is planned on an EFA-capable type; with a placement group
    reservation_id: str | None = None
    availability_zone: str | None = None  # a zone name (us-east-1a) or zone ID (use1-az1)
    # the type has instance-store NVMe: nodeadm puts it in one RAID0 array for containerd and kubelet
    # (images, emptyDir model and data caches)
    local_nvme: bool = False
    capacity_block: bool = False  # reservation_id names a Capacity Block for ML, not a capacity reservation
    # pay-per-use pools of a timed plan: the weekly resizes of its Auto Scaling group (scaling_schedule.py)
    schedule: tuple[ScalingAction, ...] = ()

    @property
    def types(self) -> tuple[str, ...]:
        return self.instance_types or (self.instance_type,)

    def values(self) -> dict[str, JsonValue]:
        values: dict[str, JsonValue] = {
            "name": self.name, "instanceTypes": list(self.types), "capacityType": self.capacity_type,
            "gpuType": self.gpu_type, "gpusPerNode": self.gpus_per_node,
            "minSize": self.min_size, "desiredSize": self.desired_size, "maxSize": self.max_size,
            "diskGiB": self.disk_gib,
        }
        if self.efa_interfaces:
            values["efaInterfaces"] = self.efa_interfaces
        if self.reservation_id:
            values["reservationId"] = self.reservation_id
        if self.availability_zone:
            values["availabilityZone"] = self.availability_zone
        if self.local_nvme:
            values["localNvme"] = True
        if self.capacity_block:
            values["capacityBlock"] = True
        if self.schedule:
            values["schedule"] = [{"recurrence": a.recurrence, "timeZone": a.zone, "minSize": a.min_size,
                                   "maxSize": a.max_size} for a in self.schedule]
        return values


@dataclass(frozen=True)
class GpuPoolsStackConfig:
    project: ClassVar[str] = PROJECT_GPU_POOLS
    site: str
    region: str
    cluster_name: str
    inventory_name: str
    plan_digest: str
    node_pools: tuple[NodePoolConfig, ...]

    @property
    def stack_name(self) -> str:
        return f"{self.inventory_name}-{self.site}"

    def values(self) -> dict[str, JsonValue]:
        return {
            "aws:region": self.region, "site": self.site, "clusterName": self.cluster_name,
            "inventoryName": self.inventory_name, PLAN_DIGEST_KEY: self.plan_digest,
            "nodePools": [p.values() for p in self.node_pools],
        }


@dataclass(frozen=True)
class FlavorConfig:
    name: str
    gpu_type: str
    node_labels: tuple[tuple[str, str], ...]
    spot: bool = False
    # GPUs the cohort holds itself, lent to the burst and opportunistic queues that borrow: the opportunistic
    # tier's and those paid whatever runs that no queue holds (stackqueues.within_capacity)
    cohort_gpus: int = 0


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    gpus: int


@dataclass(frozen=True)
class ClusterQueueConfig:
    name: str
    tier: str
    flavors: tuple[FlavorQuota, ...]  # the flavors it reaches, tried in order, with planned GPUs
    dispatched: bool = False  # its workloads go to MultiKueue workers


@dataclass(frozen=True)
class WorkloadQueue:
    name: str
    tier: str
    cluster_queue: str = ""
    team: str | None = None  # the owner, labelled on its namespace for showback
    # on a MultiKueue manager that holds a share of the dispatched work: the queue of its own share
    # (Kueue never runs the manager's work as a worker's), reached through LocalQueue `<name>-local`
    local_cluster_queue: str = ""


@dataclass(frozen=True)
class QueuesStackConfig:
    project: ClassVar[str] = PROJECT_QUEUES
    cluster_name: str
    inventory_name: str
    plan_digest: str
    cohort: str
    flavors: tuple[FlavorConfig, ...]
    cluster_queues: tuple[ClusterQueueConfig, ...]
    workloads: tuple[WorkloadQueue, ...]
    multikueue_clusters: tuple[str, ...] = ()  # worker clusters in spill order, when this cluster dispatches
    region: str = ""  # the EKS cluster's region: the Kubernetes provider is built from it
    on_premises: bool = False  # an on-prem cluster: reached through the kubeconfig context named after it
    provisioning_request: bool = False  # cloud: burst and opportunistic admission waits for capacity
    efa_device_plugin: bool = False  # a pool of the cluster has EFA interfaces

    @property
    def stack_name(self) -> str:
        return f"{self.inventory_name}-{self.cluster_name}"

    def quotas(self, queue: str) -> tuple[FlavorQuota, ...]:
        return next((q.flavors for q in self.cluster_queues if q.name == queue), ())

    def values(self) -> dict[str, JsonValue]:
        values: dict[str, JsonValue] = {
            "aws:region": self.region, "clusterName": self.cluster_name, "inventoryName": self.inventory_name,
            PLAN_DIGEST_KEY: self.plan_digest, "cohort": self.cohort,
            "flavors": [{"name": f.name, "gpuType": f.gpu_type, "nodeLabels": dict(f.node_labels),
                         **({"cohortGpus": f.cohort_gpus} if f.cohort_gpus else {})} for f in self.flavors],
            "clusterQueues": [
                {"name": q.name, "tier": q.tier, "flavors": [{"flavor": f.flavor, "gpus": f.gpus} for f in q.flavors],
                 **({"dispatched": True} if q.dispatched else {})}
                for q in self.cluster_queues
            ],
            "workloads": [{"name": w.name, "tier": w.tier, "clusterQueue": w.cluster_queue, **({"team": w.team} if w.team else {}),
                           **({"localClusterQueue": w.local_cluster_queue} if w.local_cluster_queue else {})}
                          for w in self.workloads],
        }
        if self.on_premises:
            values["kubeContext"] = self.cluster_name
            values["onPremises"] = True
        if self.provisioning_request:
            values["provisioningRequest"] = True
        if self.efa_device_plugin:
            values["installEfaDevicePlugin"] = True
        if self.multikueue_clusters:
            values["multiKueueClusters"] = [
                {"name": c, "kubeconfigSecret": f"{c}{KUBECONFIG_SECRET_SUFFIX}"} for c in self.multikueue_clusters
            ]
        return values


@dataclass(frozen=True)
class StackConfigs:
    gpu_pools: tuple[GpuPoolsStackConfig, ...]
    queues: tuple[QueuesStackConfig, ...]
