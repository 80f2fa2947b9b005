"""The plan as Pulumi stack configuration.

One `aws-gpu-pools` stack per cloud site with planned pools, one `k8s-queues` stack per
Kubernetes cluster those pools join. The values are exactly what the programs in stacks/
read (schema: stacks/README.md), so `plan` can show the cloud changes without the pulumi CLI
(stackdiff.py), `synth` can render them offline and `apply` hands the same values to the
driver: StackSpec(c.project, c.stack_name, c.values()).

Node group sizing (node_group_sizes): min = the machines the fixed tier needs (always on),
desired = every machine the plan uses (fixed, burst and opportunistic: the planned steady
state; the cluster autoscaler owns it after creation), max = the pool's quota in whole
machines, never below desired. A timed plan's pay-per-use pools also get weekly resizes of their
Auto Scaling group, and min becomes the week's floor (scaling_schedule.py).

Queues: each workload's LocalQueue points at a ClusterQueue that reaches only the flavors of
its GPU types, and spot flavors only when the workload is preemptible (queue_key).

derive() works out a whole plan; a site's stack (gpu_pools_config) and a cluster's
(queues_config) are built by functions of their own, which stackreuse.py calls for just the
sites and clusters where a plan differs from one derived before. What they read of the plan is
in stackplanned.py.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from hybridctl.core.deploy.scaling_schedule import with_schedules
from hybridctl.core.deploy.stackplanned import (
    MultiKueue,
    PlanIndex,
    PlannedPool,
    PoolKey,
    burst_spread,
    cluster_of,
    multikueue_groups,
    onprem_planned_pools,
    planned_machines,
    planned_pools,
    spanning_of,
    spill_order,
)
from hybridctl.core.deploy.stackqueues import (
    DISPATCHED,
    LABEL_DISPATCHED,
    dispatch_flavor,
    dispatching,
    uses_efa,
    within_capacity,
)
from hybridctl.core.deploy.stackvalues import (
    DISK_FLOOR_GIB,
    ROOT_WITH_NVME_GIB,
    ClusterQueueConfig,
    FlavorConfig,
    FlavorQuota,
    GpuPoolsStackConfig,
    NodePoolConfig,
    QueuesStackConfig,
    StackConfigs,
    WorkloadQueue,
)
from hybridctl.core.identitymemo import IdentityMemo
from hybridctl.core.inventory.catalog import Catalog, catalog
from hybridctl.core.inventory.models import (
    CapacityType,
    Inventory,
    Pool,
    ReservationType,
    Site,
    SiteKind,
    Workload,
)
from hybridctl.core.inventory.zones import zone_of
from hybridctl.core.memo import RunMemo, Slot
from hybridctl.core.placement.tiers import TIER_ORDER, Tier, allowed_capacity_types
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.plan.serialize import plan_to_json_utf8


class ConfigsMemo(Protocol):
    """What stack_configs asks of a memo of a run's stack configurations (stackreuse.StackConfigMemo)."""

    def stack_configs(self, inventory: Inventory, plan: Plan, digest: str, cat: Catalog) -> StackConfigs: ...

# Shared with stacks/aws-gpu-pools (node labels) and stacks/k8s-queues (flavor selectors).
LABEL_SITE = "hybridctl.io/site"
LABEL_POOL = "hybridctl.io/pool"
LABEL_GPU = "hybridctl.io/gpu"

# Root volume of a type without local NVMe: the models the pool's workloads load (a cache), plus room for
# the OS and container images (CUDA images run to tens of GB each); never below the floor (stackvalues).
# Datasets are never copied onto it: they are read where the plan reads them from.
DISK_HEADROOM_GIB = 100
DISK_MAX_GIB = 2_048
# Instance families with EFA, and the network cards each size has (one EFA interface per card).
EFA_NETWORK_CARDS = MappingProxyType({"p4d.24xlarge": 4, "p4de.24xlarge": 4, "p5.48xlarge": 32, "p5e.48xlarge": 32,
                                      "p5en.48xlarge": 16})

def nodes_for(gpus: int, gpus_per_node: int) -> int:
    return -(-gpus // gpus_per_node)


def node_group_sizes(fixed_gpus: int, planned_gpus: int, gpus_per_node: int, quota_gpus: int,
                     planned_machines: int | None = None) -> tuple[int, int, int]:
    """(min, desired, max) of a node group: the one place node groups are sized.

    `planned_machines` is the plan's whole-machine count for the pool (pay-per-use pools, when
    the plan carries it): the planner already rounded each replica to whole machines, so it is
    used as is; without it, the GPUs are packed into ceil(GPUs / GPUs per node) machines.
    """
    minimum = nodes_for(fixed_gpus, gpus_per_node)
    desired = max(planned_machines if planned_machines is not None else nodes_for(planned_gpus, gpus_per_node), minimum)
    # Quota in whole machines; EKS needs max >= desired and max >= 1.
    return minimum, desired, max(quota_gpus // gpus_per_node, desired, 1)


def _gib(gb: float) -> int:
    return math.ceil(gb * 1e9 / 2**30)


def disk_gib(workloads: list[Workload], local_nvme_gb: int) -> int:
    """Root volume for a pool. With instance-store NVMe (every GPU type of the catalog has some), the node
    puts containerd and kubelet on it (images, emptyDir model and data caches: NodePoolConfig.local_nvme),
    so the root holds only the OS: a fixed, modest size that no plan change moves (a new size is a new
    launch template version, which rolls every node). Without it, the models its workloads load, images
    and the OS. Datasets are read where the plan reads them from, never copied onto the root."""
    if local_nvme_gb:
        return ROOT_WITH_NVME_GIB
    needed = sum(w.model_gb or 0.0 for w in workloads)
    return min(max(DISK_FLOOR_GIB, _gib(needed) + DISK_HEADROOM_GIB), DISK_MAX_GIB)


def _spot_types(pool: Pool, cat: Catalog) -> tuple[str, ...]:
    """Spot diversifies across every catalog type with the pool's GPU and GPUs per node."""
    own = cat.instances[pool.instance_type or ""]
    others = sorted(i.name for i in cat.instances.values()
                    if i.provider == own.provider and i.gpu == own.gpu and i.gpus_per_node == own.gpus_per_node
                    and i.name != own.name)
    return (own.name, *others)


def _zone(site: Site, pool: Pool) -> str | None:
    """A pool's failure domain when it names one of its region's availability zones, by name or by ID."""
    return zone_of(site.region, pool.failure_domain)


def node_pool(planned: PlannedPool, known: Mapping[str, Workload], dataset_gb: Mapping[str, float], cat: Catalog,
               machines: int | None) -> NodePoolConfig:
    pool = planned.pool
    instance = cat.instances[pool.instance_type or ""]
    gpn = instance.gpus_per_node
    minimum, desired, maximum = node_group_sizes(planned.gpus_by_tier.get(Tier.FIXED, 0),
                                                 sum(planned.gpus_by_tier.values()), gpn, pool.max_gpus or 0, machines)
    capacity_block = (pool.capacity_type is CapacityType.RESERVED and pool.reservation_id is not None
                      and pool.reservation_type_effective is ReservationType.CAPACITY_BLOCK)
    if capacity_block:
        # A Capacity Block's machines launch only between its start and end, which the inventory does not
        # hold: the group is created at zero and Cluster Autoscaler scales it into the block for the pods
        # waiting (its launches fail, and it backs off, until the block starts).
        minimum, desired, maximum = 0, 0, max((pool.max_gpus or 0) // gpn, 1)
    elif pool.capacity_type is CapacityType.RESERVED:
        # Reserved machines are paid whether they run or not: keep every one of them up.
        minimum = max(minimum, (pool.max_gpus or 0) // gpn)
        desired, maximum = max(desired, minimum), max(maximum, minimum)
    workloads = [known[w] for w in sorted(planned.workloads) if w in known]
    multi_node = any(w.multi_node and w.gpu.count > gpn for w in workloads)
    return NodePoolConfig(
        name=pool.name, instance_type=pool.instance_type or "", capacity_type=pool.capacity_type.value,
        gpu_type=pool.gpu, gpus_per_node=gpn, min_size=minimum, desired_size=desired, max_size=maximum,
        instance_types=_spot_types(pool, cat) if pool.capacity_type is CapacityType.SPOT else (),
        disk_gib=disk_gib(workloads, instance.local_nvme_gb), local_nvme=instance.local_nvme_gb > 0,
        efa_interfaces=EFA_NETWORK_CARDS.get(pool.instance_type or "", 0) if multi_node else 0,
        reservation_id=pool.reservation_id if pool.capacity_type is CapacityType.RESERVED else None,
        capacity_block=capacity_block,
        availability_zone=_zone(planned.site, pool),
    )


def plan_digest(plan: Plan) -> str:
    """The digest of the plan file's bytes (byte-stable: the solver's wall time is left out), worked out now.

    Serialising a fleet's plan costs a few tenths of a second: a run that asks for one plan's digest
    again (a failover's runbook tags the applied plan's stacks and the failover plan's, its rollback the
    same two) asks kept_plan_digest with its RunMemo, which keeps the last few.
    """
    return "sha256:" + hashlib.sha256(plan_to_json_utf8(plan, plan_file=True)).hexdigest()


# A runbook tags the applied plan's stacks and the failover plan's, its rollback the same two, and the state records
# the failover plan's. 4: the last few plans.
DIGESTS: Slot[IdentityMemo[Plan, str]] = Slot("a plan file's digest", lambda: IdentityMemo(4))


def kept_plan_digest(run_memo: RunMemo, plan: Plan) -> str:
    """plan_digest(plan), kept in the run's memo. Bound to a run's memo (partial), it is what the step builders
    take to tag a plan's stacks with (failover/plan_steps.derived_steps)."""
    return run_memo[DIGESTS].get(plan, plan_digest)


def remember_digest(run_memo: RunMemo, plan: Plan, digest: str) -> None:
    """`plan`'s digest is known (a state records its applied plan's): kept_plan_digest need not work it out."""
    run_memo[DIGESTS].put(plan, digest)


def queue_name(cohort: str, tier: str, gpu_types: tuple[str, ...], spot: bool, dispatched: bool) -> str:
    """`<cohort>-<tier>-<gpu types>[-spot][-mk]`: one ClusterQueue per distinct reach."""
    slug = "-".join(re.sub(r"[^a-z0-9]+", "-", t.lower()).strip("-") for t in gpu_types)
    return f"{cohort}-{tier}-{slug}" + ("-spot" if spot else "") + ("-mk" if dispatched else "")


Reach = tuple[str, tuple[str, ...], bool, bool]  # tier, GPU types (sorted), spot allowed, dispatched
Placed = Iterable[tuple[PlannedPool, int]]  # a workload's GPUs on a cluster's pools


class QueueTally:
    """A cluster's workloads by reach (its ClusterQueue), and each reach's GPUs per pool: what the
    cluster's queues are assembled from. stackreuse.py patches a copy for the workloads that changed."""

    def __init__(self) -> None:
        self.reach: dict[str, Reach] = {}
        self.count: dict[Reach, int] = defaultdict(int)
        self.gpus: dict[Reach, dict[str, int]] = defaultdict(lambda: defaultdict(int))

    def add(self, name: str, reach: Reach, placed: Placed) -> None:
        self.reach[name] = reach
        self.count[reach] += 1
        for p, g in placed:
            self.gpus[reach][p.pool.name] += g

    def remove(self, name: str, placed: Placed) -> None:
        reach = self.reach.pop(name)
        self.count[reach] -= 1
        for p, g in placed:
            self.gpus[reach][p.pool.name] -= g

    def copy(self) -> QueueTally:
        other = QueueTally()
        other.reach = dict(self.reach)
        other.count.update(self.count)
        for reach, gpus in self.gpus.items():
            other.gpus[reach].update(gpus)
        return other


ReachCache = dict[tuple[str, tuple[str, ...], bool], tuple[str, tuple[str, ...], bool]]


def reach_of(inventory: Inventory, tier: str, spec: Workload | None, placed: list[tuple[PlannedPool, int]],
             dispatched: bool, cache: ReachCache) -> Reach:
    """A workload's reach: its tier, GPU types and whether spot is open to it."""
    if spec is not None:
        asked = (tier, tuple(spec.gpu.types), spec.preemptible)
    else:
        # A workload the inventory no longer lists keeps the reach of where it is placed
        # (the planner puts only preemptible work on spot).
        asked = (tier, tuple({p.pool.gpu for p, _ in placed}),
                 any(p.pool.capacity_type is CapacityType.SPOT for p, _ in placed))
    # (tier, GPU types as written, preemptible) -> (tier, sorted types, spot allowed): 100,000 workloads, a few answers
    reach = cache.get(asked)
    if reach is None:
        reach = cache[asked] = (Tier(tier).value, tuple(sorted(asked[1])), CapacityType.SPOT in
                                allowed_capacity_types(Tier(tier), asked[2], inventory.policies))
    return (*reach, dispatched)


def placed_on(on_pool: Mapping[PoolKey, list[Placement]], pools: list[PlannedPool]) -> dict[str, list[tuple[PlannedPool, int]]]:
    """Workload -> its GPUs on each of `pools`."""
    placed: dict[str, list[tuple[PlannedPool, int]]] = defaultdict(list)
    for p in pools:
        for pl in on_pool.get((p.site.name, p.pool.name), ()):
            placed[pl.workload].append((p, pl.gpus))
    return placed


def _tally_queues(inventory: Inventory, index: PlanIndex, pools: list[PlannedPool], workloads: set[str],
                  dispatched: set[str], manager: bool) -> QueueTally:
    placed = placed_on(index.on_pool, pools)
    tally = QueueTally()
    cache: ReachCache = {}
    for name in workloads:
        mine = placed.get(name, [])
        tally.add(name, reach_of(inventory, index.tier_of[name], index.known.get(name), mine,
                                 manager and name in dispatched, cache), mine)
    return tally


def assemble_queues(inventory: Inventory, pools: list[PlannedPool], tally: QueueTally, known: Mapping[str, Workload],
                    kept: Mapping[str, WorkloadQueue], fresh: Collection[str]
                    ) -> tuple[tuple[ClusterQueueConfig, ...], tuple[WorkloadQueue, ...]]:
    """The cluster's ClusterQueues and each workload's queue: reach = its GPU types and capacity types.
    `kept`: queues of workloads whose reach is the tally's (a queue's name is a function of its reach),
    but those in `fresh`."""
    queues = []
    named: dict[Reach, str] = {}
    for reach in sorted((r for r, n in tally.count.items() if n), key=lambda r: (TIER_ORDER.index(Tier(r[0])), r)):
        tier_name, types, spot, mk = reach
        allowed = allowed_capacity_types(Tier(tier_name), spot, inventory.policies)
        pooled = sorted((p for p in pools if p.pool.gpu in types and p.pool.capacity_type in allowed),
                        key=lambda p: (p.usd_per_gpu_hour, p.pool.name))
        gpus = tally.gpus.get(reach, {})
        name = named[reach] = queue_name(inventory.name, tier_name, types, spot, mk)
        queues.append(ClusterQueueConfig(name, tier_name, tuple(FlavorQuota(p.pool.name, gpus.get(p.pool.name, 0))
                                                                for p in pooled), mk))
    assigned = []
    for n in sorted(tally.reach):
        queue = kept.get(n) if n not in fresh else None
        if queue is None:
            spec, reach = known.get(n), tally.reach[n]
            queue = WorkloadQueue(n, reach[0], named[reach], spec.team if spec is not None else None)
        assigned.append(queue)
    return tuple(queues), tuple(assigned)


def gpu_pools_config(inventory: Inventory, digest: str, site_pools: list[PlannedPool],
                     node_pools: Iterable[NodePoolConfig]) -> GpuPoolsStackConfig:
    """A cloud site's GPU pools stack: `site_pools` are its planned pools, `node_pools` their node groups."""
    site = site_pools[0].site
    return GpuPoolsStackConfig(site=site.name, region=site.region or "", cluster_name=site.cluster or "",
                               inventory_name=inventory.name, plan_digest=digest, node_pools=tuple(node_pools))


def queues_config(inventory: Inventory, digest: str, cluster: str, pools: list[PlannedPool], index: PlanIndex,
                  groups: MultiKueue) -> QueuesStackConfig:
    """A cluster's queues stack: `pools` are its planned pools, `groups` the plan's MultiKueue groups."""
    return queues_of_tally(inventory, digest, cluster, pools, index.known, groups,
                           cluster_tally(inventory, cluster, pools, index, groups), {})


def cluster_tally(inventory: Inventory, cluster: str, pools: list[PlannedPool], index: PlanIndex,
                  groups: MultiKueue) -> QueueTally:
    """The cluster's workloads (placed at its sites, or mirrored into it) by reach, with their GPUs."""
    managers, mirrored, _ = groups
    dispatched = mirrored.get(cluster, set())
    workloads = {w for site in {p.site.name for p in pools} for w in index.at_site.get(site, ())} | dispatched
    return _tally_queues(inventory, index, pools, workloads, dispatched, cluster in managers)


def queues_of_tally(inventory: Inventory, digest: str, cluster: str, pools: list[PlannedPool],
                    known: Mapping[str, Workload], groups: MultiKueue, tally: QueueTally,
                    kept: Mapping[str, WorkloadQueue], fresh: Collection[str] = ()) -> QueuesStackConfig:
    cluster_queues, assigned = assemble_queues(inventory, pools, tally, known, kept, fresh)
    if cluster in groups[0]:
        cluster_queues, assigned = dispatching(inventory.name, cluster_queues, assigned, groups[2])
    cluster_queues, cohort = within_capacity(cluster_queues, pools)
    flavors = [FlavorConfig(p.pool.name, p.pool.gpu,
                            ((LABEL_GPU, p.pool.gpu), (LABEL_POOL, p.pool.name), (LABEL_SITE, p.site.name)),
                            spot=p.pool.capacity_type is CapacityType.SPOT, cohort_gpus=cohort[p.pool.name])
               for p in pools]
    if cluster in groups[0]:
        flavors.append(FlavorConfig(dispatch_flavor(inventory.name), DISPATCHED, ((LABEL_DISPATCHED, DISPATCHED),)))
    onprem = pools[0].site.kind is SiteKind.ONPREM
    return QueuesStackConfig(
        cluster_name=cluster, inventory_name=inventory.name, plan_digest=digest, cohort=inventory.name,
        flavors=tuple(flavors),
        cluster_queues=cluster_queues, workloads=assigned, multikueue_clusters=groups[0].get(cluster, ()),
        region=pools[0].site.region or "", on_premises=onprem, provisioning_request=not onprem,
        efa_device_plugin=any(uses_efa(p, known, EFA_NETWORK_CARDS) for p in pools),
    )


def by_site(planned: Iterable[PlannedPool]) -> dict[str, list[PlannedPool]]:
    grouped: dict[str, list[PlannedPool]] = defaultdict(list)
    for p in planned:
        grouped[p.site.name].append(p)
    return grouped


def by_cluster(planned: Iterable[PlannedPool], clusters: Mapping[str, str]) -> dict[str, list[PlannedPool]]:
    grouped: dict[str, list[PlannedPool]] = defaultdict(list)
    for p in planned:
        grouped[clusters[p.site.name]].append(p)
    return grouped


@dataclass(frozen=True)
class Derivation:
    """The stack configurations of a plan, with what they were derived from (StackConfigMemo keeps the
    first plan's, to derive a later plan's from them and what changed)."""

    configs: StackConfigs
    planned: dict[PoolKey, PlannedPool]
    node_pools: dict[PoolKey, NodePoolConfig]
    machines: dict[PoolKey, int]
    known: dict[str, Workload]
    dataset_gb: dict[str, float]
    index: PlanIndex
    spread: dict[str, dict[str, int]]  # burst_spread
    groups: MultiKueue
    tallies: dict[str, QueueTally]  # cluster -> its queues' tally


def derive(inventory: Inventory, plan: Plan, digest: str, cat: Catalog) -> Derivation:
    """The stack configurations of `plan`, worked out over all of it."""
    planned = planned_pools(inventory, plan, cat)
    machines = planned_machines(plan)
    known = {w.name: w for w in inventory.workloads}
    dataset_gb = {d.name: d.size_gb for d in inventory.datasets}
    node_pools = with_schedules(inventory, plan, {
        (p.site.name, p.pool.name): node_pool(p, known, dataset_gb, cat, machines.get((p.site.name, p.pool.name)))
        for p in planned})
    gpu_pools = tuple(gpu_pools_config(inventory, digest, site_pools,
                                       (node_pools[(p.site.name, p.pool.name)] for p in site_pools))
                      for _, site_pools in sorted(by_site(planned).items()))
    clusters = cluster_of(inventory)
    spread = burst_spread(plan.placements, clusters)
    groups = multikueue_groups(*spanning_of(spread), spread, spill_order(inventory, cat))
    index = PlanIndex.of(inventory, plan, known)
    queued = [*planned, *onprem_planned_pools(inventory, plan, cat)]
    tallies = {cluster: (pools, cluster_tally(inventory, cluster, pools, index, groups))
               for cluster, pools in sorted(by_cluster(queued, clusters).items())}
    queues = tuple(queues_of_tally(inventory, digest, cluster, pools, known, groups, tally, {})
                   for cluster, (pools, tally) in tallies.items())
    return Derivation(StackConfigs(gpu_pools, queues), {(p.site.name, p.pool.name): p for p in planned}, node_pools,
                      machines, known, dataset_gb, index, spread, groups,
                      {cluster: tally for cluster, (_, tally) in tallies.items()})


def stack_configs(inventory: Inventory, plan: Plan, digest: str | None = None, cat: Catalog | None = None,
                  memo: ConfigsMemo | None = None) -> StackConfigs:
    """The stack configurations that make `plan` real in the cloud; `digest` defaults to plan_digest(plan).

    `memo` (optional) derives a plan that varies the first plan it saw from that plan's configurations.
    """
    cat = cat or catalog()
    digest = digest or plan_digest(plan)
    if memo is not None:
        return memo.stack_configs(inventory, plan, digest, cat)
    return derive(inventory, plan, digest, cat).configs
