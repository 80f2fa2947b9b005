"""Tier priority, checked on its own (spec, "Tier priority"): a lower-tier replica never holds
capacity that a higher-tier replica left unplaced needs.

For each unplaced replica this looks for a pool the workload may use (the pair rules of
rules.py) whose room, counting only what its own and higher tiers hold, fits one more
replica while lower tiers hold some of it. The conditions are kept on the safe side of the solver's
rules, so that a plan flagged here is wrong for certain: the replica keeps its failure-domain spread
(no domain above replicas - spread + 1, as the planner counts it), its cost ceiling, and the budget
(when one is set, only the cash of a pay-per-use replica's own machines is checked against what is
left). Time segments are not read here: a plan without `schedule` is one segment.

Opportunistic work runs only in what the others leave (revision 4): `alone_violations` compares a plan with
P, the plan of the same inventory without its opportunistic workloads (verify.py plans it). The fixed and
burst tiers must place as many GPU-hours as in P, fixed first, and with those, cost no more priced alone
than P costs: their pay-per-use machines counted over their own placements only, their data movement (the
committed pools' constant, the same on both sides, is the plan's; a deferrable replica counted on its own
machines throughout, as the planner counts it). Both plans are solved within the planner's gap, so
the cash may differ by that share of P's total; a plan placing more of the fixed or burst tier than P is
not judged (P was the one cut short).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType

from hybridctl.core.checker.pools import PoolRules, PoolSums
from hybridctl.core.checker.rules import (
    ALWAYS_ON_HOURS,
    BURST,
    FIXED,
    OPPORTUNISTIC,
    TOLERANCE_USD,
    PairRules,
    committed,
    per_node,
)
from hybridctl.core.inventory.models import Inventory, Pool, Site, Workload
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.pricing.rates import rework_factor

_RANK = MappingProxyType({FIXED: 0, BURST: 1, OPPORTUNISTIC: 2})


def _domain(site: Site, pool: Pool) -> str:
    return pool.failure_domain or site.failure_domain or site.name


def _machines(placements: list[Placement], gpus_per_node: int) -> int:
    """Whole machines these placements run: always-on ones share, any other has its own."""
    shared = sum(pl.gpus for pl in placements if pl.hours_per_month >= ALWAYS_ON_HOURS)
    own = sum(pl.replicas * -(-pl.gpus_per_replica // gpus_per_node) for pl in placements
              if pl.hours_per_month < ALWAYS_ON_HOURS)
    return own + -(-shared // gpus_per_node)


def priority_violations(inventory: Inventory, plan: Plan, rules: PairRules) -> list[str]:
    if not plan.unplaced:
        return []
    workloads = {w.name: w for w in inventory.workloads}
    in_pool: dict[str, list[Placement]] = defaultdict(list)
    of_workload: dict[str, list[Placement]] = defaultdict(list)
    for pl in plan.placements:
        in_pool[pl.pool].append(pl)
        of_workload[pl.workload].append(pl)
    problems: list[str] = []
    by_rank = _ByRank(in_pool)
    for missing in plan.unplaced:
        w = workloads.get(missing.workload)
        if w is None or missing.demand not in ("", w.name):
            continue  # federated trainers: a demand per site, not judged here
        rank = _RANK[rules.tier(w)]
        holders = by_rank.held_below(rank)
        for site in inventory.sites:
            for pool in site.pools:
                if pool.name not in holders:
                    continue
                blocked = _held_below(inventory, plan, w, rank, site, pool, by_rank, of_workload, rules)
                if blocked:
                    problems.append(f"tier priority: {w.name} ({rules.tier(w)}) has a replica unplaced while "
                                    f"{blocked} in {pool.name}, where it fits")
                    break
            else:
                continue
            break
    return problems


class _ByRank:
    """A pool's placements split by a tier rank into those below it and the rest, in the pool's order, each
    split made once: every unplaced workload asks it of every pool (80,700 times in 11 scenarios of a
    10,000-workload drill, where splitting anew was a fifth of the drill's time)."""

    def __init__(self, in_pool: Mapping[str, list[Placement]]) -> None:
        self._in_pool = in_pool
        self._split: dict[tuple[str, int], tuple[list[Placement], list[Placement]]] = {}
        self._held: dict[int, frozenset[str]] = {}

    def held_below(self, rank: int) -> frozenset[str]:
        """The pools where a tier below `rank` holds a placement (where _held_below can find anything)."""
        found = self._held.get(rank)
        if found is None:
            found = self._held[rank] = frozenset(
                pool for pool, here in self._in_pool.items() if any(_RANK.get(pl.tier, 0) > rank for pl in here))
        return found

    def split(self, pool: str, rank: int) -> tuple[list[Placement], list[Placement]]:
        """(below `rank`, `rank` and above)."""
        found = self._split.get((pool, rank))
        if found is None:
            here = self._in_pool.get(pool, [])
            found = self._split[(pool, rank)] = ([pl for pl in here if _RANK.get(pl.tier, 0) > rank],
                                                 [pl for pl in here if _RANK.get(pl.tier, 0) <= rank])
        return found


def _held_below(inventory: Inventory, plan: Plan, w: Workload, rank: int, site: Site, pool: Pool,
                by_rank: _ByRank, of_workload: Mapping[str, list[Placement]], rules: PairRules) -> str:
    """What lower tiers hold in `pool` that one more replica of `w` could use ("" when nothing)."""
    below, ahead = by_rank.split(pool.name, rank)
    if not below or rules.violations(w, False, w.gpu.types, w.gpu.count, site, pool):
        return ""
    capacity = pool.gpus if pool.gpus is not None else (pool.max_gpus or 0)
    need = w.gpu.count
    if committed(site, pool):
        if capacity - sum(pl.gpus for pl in ahead) < need:
            return ""
    else:
        node = per_node(site, pool)
        me = Placement(workload=w.name, tier="", site=site.name, pool=pool.name, replicas=1, gpus=need,
                       usd_per_month=0.0, reason="", gpus_per_replica=need, hours_per_month=w.hours)
        extra = _machines([*ahead, me], node) - _machines(ahead, node)
        if capacity // node - _machines(ahead, node) < extra:
            return ""
        budget = inventory.policies.monthly_budget_usd
        if budget is not None and plan.total_usd_per_month + extra * node * w.hours * rules.price(pool, site) > budget:
            return ""
    mine = of_workload.get(w.name, [])
    if w.max_usd_per_month is not None:
        cost = sum(pl.usd_per_month for pl in mine) + need * w.hours * rework_factor(w, site, pool, w.hours) * rules.price(pool, site)
        if cost > w.max_usd_per_month + 0.005:
            return ""
    if not _spread_keeps(inventory, w, rules, site, pool, mine):
        return ""
    held = sorted({pl.workload for pl in below})
    return f"{', '.join(held[:3])} ({below[0].tier}) hold{'s' * (len(held) == 1)} {sum(pl.gpus for pl in below)} GPUs"


def _spread_keeps(inventory: Inventory, w: Workload, rules: PairRules, site: Site, pool: Pool,
                  mine: list[Placement]) -> bool:
    wanted = w.spread if w.spread is not None else (
        inventory.policies.spread_fixed_across if rules.tier(w) == FIXED else 1)
    k = min(wanted, w.replicas)
    if k < 2:
        return True
    sites = {s.name: s for s in inventory.sites}
    domains: dict[str, int] = defaultdict(int)
    for pl in mine:
        s = sites[pl.site]
        domains[_domain(s, next(p for p in s.pools if p.name == pl.pool))] += pl.replicas
    domains[_domain(site, pool)] += 1
    if max(domains.values()) > w.replicas - (k - 1):
        return False
    return sum(domains.values()) < w.replicas or len(domains) >= k


def alone_violations(inventory: Inventory, plan: Plan, alone: Plan, rules: PairRules, *, gap: float) -> list[str]:
    """Revision 4's rule against `alone` (P, see the module's note); empty when the plan keeps it."""
    workloads = {w.name: w for w in inventory.workloads}
    pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
    mine, theirs = alone_figures(plan, workloads, pools, rules), alone_figures(alone, workloads, pools, rules)
    for tier, got, want in ((FIXED, mine.fixed, theirs.fixed), (BURST, mine.burst, theirs.burst)):
        if got < want - _GPU_HOURS_SLACK * max(1.0, want):
            return [f"tier priority: the {tier} tier places {got:,.0f} GPU-hours a month, {want:,.0f} without the "
                    f"opportunistic workloads: opportunistic work holds what it needs"]
        if got > want + _GPU_HOURS_SLACK * max(1.0, want):
            return []
    # Both plans are solved only within a gap of their own bounds (the option's, or the wider one a plan reports
    # where its work ended first): either may be that far above its optimum, so the two gaps together are what
    # the comparison can tell from a violation (one alone refused a 1,000-workload plan $186 above P, 0.012 %).
    slack = TOLERANCE_USD + sum(max(gap, p.solver.gap) * abs(p.total_usd_per_month) for p in (plan, alone))
    if mine.cash > theirs.cash + slack:
        return [f"tier priority: the fixed and burst tiers cost ${mine.cash:,.2f} a month priced alone, "
                f"${theirs.cash:,.2f} without the opportunistic workloads: opportunistic work moved them "
                f"to dearer capacity"]
    return []


_GPU_HOURS_SLACK = 1e-6


class AloneFigures:
    __slots__ = ("burst", "cash", "fixed")

    def __init__(self) -> None:
        self.fixed = self.burst = self.cash = 0.0


def alone_figures(plan: Plan, workloads: Mapping[str, Workload], pools: dict[str, tuple[Site, Pool]],
                   rules: PairRules) -> AloneFigures:
    """The fixed and burst tiers' placed GPU-hours a month, and their cash under the plan's cost model priced
    as if they were alone (pools.py's rules over their placements only, and their data movement)."""
    figures = AloneFigures()
    lengths = [s.end_hour - s.start_hour for s in plan.segments]
    pool_rules = PoolRules(pools)
    sums: dict[str, PoolSums] = defaultdict(PoolSums)
    others: set[str] = set()
    for pl in plan.placements:
        w = workloads.get(pl.workload)
        if w is None or pl.pool not in pools or rules.tier(w) == OPPORTUNISTIC:
            continue
        others.add(w.name)
        if rules.tier(w) == FIXED:
            figures.fixed += pl.gpus * w.hours
        else:
            figures.burst += pl.gpus * w.hours
        pool_rules.add(sums[pl.pool], _own_machines_throughout(pl, lengths), w)
    verdicts = [pool_rules.verdict(name, pool_sums, None, lengths=lengths) for name, pool_sums in sums.items()]
    # under cash, the committed pools' constant, the same in every plan of the inventory, reads as the bill
    compute = sum(v.pay_per_use_usd for v in verdicts) + plan.committed_usd_per_month if plan.cost_model == "cash" \
        else sum(v.amortized_usd for v in verdicts)
    figures.cash = compute + sum(m.usd_per_month for m in plan.data_movements if m.workload in others)
    return figures


def _own_machines_throughout(pl: Placement, lengths: list[float]) -> Placement:
    """A deferrable replica (hours in part of a segment) priced on its own machines in every segment, as the
    planner counts it: where its hours happen to fill a segment, the week's rule shares machines with the
    whole-segment replicas (machines.py), a saving by chance that P may find and the plan not, or the other
    way round, though both are the least the planner can see. A hair under the segment keeps it its own."""
    if not lengths or not any(0 < h < lengths[s] - 1e-9 for s, h in enumerate(pl.segment_hours[:len(lengths)])):
        return pl
    return replace(pl, segment_hours=tuple(min(h, lengths[s] - _HAIR) if s < len(lengths) else h
                                           for s, h in enumerate(pl.segment_hours)))


_HAIR = 1e-6  # hours: a machine's cost over it is far below a cent
