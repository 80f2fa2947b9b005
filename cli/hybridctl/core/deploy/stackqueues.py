"""What a cluster's queues add to the plan's split (stackconfig.queues_of_tally): a MultiKueue
manager's dispatching queues and its own share, quotas the pools' machines can hold (a time-shared pool's
tiers share it through the cohort), the GPUs the cohort holds itself, and whether the cluster needs the
EFA device plugin."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
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


def capacity_gpus(p: PlannedPool) -> int:
    """The GPUs a pool's machines hold at once: an on-prem pool's, a reserved cloud pool's, a pay-per-use
    pool's quota in whole machines (its node group's max)."""
    if p.site.kind is SiteKind.ONPREM:
        return p.pool.gpus or 0
    gpn = p.gpus_per_node or 1
    return (p.pool.max_gpus or 0) // gpn * gpn


def apportion(room: int, wants: Sequence[int]) -> tuple[int, ...]:
    """`wants` as they are when they fit in `room`; else shares of `room` in proportion to them (largest
    remainder, ties to the first), adding up to `room`. E.g. 8 GPUs for 16 and 8: 5 and 3."""
    total = sum(wants)
    if total <= room:
        return tuple(wants)
    exact = [room * w / total for w in wants]
    shares = [int(e) for e in exact]
    for i in sorted(range(len(wants)), key=lambda i: (-(exact[i] - shares[i]), i))[:room - sum(shares)]:
        shares[i] += 1
    return tuple(shares)


def within_capacity(queues: tuple[ClusterQueueConfig, ...], pools: Sequence[PlannedPool]
                    ) -> tuple[tuple[ClusterQueueConfig, ...], dict[str, int]]:
    """Quotas the pools' machines can hold, and the GPUs the cohort holds itself on each flavor.

    The plan time-shares a pool between tiers (notebooks by day, training by night): its queues' planned
    GPUs add up to more than the pool has. Kueue sees no time, so, per flavor, the nominal quotas of the
    cohort add up to at most the pool's GPUs: fixed keeps its planned GPUs (always on, neither lent nor
    borrowed); burst queues share what is left, each its planned GPUs or, when they do not fit, a share in
    proportion to them (a burst run borrows the rest of its machines from idle quota when its window opens,
    preempting opportunistic work); the cohort holds what is left after them, up to the opportunistic
    tier's planned GPUs and the GPUs paid whatever runs (idle_gpus): opportunistic holds no quota of its
    own and only borrows. Where no queue of the cluster may borrow, those paid GPUs go to the first fixed
    queue reaching the flavor (a fixed queue neither lends nor borrows). The MultiKueue dispatch flavor
    selects no node: not capped."""
    out = list(queues)
    cohort: dict[str, int] = {}
    for p in pools:
        flavor = p.pool.name
        on = [(i, f) for i, q in enumerate(out) if not q.dispatched for f in q.flavors if f.flavor == flavor]
        fixed = sum(f.gpus for i, f in on if out[i].tier == Tier.FIXED.value)
        burst = [(i, f) for i, f in on if out[i].tier == Tier.BURST.value]
        shares = apportion(max(0, capacity_gpus(p) - fixed), [f.gpus for _, f in burst])
        for (i, f), share in zip(burst, shares, strict=True):
            out[i] = replace(out[i], flavors=tuple(replace(g, gpus=share) if g is f else g for g in out[i].flavors))
        opportunistic = sum(f.gpus for i, f in on if out[i].tier == Tier.OPPORTUNISTIC.value)
        left = capacity_gpus(p) - fixed - sum(shares)
        cohort[flavor] = max(0, min(left, idle_gpus(p) + opportunistic))
        if cohort[flavor] and len(burst) + sum(out[i].tier == Tier.OPPORTUNISTIC.value for i, _ in on) == 0 and on:
            # no queue here borrows: the paid GPUs of the fixed tier's machines (a p5 kept on for 2 GPUs of a
            # service) are its first queue's headroom (a rolling update's surge pods), rather than no one's
            i, f = on[0]
            out[i] = replace(out[i], flavors=tuple(replace(g, gpus=g.gpus + cohort[flavor]) if g is f else g
                                                   for g in out[i].flavors))
            cohort[flavor] = 0
    return tuple(out), cohort


def uses_efa(p: PlannedPool, known: Mapping[str, Workload], efa_types: Collection[str]) -> bool:
    """Whether the pool's node group gets EFA interfaces: stackconfig.node_pool's condition (an EFA type,
    `efa_types`, and a workload whose replicas span machines)."""
    if p.site.kind is not SiteKind.CLOUD or (p.pool.instance_type or "") not in efa_types:
        return False
    return any(w.multi_node and w.gpu.count > p.gpus_per_node for n in p.workloads if (w := known.get(n)) is not None)
