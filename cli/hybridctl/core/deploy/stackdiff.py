"""The cloud changes between two plans' stack configurations, as Pulumi would carry them out.

Each change says how the stack makes it (create, resize, update, roll, replace, delete, release)
so that `plan` and `apply` show a replace as a replace: EKS cannot change a node group's instance
types, capacity type or subnets in place, and Kueue's CRD makes `LocalQueue.spec.clusterQueue`
immutable, so the stacks replace those (delete, then create). A *roll* is what EKS does to a node
group whose launch template gets a new version (its root disk, EFA interfaces, reservation, local
NVMe): it replaces every node, `maxUnavailable` (1) at a time, draining each. Labels, taints and
sizes change no node (UpdateNodegroupConfig). A change is destructive when running work can be
lost: a roll, replace or delete of a node group that has machines, of a LocalQueue (its pending
jobs), or of a stack; those with machines need an approval of their own, like machine removal.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from hybridctl.core.deploy.stackvalues import (
    PROJECT_GPU_POOLS,
    PROJECT_QUEUES,
    NodePoolConfig,
    QueuesStackConfig,
    ScalingAction,
    StackConfigs,
)


@dataclass(frozen=True)
class CloudChange:
    project: str
    stack: str
    # stack | node-group | scaling-schedule | resource-flavor | cluster-queue | local-queue | namespace | multikueue
    kind: str
    name: str
    action: str  # create | resize | update | roll | replace | delete | release
    detail: str = ""
    # Needs an explicit approval beyond --auto-approve: removes machines that may be running work.
    removes_machines: bool = False

    @property
    def destructive(self) -> bool:
        return self.action in ("roll", "replace", "delete")


_KIND_ORDER = ("stack", "node-group", "scaling-schedule", "resource-flavor", "cluster-queue", "namespace", "local-queue", "multikueue")
# EKS launches reserved capacity as ON_DEMAND (stacks/aws-gpu-pools): on_demand <-> reserved is no replace.
_EKS_CAPACITY = MappingProxyType({"on_demand": "ON_DEMAND", "reserved": "ON_DEMAND", "spot": "SPOT"})


def _eks_capacity(pool: NodePoolConfig) -> str:
    """The node group's EKS capacity type (stacks/aws-gpu-pools): a Capacity Block is a type of its own."""
    return "CAPACITY_BLOCK" if pool.capacity_block else _EKS_CAPACITY[pool.capacity_type]


def _capacity(pool: NodePoolConfig) -> str:
    return f"{'/'.join(pool.types)} {pool.capacity_type}" + (" (capacity block)" if pool.capacity_block else "")


def _arrow(label: str, old: object, new: object) -> str:
    return f"{label} {old}" if old == new else f"{label} {old}→{new}"


def _node_group_change(project: str, stack: str, name: str, a: NodePoolConfig | None,
                       b: NodePoolConfig | None) -> CloudChange | None:
    if a is None and b is not None:
        return CloudChange(project, stack, "node-group", name, "create",
                           f"{b.instance_type} min {b.min_size}, desired {b.desired_size}, max {b.max_size}")
    if b is None and a is not None:
        return CloudChange(project, stack, "node-group", name, "delete", f"{a.instance_type} ×{a.desired_size}",
                           removes_machines=a.desired_size > 0)
    assert a is not None and b is not None
    if (a.types, _eks_capacity(a)) != (b.types, _eks_capacity(b)):
        return CloudChange(project, stack, "node-group", name, "replace", f"{_capacity(a)}→{_capacity(b)}",
                           removes_machines=a.desired_size > 0)
    if a.availability_zone != b.availability_zone:
        # Other subnets: the provider replaces the node group (subnet_ids cannot change in place).
        return CloudChange(project, stack, "node-group", name, "replace",
                           _arrow("zone", a.availability_zone or "any", b.availability_zone or "any"),
                           removes_machines=a.desired_size > 0)
    rolled = [_arrow(label, x, y) for label, x, y in (
        ("disk GiB", a.disk_gib, b.disk_gib), ("EFA interfaces", a.efa_interfaces, b.efa_interfaces),
        ("reservation", a.reservation_id, b.reservation_id), ("local NVMe", a.local_nvme, b.local_nvme)) if x != y]
    sizes = ", ".join(_arrow(label, x, y) for label, x, y in (
        ("min", a.min_size, b.min_size), ("desired", a.desired_size, b.desired_size), ("max", a.max_size, b.max_size)))
    resized = "; " + sizes if (a.min_size, a.desired_size, a.max_size) != (b.min_size, b.desired_size, b.max_size) else ""
    if rolled:
        # A new launch template version: EKS replaces every node, one unavailable at a time (updateConfig).
        return CloudChange(project, stack, "node-group", name, "roll",
                           "; ".join(rolled) + " (EKS replaces every node, one at a time)" + resized,
                           removes_machines=a.desired_size > 0)
    if a.capacity_type != b.capacity_type:
        # on_demand <-> reserved: the capacity-type label only, applied to the nodes in place.
        return CloudChange(project, stack, "node-group", name, "update",
                           _arrow("capacity", a.capacity_type, b.capacity_type) + resized)
    if (a.min_size, a.desired_size, a.max_size) != (b.min_size, b.desired_size, b.max_size):
        detail = sizes
        if a.desired_size != b.desired_size:
            detail += " (a live group keeps its own desired size, moved within min and max)"
        return CloudChange(project, stack, "node-group", name, "resize", detail)
    return None


_DAY_NAMES = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")
_SHOWN_RESIZES = 6  # a week of windows can hold dozens: the first few, then how many more


def _when(minute: int) -> str:
    day, rest = divmod(minute, 24 * 60)
    return f"{_DAY_NAMES[day]} {rest // 60:02d}:{rest % 60:02d}"


def _wall(a: ScalingAction) -> int:
    """The action's minute of the week on its own clock."""
    return a.minute if a.wall_minute is None else a.wall_minute


def _written(actions: dict[int, ScalingAction]) -> dict[int, tuple[str, int, int, int]]:
    """What of each action is the stack's (its zone and sizes at its wall minute), not the UTC minute of the
    plan's week it came from."""
    return {m: (a.zone, a.min_size, a.desired_size, a.max_size) for m, a in actions.items()}


def _resize(a: ScalingAction | None, b: ScalingAction | None) -> str:
    """One weekly resize that changes: `to 2` (new), `gone`, or its sizes `desired 2→3` (min, max likewise)."""
    if b is None:
        return "gone"
    if a is None:
        return f"to {b.desired_size}" + (f" (min {b.min_size})" if b.min_size != b.desired_size else "")
    return ", ".join(f"{label} {x}→{y}" for label, x, y in (
        ("desired", a.desired_size, b.desired_size), ("min", a.min_size, b.min_size), ("max", a.max_size, b.max_size))
        if x != y)


def _schedule_change(project: str, stack: str, name: str, a: NodePoolConfig | None,
                     b: NodePoolConfig | None) -> CloudChange | None:
    """The weekly resizes of a node group that stays or is created (scaling_schedule.py); a deleted group's
    go with it. Times on the actions' own clock (their zone's wall clock, UTC without windows), each with the
    machines expected from then on: a winter and a summer plan of the same windows resize at the same times."""
    old = {_wall(s): s for s in a.schedule} if a is not None else {}
    new = {_wall(s): s for s in b.schedule} if b is not None else {}
    if b is None or _written(old) == _written(new):
        return None
    if not new:
        # an update, not a delete: no machine stops (the group keeps its live size, within min and max)
        return CloudChange(project, stack, "scaling-schedule", name, "update",
                           "no weekly resizes: the group keeps its live size, within min and max")
    before, after = _written(old), _written(new)
    moved = [f"{_when(m)} {_resize(old.get(m), new.get(m))}" for m in sorted(old.keys() | new.keys())
             if before.get(m) != after.get(m)]
    more = f" (+{len(moved) - _SHOWN_RESIZES} more)" if len(moved) > _SHOWN_RESIZES else ""
    zones = sorted({s.zone for s in new.values()})
    return CloudChange(project, stack, "scaling-schedule", name, "create" if not old else "update",
                       f"{len(new)} weekly resizes ({', '.join(zones)}): " + ", ".join(moved[:_SHOWN_RESIZES]) + more)


def _node_group_changes(project: str, stack: str, old: dict[str, NodePoolConfig], new: dict[str, NodePoolConfig]) -> list[CloudChange]:
    names = sorted(old.keys() | new.keys())
    found = [_node_group_change(project, stack, n, old.get(n), new.get(n)) for n in names]
    found += [_schedule_change(project, stack, n, old.get(n), new.get(n)) for n in names]
    return [c for c in found if c is not None]


def _cluster_queue_changes(stack: str, old: QueuesStackConfig | None, new: QueuesStackConfig | None) -> list[CloudChange]:
    p = PROJECT_QUEUES
    before = {q.name: q for q in old.cluster_queues} if old else {}
    after = {q.name: q for q in new.cluster_queues} if new else {}
    changes = []
    for name in sorted(before.keys() | after.keys()):
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            changes.append(CloudChange(p, stack, "cluster-queue", name, "create" if a is None else "delete"))
            continue
        qa, qb = {f.flavor: f.gpus for f in a.flavors}, {f.flavor: f.gpus for f in b.flavors}
        if list(qa) != list(qb):
            changes.append(CloudChange(p, stack, "cluster-queue", name, "update",
                                       ("flavors " + ", ".join(qb)) if qb else "no flavors"))
        resized = [f"{f} {qa.get(f, 0)}→{qb.get(f, 0)} GPUs" for f in sorted(qa.keys() | qb.keys())
                   if qa.get(f, 0) != qb.get(f, 0)]
        if resized:
            changes.append(CloudChange(p, stack, "cluster-queue", name, "resize", "; ".join(resized)))
    return changes


def _queue_changes(stack: str, old: QueuesStackConfig | None, new: QueuesStackConfig | None) -> list[CloudChange]:
    p = PROJECT_QUEUES
    old_flavors = {f.name for f in old.flavors} if old else set()
    new_flavors = {f.name for f in new.flavors} if new else set()
    changes = [CloudChange(p, stack, "resource-flavor", f, "create") for f in sorted(new_flavors - old_flavors)]
    changes += [CloudChange(p, stack, "resource-flavor", f, "delete") for f in sorted(old_flavors - new_flavors)]
    changes += _cluster_queue_changes(stack, old, new)
    old_wl = {w.name: w for w in old.workloads} if old else {}
    new_wl = {w.name: w for w in new.workloads} if new else {}
    for w in sorted(old_wl.keys() | new_wl.keys()):
        a, b = old_wl.get(w), new_wl.get(w)
        if a is None and b is not None:
            changes.append(CloudChange(p, stack, "namespace", w, "create", f"tier {b.tier}"))
            changes.append(CloudChange(p, stack, "local-queue", w, "create", f"queue {b.cluster_queue}"))
        elif b is None and a is not None:
            # Namespaces are retained on delete: their pods, secrets and volumes outlive the plan.
            changes.append(CloudChange(p, stack, "namespace", w, "release", "kept in the cluster, no longer managed"))
            changes.append(CloudChange(p, stack, "local-queue", w, "delete", "its pending jobs are no longer admitted"))
        elif a is not None and b is not None:
            if a.tier != b.tier:
                changes.append(CloudChange(p, stack, "namespace", w, "update", _arrow("tier", a.tier, b.tier)))
            if a.cluster_queue != b.cluster_queue:
                # spec.clusterQueue is immutable (`self == oldSelf` in Kueue's CRD): delete, then create.
                changes.append(CloudChange(p, stack, "local-queue", w, "replace",
                                           f"queue {a.cluster_queue}→{b.cluster_queue}"))
    old_mk, new_mk = (old.multikueue_clusters if old else ()), (new.multikueue_clusters if new else ())
    if old_mk != new_mk:
        action = "create" if not old_mk else "delete" if not new_mk else "update"
        changes.append(CloudChange(p, stack, "multikueue", "burst", action, "workers " + ", ".join(new_mk or old_mk)))
    return changes


def diff_stack_configs(before: StackConfigs | None, after: StackConfigs) -> tuple[CloudChange, ...]:
    """What applying `after` changes in the cloud, per stack, compared with `before` (None: nothing yet).

    The plan digest (a tag and annotation on everything) is left out: it changes with every plan.
    """
    changes: list[CloudChange] = []
    old_pools = {s.stack_name: s for s in before.gpu_pools} if before else {}
    new_pools = {s.stack_name: s for s in after.gpu_pools}
    for stack in sorted(old_pools.keys() | new_pools.keys()):
        a, b = old_pools.get(stack), new_pools.get(stack)
        if a is None or b is None:
            changes.append(CloudChange(PROJECT_GPU_POOLS, stack, "stack", stack, "create" if a is None else "delete",
                                       removes_machines=b is None and a is not None and any(p.desired_size for p in a.node_pools)))
        changes += _node_group_changes(PROJECT_GPU_POOLS, stack, {p.name: p for p in a.node_pools} if a else {},
                                       {p.name: p for p in b.node_pools} if b else {})
    old_queues = {s.stack_name: s for s in before.queues} if before else {}
    new_queues = {s.stack_name: s for s in after.queues}
    for stack in sorted(old_queues.keys() | new_queues.keys()):
        qa, qb = old_queues.get(stack), new_queues.get(stack)
        if qa is None or qb is None:
            changes.append(CloudChange(PROJECT_QUEUES, stack, "stack", stack, "create" if qa is None else "delete"))
        changes += _queue_changes(stack, qa, qb)
    # Stable: within a kind, the order built above (names sorted).
    rank = {kind: i for i, kind in enumerate(_KIND_ORDER)}
    return tuple(sorted(changes, key=lambda c: (c.project, c.stack, rank[c.kind])))


CONFIG_DIFF = "config-diff"
PULUMI_PREVIEW = "pulumi-preview"


@dataclass(frozen=True)
class CloudChanges:
    source: str  # config-diff | pulumi-preview
    # the stack diff's own changes, as they are (a 100,000-workload fleet's first plan: 200,000 rows)
    rows: tuple[CloudChange, ...]

    def to_dict(self) -> dict[str, object]:
        return {"source": self.source, "changes": [row.__dict__ for row in self.rows]}

    @property
    def destructive(self) -> tuple[CloudChange, ...]:
        return tuple(r for r in self.rows if r.destructive)
