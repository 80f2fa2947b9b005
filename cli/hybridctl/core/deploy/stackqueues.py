"""What a cluster's queues add to the plan's split (stackconfig.queues_of_tally): a MultiKueue
manager's dispatching queues and its own share, the GPUs paid whatever runs that no queue holds
(lent through the cohort), and whether the cluster needs the EFA device plugin."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

from hybridctl.core.deploy.stackplanned import PlannedPool
from hybridctl.core.deploy.stackvalues import ClusterQueueConfig, FlavorQuota, WorkloadQueue
from hybridctl.core.inventory.models import CapacityType, SiteKind, Workload
from hybridctl.core.placement.tiers import Tier

# The manager's dispatching queues hold quota on a flavor of their own: Kueue admits a dispatched workload
# on the manager's quota, but the job never runs there (MultiKueue keeps it suspended), so the flavor
# selects no node of the manager.
LABEL_DISPATCHED = "hybridctl.io/dispatched"
DISPATCHED = "multikueue"


def dispatch_flavor(cohort: str) -> str:
    return f"{cohort}-{DISPATCHED}"


def dispatching(cohort: str, queues: tuple[ClusterQueueConfig, ...], assigned: tuple[WorkloadQueue, ...],
                worker_gpus: Mapping[str, int]) -> tuple[tuple[ClusterQueueConfig, ...], tuple[WorkloadQueue, ...]]:
    """A MultiKueue manager's queues: each dispatching queue's quota is its workloads' GPUs on the workers
    (never the manager's own share, which Kueue does not dispatch to it), on the dispatch flavor; the
    manager's own share of the dispatched work goes to the local queue of the same reach, which its
    workloads reach through LocalQueue `<workload>-local`."""
    by_name = {q.name: q for q in queues}
    own: dict[str, tuple[FlavorQuota, ...]] = {}  # local queue -> the manager's share on its flavors
    for q in queues:
        if q.dispatched and any(f.gpus for f in q.flavors):
            own[q.name.removesuffix("-mk")] = q.flavors
    out: list[ClusterQueueConfig] = []
    for q in queues:
        local = q.name.removesuffix("-mk")
        if q.dispatched:
            total = sum(worker_gpus.get(w.name, 0) for w in assigned if w.cluster_queue == q.name)
            out.append(ClusterQueueConfig(q.name, q.tier, (FlavorQuota(dispatch_flavor(cohort), total),), True))
            if local in own and local not in by_name:
                out.append(ClusterQueueConfig(local, q.tier, own[local]))
        elif q.name in own:
            extra = {f.flavor: f.gpus for f in own[q.name]}
            out.append(replace(q, flavors=tuple(FlavorQuota(f.flavor, f.gpus + extra.get(f.flavor, 0)) for f in q.flavors)))
        else:
            out.append(q)
    mk = {q.name for q in queues if q.dispatched}
    return tuple(out), tuple(replace(w, local_cluster_queue=local)
                             if w.cluster_queue in mk and (local := w.cluster_queue.removesuffix("-mk")) in own else w
                             for w in assigned)


def idle_gpus(p: PlannedPool) -> int:
    """GPUs of a pool paid whatever runs that no queue holds as quota: the always-on machines of a
    pay-per-use pool (those of the fixed tier) beyond the planned GPUs, a reserved cloud pool's reserved
    GPUs, an on-prem pool's GPUs. E.g. one p5 kept on for 2 GPUs of fixed work: 6."""
    planned = sum(p.gpus_by_tier.values())
    if p.site.kind is SiteKind.ONPREM:
        paid = p.pool.gpus or 0
    elif p.pool.capacity_type is CapacityType.RESERVED:
        paid = p.pool.max_gpus or 0
    else:
        gpn = p.gpus_per_node or 1
        paid = -(-p.gpus_by_tier.get(Tier.FIXED, 0) // gpn) * gpn  # the fixed tier's whole machines
    return max(0, paid - planned)


def uses_efa(p: PlannedPool, known: Mapping[str, Workload], efa_types: Collection[str]) -> bool:
    """Whether the pool's node group gets EFA interfaces: stackconfig.node_pool's condition (an EFA type,
    `efa_types`, and a workload whose replicas span machines)."""
    if p.site.kind is not SiteKind.CLOUD or (p.pool.instance_type or "") not in efa_types:
        return False
    return any(w.multi_node and w.gpu.count > p.gpus_per_node for n in p.workloads if (w := known.get(n)) is not None)
