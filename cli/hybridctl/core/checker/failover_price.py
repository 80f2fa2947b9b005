"""The spec's `policies.failover_max_price_ratio`, checked on a failover plan against the applied plan, without the
planner's code: a burst or opportunistic workload that ran in the applied plan moves in the failover plan only to
pools whose price per GPU-hour (the failover plan's, after the events) is at most the ratio times the dearest rate
it paid in the applied plan (the applied plan's prices). Fixed work is never held back by it; work that ran
nowhere before has no rate to compare with. Only moves are checked (a pool the workload did not run in): the
planner also keeps a replica from staying in a pool an event made dearer, which this does not require.
"""

from __future__ import annotations

from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from hybridctl.core.plan.delta import placement_delta
from hybridctl.core.plan.model import Plan

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo

_HELD_BACK = frozenset({"burst", "opportunistic"})
_SLACK = 1e-9
_WORKLOAD = attrgetter("workload")  # ratio × rate is a product of floats: a price equal to it passes


def price_ratio_violations(applied: Plan, after: Plan, ratio: float, run_memo: RunMemo | None = None) -> list[str]:
    """Each placement of `after` above the ratio, named with its price and the rate its workload paid. Only the
    placements that are not the applied plan's very objects can have moved (plan/delta.py, kept in `run_memo`)."""
    delta = placement_delta(applied, after, run_memo)
    if not delta.added:
        return []
    changed = delta.workloads
    was = {u.pool: u.usd_per_gpu_hour for u in applied.pools}
    now = {u.pool: u.usd_per_gpu_hour for u in after.pools}
    paid: dict[str, float] = {}
    ran: set[tuple[str, str]] = set()
    for p in compress(applied.placements, map(changed.__contains__, map(_WORKLOAD, applied.placements))):
        ran.add((p.workload, p.pool))
        if p.tier in _HELD_BACK and p.pool in was:
            paid[p.workload] = max(paid.get(p.workload, 0.0), was[p.pool])
    problems: list[str] = []
    for p in delta.added:
        rate = paid.get(p.workload)
        if p.tier not in _HELD_BACK or rate is None or p.pool not in now or (p.workload, p.pool) in ran:
            continue
        if now[p.pool] > ratio * rate + _SLACK:
            problems.append(f"{p.workload} ({p.tier}) runs in {p.pool} at ${now[p.pool]:,.4f}/GPU-hour, more than "
                            f"policies.failover_max_price_ratio {ratio:g} × the ${rate:,.4f} it paid in the applied "
                            "plan")
    return problems
