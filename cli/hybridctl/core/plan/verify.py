"""Verifying plans before anything uses them, in the two places a plan comes from.

- Made by the planner: every plan and replan the CLI makes goes through `verified`. A plan that
  breaks a rule of the spec is a bug in the planner, not a user mistake, so it is raised as
  PlanCheckFailed, which the CLI reports as an internal error (exit 70) naming the broken rule,
  instead of showing, saving or applying the plan.
- Read from a plan file: a plan file is untrusted, since anyone who can write it can change a
  number. Its content digest catches an edit made by hand; `plan_violations` catches a plan
  that breaks the inventory's rules however it came about — the independent checker's every
  rule, plus what the checker takes for granted in a plan the planner made: sane numbers, and
  pool and cost summaries that agree with the placements they summarise.
"""

from __future__ import annotations

import math
from collections import defaultdict

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.checker import PlacementMemo, check_plan
from hybridctl.core.plan.model import Plan

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


def verified(inventory: Inventory, plan: Plan, what: str = "plan", memo: PlacementMemo | None = None) -> Plan:
    """`plan` itself when the checker finds nothing wrong with it; PlanCheckFailed otherwise."""
    return accepted(plan, check_plan(inventory, plan, memo), what)


def accepted(plan: Plan, violations: list[str], what: str = "plan") -> Plan:
    """`plan` itself when the checker found nothing wrong with it (`violations`, from check_plan run
    elsewhere, e.g. beside other work); PlanCheckFailed otherwise."""
    if violations:
        raise PlanCheckFailed(what, violations)
    return plan


def plan_violations(inventory: Inventory, plan: Plan) -> list[str]:
    """Every reason not to act on this plan for this inventory; empty when it may be applied."""
    shape = _shape_violations(plan)
    if shape:
        return shape  # the checker's arithmetic assumes sane numbers
    return [*_summary_violations(inventory, plan), *check_plan(inventory, plan)]


def _shape_violations(plan: Plan) -> list[str]:
    problems: list[str] = []
    for index, p in enumerate(plan.placements):
        where = f"placements[{index}] ({p.workload} in {p.pool})"
        if p.replicas < 0 or p.gpus < 0 or p.gpus_per_replica < 0:
            problems.append(f"{where}: negative replicas or GPUs")
        if not math.isfinite(p.usd_per_month) or p.usd_per_month < 0:
            problems.append(f"{where}: cost {p.usd_per_month} is not a finite amount ≥ 0")
        if p.tier not in _TIERS:
            problems.append(f"{where}: tier {p.tier!r} is not one of {sorted(_TIERS)}")
    for index, u in enumerate(plan.unplaced):
        if u.replicas < 0:
            problems.append(f"unplaced[{index}] ({u.workload}): negative replicas")
    for index, m in enumerate(plan.data_movements):
        if not (math.isfinite(m.usd_per_month) and m.usd_per_month >= 0 and math.isfinite(m.gb_per_month)
                and m.gb_per_month >= 0):
            problems.append(f"data_movements[{index}] ({m.workload}): amounts must be finite and ≥ 0")
    for name in ("compute_usd_per_month", "data_usd_per_month"):
        value = getattr(plan, name)
        if not math.isfinite(value) or value < 0:
            problems.append(f"{name}: {value} is not a finite amount ≥ 0")
    return problems


def _summary_violations(inventory: Inventory, plan: Plan) -> list[str]:
    """The plan's pool list and totals must restate its placements: they are what gets shown and sized."""
    problems: list[str] = []
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    used: dict[str, int] = defaultdict(int)
    for p in plan.placements:
        used[p.pool] += p.gpus
    listed = {u.pool: u for u in plan.pools}
    for name, usage in listed.items():
        if name not in pools:
            problems.append(f"pool {name}: not in the inventory")
            continue
        site, pool = pools[name]
        capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
        if (usage.site, usage.gpu, usage.capacity_type, usage.capacity_gpus) != \
                (site.name, pool.gpu, pool.capacity_type.value, capacity):
            problems.append(f"pool {name}: the plan describes it as {usage.gpu} {usage.capacity_type} × "
                            f"{usage.capacity_gpus} at {usage.site}, the inventory as {pool.gpu} "
                            f"{pool.capacity_type.value} × {capacity} at {site.name}")
        if usage.used_gpus != used.get(name, 0):
            problems.append(f"pool {name}: the plan lists {usage.used_gpus} GPUs used, its placements "
                            f"use {used.get(name, 0)}")
    # a pool left out of the list entirely: the checker's "missing from the plan's pools"
    compute = sum(p.usd_per_month for p in plan.placements)
    if abs(compute - plan.compute_usd_per_month) > _TOLERANCE_USD * max(1, len(plan.placements)):
        problems.append(f"compute_usd_per_month: {plan.compute_usd_per_month:.2f}, its placements sum "
                        f"to {compute:.2f}")
    data = sum(m.usd_per_month for m in plan.data_movements)
    if abs(data - plan.data_usd_per_month) > _TOLERANCE_USD * max(1, len(plan.data_movements)):
        problems.append(f"data_usd_per_month: {plan.data_usd_per_month:.2f}, its movements sum to {data:.2f}")
    known = {w.name for w in inventory.workloads}
    problems.extend(f"tiers: {name} is not a workload of the inventory" for name in sorted(set(plan.tiers) - known))
    return problems
