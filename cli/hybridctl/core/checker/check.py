"""An independent check of a plan against the inventory: every rule of the spec, re-derived.

It shares no code with the solver's formulation nor with the planner's classification
(rules.py states the rules again from the spec; pools.py, time_rules.py and
checker/priority.py judge pools, the week and tier priority), so a modelling mistake there shows up
here. The CLI runs it after every plan and every replan (a violation is a bug: exit 70), and
the tests use it as their oracle.

The verdict is kept by workload (its placements, replica counts, cost ceiling, spread and data
costs) and by pool (capacity, whole machines, the pool's cost), and each part reads only what
its docstring lists. So a plan that differs from a checked one in a few places is checked by
checking those places again (`recheck`, driven by checker/delta.py): a drill checks hundreds of
failover plans, each the base plan with a few workloads moved.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import compress
from operator import attrgetter
from typing import TYPE_CHECKING

from hybridctl.core.checker.pools import PoolRules, PoolSums, PoolVerdict
from hybridctl.core.checker.priority import priority_violations
from hybridctl.core.checker.rules import (
    FIXED,
    TOLERANCE_USD,
    PairRules,
    demand_of,
    placement_violations,
    pool_violations,
    read_usd,
    revision2_pool_violations,
)
from hybridctl.core.checker.time_rules import time_problems
from hybridctl.core.inventory.models import Inventory, Pool, Site, Workload, WorkloadType
from hybridctl.core.nameindex import by_name
from hybridctl.core.plan.model import DataMovement, Placement, Plan

if TYPE_CHECKING:
    from hybridctl.core.memo import RunMemo


class PlacementMemo:
    """One placement's own rule violations and cost, kept for the next check of a plan that shares it.

    A drill checks hundreds of failover plans of one fleet; each repeats most of the base plan's
    placements, and the disrupted inventory keeps most of its Workload, Site, Pool and Dataset
    objects. A placement's own verdict depends on its fields and on those objects alone, so it is
    reused while the fields are equal and every one of the objects is the same. The objects are
    keyed by identity and held by the memo, so no identity can pass to another object meanwhile.
    """

    def __init__(self) -> None:
        self._known: dict[tuple[object, ...], tuple[tuple[object, ...], list[str], float]] = {}

    @staticmethod
    def _key(placement: Placement, objects: tuple[object, ...]) -> tuple[object, ...]:
        p = placement
        return (p.workload, p.pool, p.site, p.tier, p.degraded, p.gpus, p.replicas, p.usd_per_month,
                *map(id, objects))

    def get(self, placement: Placement, objects: tuple[object, ...]) -> tuple[list[str], float] | None:
        known = self._known.get(self._key(placement, objects))
        return None if known is None else (known[1], known[2])

    def put(self, placement: Placement, objects: tuple[object, ...], problems: list[str], cost: float) -> None:
        self._known[self._key(placement, objects)] = (objects, problems, cost)


@dataclass(frozen=True)
class WorkloadVerdict:
    problems: tuple[str, ...]
    searched: bool = False  # its spread verdict read every pool of the inventory (_spread_problem)


_CLEAN = WorkloadVerdict(())  # shared by the workloads that break no rule (most of a fleet)


@dataclass(frozen=True)
class PlanCheck:
    """What the checker found in one plan for one inventory, by part."""

    inventory: Inventory
    plan: Plan
    workloads: Mapping[str, WorkloadVerdict]  # every workload of the inventory, in its order
    pools: Mapping[str, PoolVerdict]  # every pool of the inventory, in its order
    unknown: tuple[str, ...]  # placements and data movements naming no workload or pool of the inventory
    totals: tuple[str, ...]  # the plan's cost model and cost parts
    searched: frozenset[str]  # the workloads whose verdict read every pool (WorkloadVerdict.searched)

    @property
    def problems(self) -> list[str]:
        return [*self.unknown, *(p for v in self.workloads.values() for p in v.problems),
                *(p for v in self.pools.values() for p in v.problems), *self.totals]


def check_plan(inventory: Inventory, plan: Plan, memo: PlacementMemo | None = None,
               run_memo: RunMemo | None = None) -> list[str]:
    """Violations of the spec's placement rules; empty when the plan is valid.

    `memo` (optional) reuses the per-placement verdicts of earlier checks of plans sharing objects;
    `run_memo` (optional) the inventory's workloads by name (nameindex.py).
    """
    return check(inventory, plan, memo, run_memo).problems


def check(inventory: Inventory, plan: Plan, memo: PlacementMemo | None = None,
          run_memo: RunMemo | None = None) -> PlanCheck:
    rules = _Rules(inventory, memo, run_memo)
    return rules.checked(plan, rules.workloads, rules.pools, None)


def recheck(reference: PlanCheck, inventory: Inventory, plan: Plan, workloads: Collection[str],
            pools: Collection[str], memo: PlacementMemo | None = None, run_memo: RunMemo | None = None) -> PlanCheck:
    """check(inventory, plan), given that only the named workloads and pools may judge differently than
    in `reference`: the caller (checker/delta.py) is to name every part whose inputs differ, and the
    inventory is to name the workloads and pools the reference's did (unknown names are then looked for
    among the named workloads' placements and data movements, when the reference found none)."""
    return _Rules(inventory, memo, run_memo).checked(plan, workloads, pools, reference)


_WORKLOAD = attrgetter("workload")
_POOL = attrgetter("pool")


def _finished(parts: Generator[None, None, PlanCheck]) -> PlanCheck:
    """The check the generator returns, run to its end."""
    while True:
        try:
            next(parts)
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


class _Rules:
    """One inventory's rules, indexed once for a check."""

    def __init__(self, inventory: Inventory, memo: PlacementMemo | None, run_memo: RunMemo | None) -> None:
        self.inventory = inventory
        self.memo = memo
        self.sites = {s.name: s for s in inventory.sites}
        self.pools = {p.name: (s, p) for s in inventory.sites for p in s.pools}
        self.datasets = {d.name: d for d in inventory.datasets}
        self.workloads = by_name(inventory.workloads, run_memo)  # read only, shared with the run's other checks
        self.pair = PairRules(inventory, self.datasets)
        self.pool_rules = PoolRules(self.pools)

    def checked(self, plan: Plan, workloads: Collection[str], pools: Collection[str],
                known: PlanCheck | None) -> PlanCheck:
        """The named parts judged now, the others as `known` judged them (all of them when nothing is known)."""
        return _finished(self.checking(plan, workloads, pools, known, None))

    def checking(self, plan: Plan, workloads: Collection[str], pools: Collection[str], known: PlanCheck | None,
                 workloads_per_step: int | None) -> Generator[None, None, PlanCheck]:
        """checked(), pausing after each `workloads_per_step` workloads judged (None: never)."""
        placements = plan.placements
        of_workload: dict[str, list[Placement]] = defaultdict(list)
        sums = {name: PoolSums() for name in (self.pools if known is None else pools) if name in self.pools}
        if known is None:  # every part, in one pass: the workloads' pass adds up the pools (_workload)
            for pl in placements:
                if pl.pool in self.pools:
                    of_workload[pl.workload].append(pl)
        else:  # the parts judged again, picked out without a Python step per placement of a fleet
            for pl in compress(placements, map(workloads.__contains__, map(_WORKLOAD, placements))):
                if pl.pool in self.pools:
                    of_workload[pl.workload].append(pl)
            for pl in compress(placements, map(sums.__contains__, map(_POOL, placements))):
                w = self.workloads.get(pl.workload)
                if w is not None:
                    self.pool_rules.add(sums[pl.pool], pl, w)
        unplaced = {u.demand or u.workload: u.replicas for u in plan.unplaced}
        movements = plan.data_movements
        planned: dict[str, list[float]] = defaultdict(list)
        for m in compress(movements, map(workloads.__contains__, map(_WORKLOAD, movements))):
            planned[m.workload].append(m.usd_per_month)
        # a full check judges every part in inventory order; a recheck updates the known verdicts, in their order
        by_workload = dict(known.workloads) if known else {}
        names = [n for n in workloads if n in self.workloads] if known else self.workloads
        left = workloads_per_step or -1  # judged before the next pause (-1: none)
        for name in names:
            by_workload[name] = self._workload(self.workloads[name], of_workload.get(name, ()), unplaced,
                                               planned.get(name, ()), None if known else sums)
            left -= 1
            if not left:
                yield
                left = workloads_per_step or -1
        reported = {u.pool: u for u in plan.pools}
        lengths = [s.end_hour - s.start_hour for s in plan.segments]
        by_pool = dict(known.pools) if known else {}
        for name, pool_sums in sums.items():
            by_pool[name] = self.pool_rules.verdict(name, pool_sums, reported.get(name), lengths=lengths)
        candidates = {*workloads, *(known.searched if known else ())}
        searched = frozenset(name for name in candidates if name in by_workload and by_workload[name].searched)
        # with names unchanged and a clean reference, only the parts named again can hold unknown names
        unknown = self._unknown(plan, None if known is None or known.unknown else workloads)
        # capacity over the week (time_rules.py) in place of the month's GPU and quota counts
        return PlanCheck(self.inventory, plan, by_workload, by_pool, tuple(unknown),
                         (*self._totals(plan, by_pool), *time_problems(self.inventory, plan)), searched)

    def _unknown(self, plan: Plan, among: Collection[str] | None) -> Iterable[str]:
        """Placements and data movements naming no workload or pool of the inventory (`among`: of these
        workloads only)."""
        placements: Sequence[Placement] = plan.placements
        movements: Sequence[DataMovement] = plan.data_movements
        if among is not None:
            placements = list(compress(placements, map(among.__contains__, map(_WORKLOAD, placements))))
            movements = list(compress(movements, map(among.__contains__, map(_WORKLOAD, movements))))
        named = set(map(_WORKLOAD, placements))
        if not named <= self.workloads.keys() or not set(map(_POOL, placements)) <= self.pools.keys():
            yield from (f"{pl.workload} in {pl.pool}: unknown workload or pool" for pl in placements
                        if pl.workload not in self.workloads or pl.pool not in self.pools)
        orphans: dict[str, list[float]] = defaultdict(list)
        if not set(map(_WORKLOAD, movements)) <= self.workloads.keys():  # a fleet's, without a Python step each
            for m in movements:
                if m.workload not in self.workloads:
                    orphans[m.workload].append(m.usd_per_month)
        for name in sorted(orphans):
            says = sum(orphans[name])
            if abs(says) > TOLERANCE_USD * max(1, len(orphans[name])):
                yield f"{name}: data movement: plan says {says:.2f}, rules give 0.00"
        # unplaced replicas count toward a demand of their workload, listed once (as placements do: demand_of);
        # a federated trainer group may be listed for any site (one whose data was lost has no demand left)
        seen: set[str] = set()
        for u in plan.unplaced:
            if among is not None and u.workload not in among:
                continue
            key = u.demand or u.workload
            w = self.workloads.get(u.workload)
            if w is None:
                yield f"unplaced {u.workload}: unknown workload"
            elif key not in self._demands(w) and not (w.type is WorkloadType.FEDERATED_TRAINING and key in {
                    demand_of(w, site) for site in self.sites}):
                yield f"unplaced {u.workload}: demand {key!r} is not one of {w.name}'s ({', '.join(self._demands(w))})"
            elif key in seen:
                yield f"unplaced {key}: listed twice"
            seen.add(key)

    def _demands(self, w: Workload) -> list[str]:
        """The units the workload is placed as: itself, or a federated trainer group per site holding its data."""
        if w.type is WorkloadType.FEDERATED_TRAINING:
            return sorted({demand_of(w, self.datasets[n].site) for n in w.datasets})
        return [demand_of(w, "")]

    def _placement(self, pl: Placement, w: Workload, site: Site, pool: Pool) -> tuple[list[str], float]:
        if self.memo is None:
            return placement_violations(pl, w, site, pool, self.pair)
        objects = (w, site, pool, self.inventory.policies, *(self.datasets.get(n) for n in w.datasets))
        known = self.memo.get(pl, objects)
        if known is None:
            known = placement_violations(pl, w, site, pool, self.pair)
            self.memo.put(pl, objects, *known)
        return known

    def _workload(self, w: Workload, placed: Sequence[Placement], unplaced: Mapping[str, int],
                  planned_usd: Sequence[float], sums: Mapping[str, PoolSums] | None) -> WorkloadVerdict:
        """Reads the workload, its placements, its unplaced replicas and planned data movements, the
        policies, its datasets, the sites and pools it is placed on and its datasets' holders (and,
        on the spread's slow path, every site and pool). Adds its placements to the pools' `sums`."""
        problems: list[str] = []
        replicas: dict[str, int] = {}
        degraded: set[str] = set()
        domains: set[str] = set()
        sites_used: set[str] = set()
        compute = 0.0
        pools, name, judge = self.pools, w.name, self._placement
        federated = w.type is WorkloadType.FEDERATED_TRAINING
        for pl in placed:
            site, pool = pools[pl.pool]
            violations, cost = judge(pl, w, site, pool)
            if violations:
                problems.extend(violations)
            # one rule for the unit a placement places (demand_of): every placement counts toward its
            # workload, under the one demand it may place; a demand the workload does not have is refused
            key = pl.demand
            expected = demand_of(w, pl.site) if federated else name
            if key != expected:
                problems.append(f"{pl.workload} in {pl.pool}: demand {key!r} is not one of {name}'s (a placement "
                                f"of it at {pl.site} places {expected!r})")
            replicas[key] = replicas.get(key, 0) + pl.replicas
            if pl.degraded:
                degraded.add(key)
            domains.add(pool.failure_domain or site.failure_domain or site.name)
            sites_used.add(site.name)
            compute += cost
            if sums is not None:
                self.pool_rules.add(sums[pl.pool], pl, w)
        movement = 0.0
        keys = self._demands(w) if federated else [name]
        if not federated:
            for site_name in sorted(sites_used) if w.datasets else ():
                for n in w.datasets:
                    movement += read_usd(self.datasets[n], site_name, self.sites) * w.data_passes_per_month
        for key in sorted(replicas.keys() - set(keys)):  # e.g. a federated trainer at a site without its data
            problems.append(f"{key}: {replicas[key]} replicas placed under a demand {w.name} does not have")
        for key in keys:
            wanted = w.fallback.replicas if key in degraded and w.fallback and w.fallback.replicas else w.replicas
            count = replicas.get(key, 0)
            if count + unplaced.get(key, 0) != wanted:
                problems.append(f"{key}: {count} placed + {unplaced.get(key, 0)} unplaced != {wanted} replicas")
        if w.max_usd_per_month is not None and compute + movement > w.max_usd_per_month + TOLERANCE_USD:
            problems.append(f"{w.name}: costs {compute + movement:.2f}, ceiling {w.max_usd_per_month:.2f}")
        spread, searched = ("", False) if w.replicas < 2 else self._spread_problem(
            w, w.name in degraded, replicas.get(w.name, 0), domains)
        if spread:
            problems.append(spread)
        # per workload, so that data cost charged to the wrong workload shows up, not only a wrong total
        if planned_usd or movement:
            says = sum(planned_usd)
            if abs(says - movement) > TOLERANCE_USD * max(1, len(planned_usd)):
                problems.append(f"{w.name}: data movement: plan says {says:.2f}, rules give {movement:.2f}")
        return WorkloadVerdict(tuple(problems), searched) if problems or searched else _CLEAN

    def _spread_problem(self, w: Workload, degraded: bool, replicas: int, domains: set[str]) -> tuple[str, bool]:
        """A fully placed workload with >= 2 replicas spans min(spread, replicas, possible domains) failure
        domains, a pool's own failure_domain counting; spread defaults to spread_fixed_across for the fixed
        tier. Also whether every pool was read (the domains that could host it at all)."""
        if w.replicas < 2 or replicas != w.replicas or degraded:
            return "", False
        wanted = w.spread if w.spread is not None else (
            self.inventory.policies.spread_fixed_across if self.pair.tier(w) == FIXED else 1)
        if len(domains) >= min(wanted, w.replicas):
            return "", False
        # bounded by the failure domains that could host the workload at all (worked out only here:
        # for every workload it would cost workloads × pools rule checks)
        possible = {p.failure_domain or s.failure_domain or s.name for s in self.inventory.sites for p in s.pools
                    if (p.gpus or p.max_gpus or 0) > 0
                    and not pool_violations(self.inventory, w, w.gpu.types, s, p, self.datasets)
                    and not revision2_pool_violations(w, w.gpu.count, s, p, self.datasets)}
        required = min(wanted, w.replicas, len(possible))
        if required >= 2 and len(domains) < required:
            return f"spread: {w.name} spans {len(domains)} failure domains, needs {required}", True
        return "", True

    def _totals(self, plan: Plan, pools: Mapping[str, PoolVerdict]) -> Iterable[str]:
        """The plan's cost parts under its cost model, from the pools' shares (summed in inventory order)."""
        model = self.inventory.policies.cost_model.value
        if plan.cost_model != model:
            yield f"cost model: plan says {plan.cost_model}, the inventory {model}"
        verdicts = pools.values()
        committed_usd = sum(v.committed_usd for v in verdicts)
        pay_per_use = sum(v.pay_per_use_usd for v in verdicts)
        data = sum(m.usd_per_month for m in plan.data_movements)
        total = committed_usd + pay_per_use + data if model == "cash" else sum(v.amortized_usd for v in verdicts) + data
        slack = TOLERANCE_USD * max(1, len(plan.pools) + len(plan.data_movements))
        for label, got_usd, want in (("total", plan.total_usd_per_month, total),
                                     ("committed", plan.committed_usd_per_month, committed_usd),
                                     ("pay-per-use", plan.pay_per_use_usd_per_month, pay_per_use),
                                     ("idle committed", plan.idle_committed_usd_per_month,
                                      sum(v.idle_usd for v in verdicts))):
            if abs(got_usd - want) > slack:
                yield f"{label} cost: plan says {got_usd:.2f}, the rules give {want:.2f}"
        yield from priority_violations(self.inventory, plan, self.pair)


