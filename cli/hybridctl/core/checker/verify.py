"""Verifying plans before anything uses them, in the two places a plan comes from.

- Made by the planner: every plan and replan the CLI makes goes through `verified`. A plan that
  breaks a rule of the spec is a bug in the planner, not a user mistake, so it is raised as
  PlanCheckFailed, which the CLI reports as an internal error (exit 70) naming the broken rule,
  instead of showing, saving or applying the plan.
- Read from a plan file: a plan file is untrusted, since anyone who can write it can change a
  number. Its content digest catches an edit made by hand; `plan_violations` catches a plan
  that breaks the inventory's rules however it came about — the independent checker's every
  rule, plus what the checker takes for granted in a plan the planner made: sane numbers, and
  pool and cost summaries that agree with the placements they summarise. `plan_file_violations`
  is the part of that which needs no inventory (numbers, demands, no fallback shapes, the plan's
  own arithmetic at its pools' prices): what `show`, `cost` and `report` check.

Revision 4's opportunistic rule is checked against P, the plan of the inventory without its opportunistic
workloads (`opportunistic_violations`, checker/priority.py's alone_violations): a second plan, so only where
the plan places opportunistic work, and only for plans the planner makes of an inventory as it is (`plan`,
and every operation that plans through operations/week.py). A failover plan is made against lost capacity,
which an inventory does not say; its stages are the same code (solver/priority.py).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from hybridctl.core.checker.check import PlacementMemo, check_plan
from hybridctl.core.checker.priority import alone_violations
from hybridctl.core.checker.rules import OPPORTUNISTIC, PairRules
from hybridctl.core.inventory.models import (
    HOURS_PER_MONTH_MAX,
    MAX_GPUS_PER_NODE,
    MAX_GPUS_PER_REPLICA,
    MAX_POOL_GPUS,
    MAX_REPLICAS,
    MAX_USD_PER_GPU_HOUR,
    MAX_USD_PER_MONTH,
    Inventory,
)
from hybridctl.core.inventory.schedule import HOURS_PER_MONTH, HOURS_PER_WEEK
from hybridctl.core.plan.model import Plan, PoolUsage
from hybridctl.core.week.usage import MachineWeek, machine_weeks, peak_gpus

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo
    from hybridctl.core.placement.planner import PlanOptions

_TOLERANCE_USD = 0.05
_TIERS = frozenset({"fixed", "burst", "opportunistic"})
_SHOWN = 10  # violations listed in the message; the rest are counted


class PlanCheckFailed(Exception):
    """The independent checker rejected a plan the planner produced: a bug in hybridctl."""

    def __init__(self, what: str, violations: list[str]) -> None:
        self.what = what
        self.violations = violations
        listed = "; ".join(violations[:_SHOWN])
        more = f" (and {len(violations) - _SHOWN} more)" if len(violations) > _SHOWN else ""
        super().__init__(f"the {what} breaks the spec's placement rules: {listed}{more}")


def verified(inventory: Inventory, plan: Plan, what: str = "plan", memo: PlacementMemo | None = None,
             run_memo: RunMemo | None = None) -> Plan:
    """`plan` itself when the checker finds nothing wrong with it; PlanCheckFailed otherwise."""
    return accepted(plan, check_plan(inventory, plan, memo, run_memo), what)


def planner_violations(inventory: Inventory, plan: Plan, options: PlanOptions, previous: Plan | None = None) -> list[str]:
    """check_plan's violations of a plan the planner made of `inventory` with `options` (and `previous`), and
    revision 4's opportunistic rule against P planned the same way."""
    return [*check_plan(inventory, plan), *opportunistic_violations(inventory, plan, options, previous)]


def opportunistic_violations(inventory: Inventory, plan: Plan, options: PlanOptions,
                             previous: Plan | None = None) -> list[str]:
    """The plan against P, the inventory without its opportunistic workloads planned with the same options;
    nothing to compare (and no plan made) where the plan places no opportunistic replica."""
    rules = PairRules(inventory, {d.name: d for d in inventory.datasets})
    # The rule is about the plan these inputs give when the solver ends its work; one the safety net cut short
    # is valid but not that plan (it says so, exit 5), and neither is P planned within the same cut
    if plan.solver.status == "time_limit" or not any(pl.tier == OPPORTUNISTIC for pl in plan.placements):
        return []
    from hybridctl.core.placement.planner import plan as make_plan

    without = inventory.model_copy(update={"workloads": [w for w in inventory.workloads
                                                         if rules.tier(w) != OPPORTUNISTIC]})
    alone = make_plan(without, previous=previous, options=options, digest=plan.inventory_digest)
    if alone.solver.status == "time_limit":
        return []
    return alone_violations(inventory, plan, alone, rules, gap=options.gap)


def accepted(plan: Plan, violations: list[str], what: str = "plan") -> Plan:
    """`plan` itself when the checker found nothing wrong with it (`violations`, from check_plan run
    elsewhere, e.g. beside other work); PlanCheckFailed otherwise."""
    if violations:
        raise PlanCheckFailed(what, violations)
    return plan


def plan_violations(inventory: Inventory, plan: Plan, run_memo: RunMemo | None = None, *,
                    failover: bool = False) -> list[str]:
    """Every reason not to act on this plan for this inventory; empty when it may be applied. `run_memo`: the run's
    that goes on to read the inventory again (a drill or failover rehearsed from the plan file). `failover`: a
    runbook's failover plan read back, `inventory` the disrupted one it was checked against (its fallback
    shapes are its own)."""
    shape = _shape_violations(plan, failover)
    if shape:
        return shape  # the checker's arithmetic assumes sane numbers
    return [*_arithmetic_violations(plan), *_summary_violations(inventory, plan, failover),
            *check_plan(inventory, plan, run_memo=run_memo)]


def plan_file_violations(plan: Plan) -> list[str]:
    """What is wrong with a plan file on its own, without the inventory it was made from: what `show`, `cost`
    and `report` check before they show a plan's numbers. Its numbers must be sane, its placements of the
    units a plan file places (no fallback shapes: those belong to failover plans, in runbooks), and its
    summaries — pools, cost totals, each placement's cost at its pool's price — must restate its placements,
    so that no table shows a figure the plan's placements do not give."""
    return _shape_violations(plan) or _arithmetic_violations(plan)


def _segment_violations(plan: Plan, listed: Mapping[str, PoolUsage]) -> list[str]:
    """A timed plan (format 3) holds, in every segment, at most each pool's GPUs: the GPU-hours of its
    placements there / the segment's hours (whole-segment replicas count their GPUs)."""
    if not plan.segments:
        return []
    load: dict[tuple[str, int], float] = defaultdict(float)
    for p in plan.placements:
        for s, hours in enumerate(p.segment_hours):
            if hours > 0:
                load[(p.pool, s)] += p.gpus * hours / plan.segments[s].hours
    return [f"pool {pool}: segment {s + 1} holds {gpus:.2f} GPUs, capacity {listed[pool].capacity_gpus}"
            for (pool, s), gpus in sorted(load.items()) if pool in listed and gpus > listed[pool].capacity_gpus + 1e-3]


# Bounds on a plan file's numbers, from the inventory's (models.py): a plan within them cannot overflow.
_MAX_COUNT = MAX_REPLICAS * MAX_GPUS_PER_REPLICA  # replicas, GPUs, machines
_MAX_USD = MAX_USD_PER_MONTH * 1_000  # any amount a month: a fleet of a thousand inventories at their ceiling
_MAX_GB = 1e15


def _shape_violations(plan: Plan, failover: bool = False) -> list[str]:
    problems: list[str] = []
    for index, p in enumerate(plan.placements):
        where = f"placements[{index}] ({p.workload} in {p.pool})"
        if not (0 <= p.replicas <= MAX_REPLICAS and 0 <= p.gpus <= _MAX_COUNT
                and 0 <= p.gpus_per_replica <= MAX_GPUS_PER_REPLICA):
            problems.append(f"{where}: negative replicas or GPUs, or more than an inventory allows")
        if not (math.isfinite(p.usd_per_month) and 0 <= p.usd_per_month <= _MAX_USD):
            problems.append(f"{where}: cost {p.usd_per_month} is not a finite amount ≥ 0")
        if not (math.isfinite(p.hours_per_month) and 0 <= p.hours_per_month <= HOURS_PER_MONTH_MAX):
            problems.append(f"{where}: hours_per_month {p.hours_per_month} is not between 0 and "
                            f"{HOURS_PER_MONTH_MAX}")
        if p.tier not in _TIERS:
            problems.append(f"{where}: tier {p.tier!r} is not one of {sorted(_TIERS)}")
        # one rule for the unit a placement places (the checker's demand_of): the workload itself, or a
        # federated trainer group at the placement's site; anything else would count toward no workload
        if p.demand not in (p.workload, f"{p.workload}@{p.site}"):
            problems.append(f"{where}: demand {p.demand!r} is not {p.workload!r} (or {p.workload}@{p.site} for a "
                            "federated trainer group)")
        if p.degraded and not failover:
            problems.append(f"{where}: degraded: only a failover plan (a runbook's) places work in its fallback "
                            "shape; a plan file from `plan --out` holds none")
    for index, u in enumerate(plan.unplaced):
        if not 0 <= u.replicas <= MAX_REPLICAS:
            problems.append(f"unplaced[{index}] ({u.workload}): negative replicas, or more than an inventory allows")
        if u.demand and u.demand != u.workload and not u.demand.startswith(f"{u.workload}@"):
            problems.append(f"unplaced[{index}] ({u.workload}): demand {u.demand!r} is another workload's")
    for index, m in enumerate(plan.data_movements):
        if not (math.isfinite(m.usd_per_month) and 0 <= m.usd_per_month <= _MAX_USD
                and math.isfinite(m.gb_per_month) and 0 <= m.gb_per_month <= _MAX_GB):
            problems.append(f"data_movements[{index}] ({m.workload}): amounts must be finite and ≥ 0")
    for index, pool in enumerate(plan.pools):
        where = f"pools[{index}] ({pool.pool})"
        if not (0 <= pool.capacity_gpus <= MAX_POOL_GPUS and 0 <= pool.used_gpus <= _MAX_COUNT
                and 1 <= pool.gpus_per_node <= MAX_GPUS_PER_NODE and 0 <= pool.machines <= _MAX_COUNT
                and 0 <= pool.always_on_machines <= _MAX_COUNT):
            problems.append(f"{where}: GPUs, machines or GPUs per machine negative or beyond an inventory's bounds")
        if not (math.isfinite(pool.usd_per_gpu_hour) and 0 <= pool.usd_per_gpu_hour <= MAX_USD_PER_GPU_HOUR):
            problems.append(f"{where}: usd_per_gpu_hour {pool.usd_per_gpu_hour} is not between 0 and "
                            f"{MAX_USD_PER_GPU_HOUR:,.0f}")
        for name in ("usd_per_month", "amortized_usd_per_month"):
            value = getattr(pool, name)
            if not (math.isfinite(value) and 0 <= value <= _MAX_USD):
                problems.append(f"{where}: {name} {value} is not a finite amount ≥ 0")
    for name in ("compute_usd_per_month", "data_usd_per_month"):
        value = getattr(plan, name)
        if not (math.isfinite(value) and 0 <= value <= _MAX_USD):
            problems.append(f"{name}: {value} is not a finite amount ≥ 0")
    budget = plan.budget_usd_per_month
    if budget is not None and not (math.isfinite(budget) and 0 <= budget <= MAX_USD_PER_MONTH):
        problems.append(f"budget_usd_per_month: {budget} is not a finite amount ≥ 0")
    solver = plan.solver
    if not all(math.isfinite(v) and abs(v) <= _MAX_USD for v in (solver.objective, solver.bound, solver.gap,
                                                                   solver.penalty_usd)) or solver.gap < 0:
        problems.append("solver: objective, bound, gap and penalty_usd must be finite (the gap ≥ 0)")
    if plan.base_serial is not None and not 0 <= plan.base_serial < 2**63:
        problems.append(f"base_serial: {plan.base_serial} is not a state serial")
    return problems


def _arithmetic_violations(plan: Plan) -> list[str]:
    """The plan's summaries restated from its placements, by the format's own definitions: they are what
    `show`, `cost`, `report` and the stacks read. Needs no inventory; the prices are the pools' as the plan
    lists them (rounded to 4 decimals there: the tolerances allow for that rounding)."""
    problems: list[str] = []
    listed = {u.pool: u for u in plan.pools}
    if len(listed) != len(plan.pools):
        problems.append("pools: a pool is listed twice")
    used: dict[str, int] = defaultdict(int)
    amortized: dict[str, float] = defaultdict(float)
    always_on: dict[str, int] = defaultdict(int)
    own_machines: dict[str, int] = defaultdict(int)
    own_gpu_hours: dict[str, float] = defaultdict(float)
    for index, p in enumerate(plan.placements):
        where = f"placements[{index}] ({p.workload} in {p.pool})"
        usage = listed.get(p.pool)
        if usage is None:
            problems.append(f"{where}: pool {p.pool} is not in the plan's pools")
            continue
        if usage.site != p.site:
            problems.append(f"{where}: the plan's pools put {p.pool} at {usage.site}, not {p.site}")
        if p.gpus != p.replicas * p.gpus_per_replica:
            problems.append(f"{where}: {p.gpus} GPUs for {p.replicas} × {p.gpus_per_replica}")
        if plan.tiers.get(p.workload, p.tier) != p.tier:
            problems.append(f"{where}: tier {p.tier}, the plan's tiers say {plan.tiers[p.workload]}")
        gpu_hours = p.gpus * p.hours_per_month
        cost = gpu_hours * usage.usd_per_gpu_hour
        if abs(cost - p.usd_per_month) > _slack(gpu_hours):
            problems.append(f"{where}: costs {cost:.2f} at its pool's ${usage.usd_per_gpu_hour}/GPU-h, the plan "
                            f"says {p.usd_per_month:.2f}")
        used[p.pool] += p.gpus
        amortized[p.pool] += p.usd_per_month
        if p.hours_per_month == _ALWAYS_ON_HOURS:
            always_on[p.pool] += p.gpus
        else:
            machines = p.replicas * -(-p.gpus_per_replica // usage.gpus_per_node)
            own_machines[p.pool] += machines
            own_gpu_hours[p.pool] += machines * usage.gpus_per_node * p.hours_per_month
    weeks: dict[str, MachineWeek] = {}
    if plan.segments:  # a timed plan's used GPUs are the most its pool holds at once (weekusage.peak_gpus)
        lengths = [s.hours for s in plan.segments]
        used = defaultdict(int, peak_gpus(plan.placements, lengths))
        # and its machines are the week's (weekusage.machine_weeks), in each segment
        weeks = machine_weeks(plan.placements, lengths, {n: u.gpus_per_node for n, u in listed.items() if not u.committed})
    for name, usage in listed.items():
        if usage.used_gpus != used.get(name, 0):
            problems.append(f"pool {name}: the plan lists {usage.used_gpus} GPUs used, its placements "
                            f"use {used.get(name, 0)}")
        if used.get(name, 0) > usage.capacity_gpus and not plan.segments:
            problems.append(f"pool {name}: {used[name]} GPUs used, capacity {usage.capacity_gpus}")
        if abs(usage.amortized_usd_per_month - amortized.get(name, 0.0)) > _TOLERANCE_USD * (1 + len(plan.placements)):
            problems.append(f"pool {name}: amortized_usd_per_month {usage.amortized_usd_per_month:.2f}, its "
                            f"placements cost {amortized.get(name, 0.0):.2f}")
        gpn = usage.gpus_per_node
        if usage.committed:
            machines, shared, gpu_hours = -(-usage.capacity_gpus // gpn), 0, usage.capacity_gpus * _ALWAYS_ON_HOURS
        elif plan.segments:
            week = weeks.get(name, MachineWeek(0.0, 0, 0))
            machines, shared = week.peak, week.always_on
            gpu_hours = week.machine_hours * gpn * HOURS_PER_MONTH / HOURS_PER_WEEK
        else:
            shared = -(-always_on.get(name, 0) // gpn)
            machines = shared + own_machines.get(name, 0)
            gpu_hours = shared * gpn * _ALWAYS_ON_HOURS + own_gpu_hours.get(name, 0.0)
        if (usage.machines, usage.always_on_machines) != (machines, shared):
            problems.append(f"pool {name}: the plan lists {usage.machines} machines ({usage.always_on_machines} "
                            f"always on), its placements run {machines} ({shared})")
        if abs(usage.usd_per_month - gpu_hours * usage.usd_per_gpu_hour) > _slack(gpu_hours):
            problems.append(f"pool {name}: usd_per_month {usage.usd_per_month:.2f}, {gpu_hours:,.0f} GPU-hours at "
                            f"${usage.usd_per_gpu_hour}/GPU-h cost {gpu_hours * usage.usd_per_gpu_hour:.2f}")
    problems.extend(_segment_violations(plan, listed))
    compute = sum(p.usd_per_month for p in plan.placements)
    if abs(compute - plan.compute_usd_per_month) > _TOLERANCE_USD * max(1, len(plan.placements)):
        problems.append(f"compute_usd_per_month: {plan.compute_usd_per_month:.2f}, its placements sum "
                        f"to {compute:.2f}")
    data = sum(m.usd_per_month for m in plan.data_movements)
    if abs(data - plan.data_usd_per_month) > _TOLERANCE_USD * max(1, len(plan.data_movements)):
        problems.append(f"data_usd_per_month: {plan.data_usd_per_month:.2f}, its movements sum to {data:.2f}")
    return problems


_ALWAYS_ON_HOURS = 730  # the format's always-on replica: its GPUs share a pay-per-use pool's machines


def _slack(gpu_hours: float) -> float:
    """How far a cost may be from GPU-hours × the plan's price: cents, plus the price's rounding to 4 decimals."""
    return _TOLERANCE_USD + gpu_hours * 0.00005


def _summary_violations(inventory: Inventory, plan: Plan, failover: bool = False) -> list[str]:
    """The plan's pool list must describe the inventory's pools: it is what gets shown and sized. A failover plan
    keeps the GPU type of a pool its events emptied (the disrupted inventory's is NO_GPU, at no capacity)."""
    from hybridctl.core.failover.disrupt import NO_GPU

    problems: list[str] = []
    # the digest binds the plan to the inventory; the name is what status and the journal show of it
    if plan.inventory_name != inventory.name:
        problems.append(f"inventory: the plan names '{plan.inventory_name}', the inventory is '{inventory.name}'")
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    for name, usage in {u.pool: u for u in plan.pools}.items():
        if name not in pools:
            problems.append(f"pool {name}: not in the inventory")
            continue
        site, pool = pools[name]
        capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
        gpu = usage.gpu if failover and pool.gpu == NO_GPU and capacity == 0 else pool.gpu
        if (usage.site, usage.gpu, usage.capacity_type, usage.capacity_gpus) != \
                (site.name, gpu, pool.capacity_type.value, capacity):
            problems.append(f"pool {name}: the plan describes it as {usage.gpu} {usage.capacity_type} × "
                            f"{usage.capacity_gpus} at {usage.site}, the inventory as {pool.gpu} "
                            f"{pool.capacity_type.value} × {capacity} at {site.name}")
    # a pool left out of the list entirely: the checker's "missing from the plan's pools"
    known = {w.name for w in inventory.workloads}
    problems.extend(f"tiers: {name} is not a workload of the inventory" for name in sorted(set(plan.tiers) - known))
    return problems
