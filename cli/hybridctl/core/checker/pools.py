"""The checker's pool rules (check.py): each pool's capacity, whole machines and cost, re-derived from the
placements on it and the spec, apart from pricing/ (which the plan's figures come from)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from hybridctl.core.checker.rules import ALWAYS_ON_HOURS, TOLERANCE_USD, committed, per_node, price_of
from hybridctl.core.inventory.models import Pool, Site, Workload
from hybridctl.core.plan.model import Placement, PoolUsage
from hybridctl.core.pricing.rates import rework_factor


@dataclass(frozen=True)
class PoolVerdict:
    problems: tuple[str, ...]
    committed_usd: float  # its share of each of the plan's cost parts, by the rules
    pay_per_use_usd: float
    idle_usd: float
    amortized_usd: float


class PoolSums:
    """What a pool's verdict adds up over the placements on it (PoolRules.add)."""

    __slots__ = ("always_on", "amortized", "own_machines", "own_usd", "used", "week")

    def __init__(self) -> None:
        self.used = self.always_on = self.own_machines = 0
        self.own_usd = self.amortized = 0.0
        self.week: list[tuple[tuple[float, ...], int, int]] = []  # timed: (hours per segment, GPUs, own machines)


class PoolRules:
    """The rules of one inventory's pools (`pools`: pool name -> its site and pool)."""

    def __init__(self, pools: dict[str, tuple[Site, Pool]]) -> None:
        self.pools = pools
        self._shapes: dict[str, tuple[int, float]] = {}  # pool -> GPUs per machine, price

    def add(self, sums: PoolSums, pl: Placement, w: Workload) -> None:
        """A placement's part of its pool's sums: GPUs, always-on GPUs, other replicas' own machines and
        their cost, and the amortized cost."""
        sums.used += pl.gpus
        if pl.replicas <= 0:
            return
        shape = self._shapes.get(pl.pool)
        site, pool = self.pools[pl.pool]
        if shape is None:
            shape = self._shapes[pl.pool] = (per_node(site, pool), price_of(pool, site))
        gpus_per_node, price = shape
        hours = w.hours * rework_factor(w, site, pool, w.hours)  # the spec's rework, priced by pricing/
        sums.amortized += pl.gpus * hours * price
        machines = pl.replicas * -(-(pl.gpus // pl.replicas) // gpus_per_node)
        if pl.segment_hours:
            sums.week.append((pl.segment_hours, pl.gpus, machines))
        if hours == ALWAYS_ON_HOURS:
            sums.always_on += pl.gpus
        else:
            sums.own_machines += machines
            sums.own_usd += machines * gpus_per_node * hours * price

    def verdict(self, name: str, sums: PoolSums, reported: PoolUsage | None, *,
                lengths: Sequence[float] = ()) -> PoolVerdict:
        """Whole machines in pay-per-use pools (quota and machine counts) and committed constants. Reads the
        pool, its site, the placements on it (their sums), their workloads' hours and the plan's report."""
        site, pool = self.pools[name]
        gpus_per_node, price = per_node(site, pool), price_of(pool, site)
        capacity = pool.gpus if pool.gpus is not None else pool.max_gpus or 0
        used, always_on, own_machines, own_usd, amortized = (sums.used, sums.always_on, sums.own_machines,
                                                              sums.own_usd, sums.amortized)
        timed = bool(lengths)
        problems: list[str] = []
        if used > capacity and not timed:
            problems.append(f"pool {name}: {used} GPUs used, capacity {capacity}")
        committed_usd = pay_per_use_usd = idle_usd = 0.0
        if committed(site, pool):
            usd = committed_usd = capacity * ALWAYS_ON_HOURS * price
            idle_usd = usd - amortized
            machines = -(-capacity // gpus_per_node)
        elif timed:  # paid by the segment (revision 3): the week's machine-hours, every week of the month
            machine_hours, machines = _week_machines(sums, gpus_per_node, lengths)
            usd = pay_per_use_usd = machine_hours * 730 / 168 * gpus_per_node * price
        else:
            shared = -(-always_on // gpus_per_node)
            machines = shared + own_machines
            usd = pay_per_use_usd = shared * gpus_per_node * ALWAYS_ON_HOURS * price + own_usd
            if machines > capacity // gpus_per_node:
                problems.append(f"whole machines: pool {name} runs {machines} machines of {gpus_per_node} GPUs, "
                                f"its quota of {capacity} GPUs allows {capacity // gpus_per_node}")
        if reported is None:
            problems.append(f"pool {name}: missing from the plan's pools")
        else:
            if reported.machines != machines:
                problems.append(f"machines: pool {name} reports {reported.machines}, the placements need {machines}")
            if abs(reported.usd_per_month - usd) > TOLERANCE_USD:
                problems.append(f"pool cost: pool {name} reports {reported.usd_per_month:.2f}, the rules give {usd:.2f}")
        return PoolVerdict(tuple(problems), committed_usd, pay_per_use_usd, idle_usd, amortized)


def _week_machines(sums: PoolSums, gpus_per_node: int, lengths: Sequence[float]) -> tuple[float, int]:
    """A pay-per-use pool's machine-hours in the plan's week, and the most machines a segment runs: in each
    segment, the replicas that run it whole share ceil(their GPUs / GPUs per machine) machines; the others
    run their own for their hours (and may all run at once)."""
    whole = [0] * len(lengths)
    running = [0] * len(lengths)
    own = 0.0
    for hours, gpus, machines in sums.week:
        for s, h in enumerate(hours[:len(lengths)]):
            if h >= lengths[s] - 1e-9:
                whole[s] += gpus
            elif h > 0:
                own += machines * h
                running[s] += machines
    shared = [-(-g // gpus_per_node) for g in whole]
    return (own + sum(m * length for m, length in zip(shared, lengths, strict=True)),
            max((m + r for m, r in zip(shared, running, strict=True)), default=0))
