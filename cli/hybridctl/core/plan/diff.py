"""What changed between two plans: workloads added, removed, moved or resized; pools resized.

A pool counts as resized when the GPUs placed in it change or, for a pay-per-use pool, when the
machines the plan runs there change (format 2's pools[i].machines): those are what the bill and
the node groups follow, and they can change while the GPUs in use do not (always-on replicas
packed differently) or change by more than the GPUs suggest (whole machines).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hybridctl.core.plan.model import Plan


@dataclass(frozen=True)
class WorkloadChange:
    workload: str
    change: str  # added | removed | moved | resized
    before: dict[str, int]  # pool -> replicas
    after: dict[str, int]

    def describe(self) -> str:
        def show(placed: dict[str, int]) -> str:
            return ", ".join(f"{pool}×{n}" for pool, n in sorted(placed.items())) or "nothing"
        return f"{show(self.before)} → {show(self.after)}"


@dataclass(frozen=True)
class PoolChange:
    pool: str
    before_gpus: int
    after_gpus: int
    pay_per_use: bool = False  # machines are bought per plan; a committed pool's are a constant
    before_machines: int = 0
    after_machines: int = 0

    @property
    def machines_changed(self) -> bool:
        return self.pay_per_use and self.before_machines != self.after_machines

    def describe(self) -> str:
        gpus = f"{self.before_gpus} → {self.after_gpus} GPUs"
        if not self.pay_per_use:
            return gpus
        return f"{gpus}, {self.before_machines} → {self.after_machines} machines"


@dataclass(frozen=True)
class PlanDiff:
    workloads: tuple[WorkloadChange, ...]
    pools: tuple[PoolChange, ...]
    usd_per_month_before: float
    usd_per_month_after: float

    @property
    def has_changes(self) -> bool:
        return bool(self.workloads or self.pools)

    def count(self, change: str) -> int:
        return sum(1 for w in self.workloads if w.change == change)


def _by_workload(plan: Plan) -> dict[str, dict[str, int]]:
    placed: dict[str, dict[str, int]] = defaultdict(dict)
    for p in plan.placements:
        placed[p.workload][p.pool] = placed[p.workload].get(p.pool, 0) + p.replicas
    return placed


def diff_plans(before: Plan, after: Plan) -> PlanDiff:
    old, new = _by_workload(before), _by_workload(after)
    known_before = set(before.tiers) | set(old)
    known_after = set(after.tiers) | set(new)
    changes: list[WorkloadChange] = []
    for workload in sorted(known_before | known_after):
        a, b = old.get(workload, {}), new.get(workload, {})
        if workload not in known_before:
            changes.append(WorkloadChange(workload, "added", a, b))
        elif workload not in known_after:
            changes.append(WorkloadChange(workload, "removed", a, b))
        elif a != b:
            kind = "resized" if set(a) == set(b) else "moved"
            changes.append(WorkloadChange(workload, kind, a, b))
    return PlanDiff(tuple(changes), _pool_changes(before, after), before.total_usd_per_month,
                    after.total_usd_per_month)


def _pool_changes(before: Plan, after: Plan) -> tuple[PoolChange, ...]:
    old = {p.pool: p for p in before.pools}
    new = {p.pool: p for p in after.pools}
    changes: list[PoolChange] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        # a pool is pay-per-use if either plan says so (a pool that left the inventory keeps its kind)
        pay_per_use = any(p is not None and not p.committed for p in (a, b))
        change = PoolChange(name, a.used_gpus if a else 0, b.used_gpus if b else 0, pay_per_use,
                            a.machines if a and pay_per_use else 0, b.machines if b and pay_per_use else 0)
        if change.before_gpus != change.after_gpus or change.machines_changed:
            changes.append(change)
    return tuple(changes)
