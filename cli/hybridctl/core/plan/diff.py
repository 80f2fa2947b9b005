"""What changed between two plans: workloads added, removed, moved or resized; pools resized."""

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
    used_before = {p.pool: p.used_gpus for p in before.pools}
    used_after = {p.pool: p.used_gpus for p in after.pools}
    pools = tuple(PoolChange(pool, used_before.get(pool, 0), used_after.get(pool, 0))
                  for pool in sorted(set(used_before) | set(used_after))
                  if used_before.get(pool, 0) != used_after.get(pool, 0))
    return PlanDiff(tuple(changes), pools, before.total_usd_per_month, after.total_usd_per_month)
