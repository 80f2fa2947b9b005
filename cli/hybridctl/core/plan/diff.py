"""What changed between two plans: workloads added, removed, moved, resized or re-timed; pools resized.

A workload is re-timed when its replicas stay where they are but run other hours in the week's segments (a
timed plan's deferrable work): the queues admit it at other times, and a pay-per-use pool's weekly scaling
schedule (deploy/scaling_schedule.py) follows its machines per segment, which count as a pool's resize too.

A pool counts as resized when the GPUs placed in it change or, for a pay-per-use pool, when the
machines the plan runs there change (format 2's pools[i].machines): those are what the bill and
the node groups follow, and they can change while the GPUs in use do not (always-on replicas
packed differently) or change by more than the GPUs suggest (whole machines).

A plan whose cost differs (to the cent) is changed too, even when every replica stays where it was:
a price or a pool's capacity moves the bill. The cost change is split by what moved it, pool by pool
(each pool's cost under the plan's cost model, with its price, machines, capacity and replicas
compared) and data movement, so a reviewer reads "ash-h100 +$35,040.00: price $1.85 → $3.35/GPU-h".
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from hybridctl.core.plan.model import Plan, PoolUsage
from hybridctl.core.week.machines import segment_machines


@dataclass(frozen=True)
class WorkloadChange:
    workload: str
    change: str  # added | removed | moved | resized | retimed
    before: dict[str, int]  # pool -> replicas
    after: dict[str, int]

    def describe(self) -> str:
        def show(placed: dict[str, int]) -> str:
            return ", ".join(f"{pool}×{n}" for pool, n in sorted(placed.items()))
        if not self.after:  # it lost its place: "→ nothing" read as if it were moved somewhere
            return f"unplaced (was {show(self.before)})" if self.before else "unplaced"
        if not self.before:
            return f"new: {show(self.after)}"
        if self.change == "retimed":
            return f"{show(self.after)}: other hours in the week's segments"
        return f"{show(self.before)} → {show(self.after)}"


@dataclass(frozen=True)
class PoolChange:
    pool: str
    before_gpus: int
    after_gpus: int
    pay_per_use: bool = False  # machines are bought per plan; a committed pool's are a constant
    before_machines: int = 0
    after_machines: int = 0
    schedule_changed: bool = False  # pay-per-use, timed: its machines per segment (its scaling schedule) differ

    @property
    def machines_changed(self) -> bool:
        return self.pay_per_use and self.before_machines != self.after_machines

    @property
    def resized(self) -> bool:
        """A pay-per-use pool whose machines change is resized; a committed pool keeps its capacity, and what
        changes is the GPUs its replicas hold at the peak."""
        return self.machines_changed or self.schedule_changed

    def describe(self) -> str:
        if not self.pay_per_use:  # its capacity is what the inventory says; the plan changes what it uses
            return f"peak use {self.before_gpus} → {self.after_gpus} GPUs"
        schedule = "; other machines per segment (scaling schedule)" if self.schedule_changed else ""
        return (f"{self.before_machines} → {self.after_machines} machines "
                f"({self.before_gpus} → {self.after_gpus} GPUs in use){schedule}")


def _cents(value: float) -> int:
    return round(value * 100)


def _signed(cents: int) -> str:
    return f"{'+' if cents > 0 else '−'}${abs(cents) / 100:,.2f}" if cents else "±$0.00"


@dataclass(frozen=True)
class CostCause:
    """A part of the total whose cost changed, and what moved it (a price, a machine, a replica count)."""
    what: str  # "pool ash-h100" | "data movement" | "the rest of the total"
    usd_per_month_before: float
    usd_per_month_after: float
    reasons: tuple[str, ...]

    @property
    def cents(self) -> int:
        return _cents(self.usd_per_month_after) - _cents(self.usd_per_month_before)

    def describe(self) -> str:
        return f"{self.what} {_signed(self.cents)}" + (f" ({'; '.join(self.reasons)})" if self.reasons else "")


@dataclass(frozen=True)
class PlanDiff:
    workloads: tuple[WorkloadChange, ...]
    pools: tuple[PoolChange, ...]
    usd_per_month_before: float
    usd_per_month_after: float
    causes: tuple[CostCause, ...] = ()  # the cost change split by what moved it (empty when the cost is the same)

    @property
    def cost_changed(self) -> bool:
        return _cents(self.usd_per_month_before) != _cents(self.usd_per_month_after)

    @property
    def has_changes(self) -> bool:
        """Placements, pools or cost differ: a cost-only change (a price) is a change for review too."""
        return bool(self.workloads or self.pools) or self.cost_changed

    def cost_line(self) -> str:
        """The cost change first, then what moved it: "+$35,040.00/month ($149,536.83 → $184,576.83):
        pool ash-h100 +$35,040.00 (price $1.85 → $3.35/GPU-h)"."""
        cents = _cents(self.usd_per_month_after) - _cents(self.usd_per_month_before)
        line = (f"{_signed(cents)}/month (${self.usd_per_month_before:,.2f} → "
                f"${self.usd_per_month_after:,.2f})")
        return line + (": " + "; ".join(c.describe() for c in self.causes) if self.causes else "")

    def count(self, change: str) -> int:
        return sum(1 for w in self.workloads if w.change == change)


def _hours_by_workload(plan: Plan) -> dict[str, dict[str, tuple[float, ...]]]:
    """workload -> demand@pool -> hours each replica runs in each segment (empty in an untimed plan)."""
    hours: dict[str, dict[str, tuple[float, ...]]] = defaultdict(dict)
    for p in plan.placements:
        if p.segment_hours:
            hours[p.workload][f"{p.demand}@{p.pool}"] = p.segment_hours
    return hours


def _machines_per_segment(plan: Plan) -> dict[str, tuple[tuple[int, int], ...]]:
    """Pay-per-use pool -> (shared, running own) machines in each segment of a timed plan (week/machines.py)."""
    if not plan.segments:
        return {}
    tallies = segment_machines(plan.placements, [s.hours for s in plan.segments],
                               {u.pool: u.gpus_per_node for u in plan.pools if not u.committed})
    return {pool: tuple(zip(t.shared, t.own_running, strict=True)) for pool, t in tallies.items()}


def _by_workload(plan: Plan) -> dict[str, dict[str, int]]:
    placed: dict[str, dict[str, int]] = defaultdict(dict)
    for p in plan.placements:
        placed[p.workload][p.pool] = placed[p.workload].get(p.pool, 0) + p.replicas
    return placed


def diff_plans(before: Plan, after: Plan) -> PlanDiff:
    old, new = _by_workload(before), _by_workload(after)
    old_hours, new_hours = _hours_by_workload(before), _hours_by_workload(after)
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
        elif before.segments == after.segments and old_hours.get(workload) != new_hours.get(workload):
            changes.append(WorkloadChange(workload, "retimed", a, b))
    return PlanDiff(tuple(changes), _pool_changes(before, after), before.total_usd_per_month,
                    after.total_usd_per_month, cost_causes(before, after))


def _pool_cost(plan: Plan, pool: PoolUsage) -> float:
    """A pool's part of the plan's total under its cost model (pricing/totals.py adds these up)."""
    return pool.amortized_usd_per_month if plan.cost_model == "amortized" else pool.usd_per_month


def _replicas_on(plan: Plan, pool: str) -> dict[str, tuple[int, float]]:
    """workload -> (replicas, replica-hours per month) in `pool`."""
    found: dict[str, tuple[int, float]] = {}
    for p in plan.placements:
        if p.pool == pool:
            replicas, hours = found.get(p.workload, (0, 0.0))
            found[p.workload] = (replicas + p.replicas, hours + p.replicas * p.hours_per_month)
    return found


def _pool_reasons(before: Plan, after: Plan, a: PoolUsage | None, b: PoolUsage | None) -> tuple[str, ...]:
    if a is None:
        return ("new in the plan",)
    if b is None:
        return ("no longer in the plan",)
    reasons: list[str] = []
    if a.usd_per_gpu_hour != b.usd_per_gpu_hour:
        digits = 2 if _cents(a.usd_per_gpu_hour) != _cents(b.usd_per_gpu_hour) else 4  # never "$1.85 → $1.85"
        reasons.append(f"price ${a.usd_per_gpu_hour:,.{digits}f} → ${b.usd_per_gpu_hour:,.{digits}f}/GPU-h")
    if a.capacity_gpus != b.capacity_gpus and (a.committed or b.committed):
        reasons.append(f"capacity {a.capacity_gpus} → {b.capacity_gpus} GPUs")
    if a.committed != b.committed:
        reasons.append(f"{'committed' if a.committed else 'pay-per-use'} → "
                       f"{'committed' if b.committed else 'pay-per-use'}")
    if not (a.committed and b.committed) and a.machines != b.machines:
        reasons.append(f"{a.machines} → {b.machines} machines of {b.gpus_per_node} GPUs")
    old, new = _replicas_on(before, a.pool), _replicas_on(after, b.pool)
    for workload in sorted(set(old) | set(new)):
        (r0, h0), (r1, h1) = old.get(workload, (0, 0.0)), new.get(workload, (0, 0.0))
        if r0 != r1:
            reasons.append(f"{workload} replicas {r0} → {r1}")
        elif round(h0, 6) != round(h1, 6):
            reasons.append(f"{workload} hours {h0:,.6g} → {h1:,.6g}/month")
    return tuple(reasons) or ("the replicas are packed onto machines differently",)


def cost_causes(before: Plan, after: Plan) -> tuple[CostCause, ...]:
    """The cost change split by pool and data movement, each with what moved it; what no part explains (an
    old plan file's pools without costs) is named as the rest. Empty when the totals agree to the cent."""
    if _cents(before.total_usd_per_month) == _cents(after.total_usd_per_month):
        return ()
    old = {p.pool: p for p in before.pools}
    new = {p.pool: p for p in after.pools}
    causes: list[CostCause] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        cost_a = _pool_cost(before, a) if a is not None else 0.0
        cost_b = _pool_cost(after, b) if b is not None else 0.0
        if _cents(cost_a) != _cents(cost_b):
            causes.append(CostCause(f"pool {name}", cost_a, cost_b, _pool_reasons(before, after, a, b)))
    if _cents(before.data_usd_per_month) != _cents(after.data_usd_per_month):
        causes.append(CostCause("data movement", before.data_usd_per_month, after.data_usd_per_month, ()))
    rest = (_cents(after.total_usd_per_month) - _cents(before.total_usd_per_month)) - sum(c.cents for c in causes)
    if rest:
        causes.append(CostCause("the rest of the total", 0.0, rest / 100, ("not carried by a pool's cost",)))
    return tuple(causes)


def _pool_changes(before: Plan, after: Plan) -> tuple[PoolChange, ...]:
    old = {p.pool: p for p in before.pools}
    new = {p.pool: p for p in after.pools}
    # a week cut otherwise is compared by its machines and GPUs alone
    weekly = (_machines_per_segment(before), _machines_per_segment(after)) if before.segments == after.segments \
        else ({}, {})
    changes: list[PoolChange] = []
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        # a pool is pay-per-use if either plan says so (a pool that left the inventory keeps its kind)
        pay_per_use = any(p is not None and not p.committed for p in (a, b))
        change = PoolChange(name, a.used_gpus if a else 0, b.used_gpus if b else 0, pay_per_use,
                            a.machines if a and pay_per_use else 0, b.machines if b and pay_per_use else 0,
                            pay_per_use and weekly[0].get(name) != weekly[1].get(name))
        if change.before_gpus != change.after_gpus or change.machines_changed or change.schedule_changed:
            changes.append(change)
    return tuple(changes)
