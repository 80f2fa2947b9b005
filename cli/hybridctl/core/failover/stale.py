"""What of an applied plan the inventory no longer supports, once the inventory has changed since.

A failover replans from the applied plan, pinning the work its events leave alone. When the
inventory was edited after the apply (a pool's price or size, a workload's shape, a workload
removed), a pinned placement can break a rule of the inventory as it is now, and the failover
plan would be refused by the checker. So the applied plan is checked against the inventory first:
the work it no longer supports is replanned with the work the events displace, and placements of
workloads or pools the inventory no longer has are dropped. Only worth a whole check when the
inventory's digest differs from the applied plan's.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hybridctl.core.checker.check import check
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import Plan

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo


@dataclass(frozen=True)
class Stale:
    plan: Plan  # the applied plan without placements and data movements naming what the inventory no longer has
    workloads: frozenset[str]  # to replan: placed against a rule of the inventory now, or on a pool that is


def stale_work(inventory: Inventory, applied: Plan, run_memo: RunMemo | None = None) -> Stale:
    """`run_memo`: the failover's (the check reads the inventory's workloads by name, as its impacts do)."""
    verdict = check(inventory, applied, run_memo=run_memo)
    workloads = {w.name for w in inventory.workloads}
    pools = {p.name for s in inventory.sites for p in s.pools}
    broken_pools = {name for name, v in verdict.pools.items() if v.problems}
    stale = {name for name, v in verdict.workloads.items() if v.problems}
    stale |= {p.workload for p in applied.placements if p.pool in broken_pools and p.workload in workloads}
    kept = tuple(p for p in applied.placements if p.workload in workloads and p.pool in pools)
    moved = tuple(m for m in applied.data_movements if m.workload in workloads)
    if len(kept) == len(applied.placements) and len(moved) == len(applied.data_movements):
        return Stale(applied, frozenset(stale))
    return Stale(dataclasses.replace(applied, placements=kept, data_movements=moved), frozenset(stale))
