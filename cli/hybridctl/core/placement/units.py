"""Units: what the MILP places. Identical demands are merged into one unit.

Many workloads in a real fleet are copies of one another (the same service in many
flavours, sweeps of one experiment). Twins are solved as one unit with the replicas summed,
then handed back replica by replica:
- a plain twin (no cost ceiling, no spread of 3 or more, no data movement, no previous
  placement to keep) behaves exactly like the others, so merging is exact;
- twins of spread 2 stay exact with a per-domain cap (see formulation.py);
- twins that pay data movement merge with one integer per site counting the twins that pay
  there. For twins of 1 or 2 replicas that is exact; for 3 or more it is a relaxation (replicas
  left over at several sites may not pack into whole twins), so those are counted by patterns
  when they have few (patterns.py), which is exact. Otherwise the bound stays proven; handing
  replicas back seldom pays more than it counted, and when it does the plan's objective and gap
  say so (and a small model is solved again unmerged: planner.py).
Twins with a cost ceiling that can bind, a spread of 3 or more, or a previous placement stay
apart (a ceiling that no placement can break is left out: _binding_ceilings).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from hybridctl.core.placement.eligibility import Demand, EligibilityIndex, PoolInfo
from hybridctl.core.placement.tiers import Tier
from hybridctl.core.pricing.arrays import pool_prices, pool_rework, rework_factors
from hybridctl.core.pricing.rates import egress_rates, egress_usd_by_site, gpu_hours_usd_per_month
from hybridctl.core.solver.milp import FloatArray, IntArray
from hybridctl.core.week.segments import Week, WorkloadWeek

TIER_WEIGHT = MappingProxyType({Tier.FIXED: 4.0, Tier.BURST: 2.0, Tier.OPPORTUNISTIC: 1.0})



@dataclass(frozen=True)
class PoolTable:
    """Per-pool arrays the formulation reads, resolved once: sites and domains as small integers."""

    price: FloatArray  # usd per GPU-hour
    capacity: IntArray  # GPUs
    site: IntArray  # index into site_names
    domain: IntArray  # index into domain_names: the pool's own failure domain, else its site's
    site_names: tuple[str, ...]
    domain_names: tuple[str, ...]
    per_node: IntArray  # GPUs per machine
    committed: npt.NDArray[np.bool_]  # paid whether used or not (onprem, edge, reserved cloud)
    committed_usd: FloatArray  # a committed pool's cash per month, paid whatever is placed (else 0)

    @classmethod
    def of(cls, pools: list[PoolInfo]) -> PoolTable:
        site_names = tuple(sorted({p.site.name for p in pools}))
        domain_names = tuple(sorted({p.domain for p in pools}))
        site_id = {name: i for i, name in enumerate(site_names)}
        domain_id = {name: i for i, name in enumerate(domain_names)}
        price, committed_usd = pool_prices(pools)
        return cls(price,
                   np.array([p.capacity_gpus for p in pools], dtype=np.int64),
                   np.array([site_id[p.site.name] for p in pools], dtype=np.int64),
                   np.array([domain_id[p.domain] for p in pools], dtype=np.int64),
                   site_names, domain_names,
                   np.array([p.gpus_per_node for p in pools], dtype=np.int64),
                   np.array([p.committed for p in pools], dtype=np.bool_),
                   committed_usd)

    @property
    def max_price(self) -> float:
        return float(self.price.max()) if self.price.size else 1.0


@dataclass
class Unit:
    members: list[Demand]
    eligible: tuple[int, ...]
    gpu_count: int
    hours: float
    tier: Tier
    replicas: int
    spread: int = 1  # failure domains each member's placed replicas must span
    member_replicas: int = 0  # replicas of each member; twins share it when they pay data movement
    egress: FloatArray = field(default_factory=lambda: np.zeros(0))  # per eligible pool: paid once per site used
    ceiling_group: str | None = None  # workloads with max_usd_per_month share one ceiling row
    previous: dict[int, int] = field(default_factory=dict)  # pool index -> replicas in the previous plan
    pools: IntArray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))  # eligible, as an array
    penalty_gpus: int = 0  # GPUs a replica is charged for at most: its own machines in the widest pay-per-use pool
    rework: FloatArray | None = None  # per eligible pool: the hours' rework factor (pricing), None when all 1
    timing: WorkloadWeek | None = None  # when it may run in the plan's week, when the week is timed (week/segments.py)
    # a deferrable unit's hours in the previous plan: pool index -> hours each replica ran in each segment of the
    # week (previous_hours.py keeps them)
    previous_hours: dict[int, tuple[float, ...]] = field(default_factory=dict)

    @property
    def rework_max(self) -> float:
        return float(self.rework.max()) if self.rework is not None and self.rework.size else 1.0

    @property
    def key(self) -> str:
        return self.members[0].key

    @property
    def pays_egress(self) -> bool:
        return bool(self.egress.size) and bool(self.egress.any())

    @property
    def max_egress(self) -> float:
        return float(self.egress.max()) if self.egress.size else 0.0


class _Memo:
    """Per-eligible-list facts shared by the thousands of demands that have the same list."""

    def __init__(self, pools: list[PoolInfo], table: PoolTable) -> None:
        self.pools = pools
        self.table = table
        self.egress_rate = egress_rates(p.site for p in pools)
        self.interruptions, self.provision = pool_rework(pools)
        self._arrays: dict[int, tuple[IntArray, int]] = {}
        self._egress: dict[tuple[object, ...], tuple[FloatArray, tuple[object, ...] | None, float]] = {}
        self._penalty_gpus: dict[tuple[int, int], int] = {}
        self._token_by_id: dict[int, int] = {}
        self._token: dict[tuple[int, ...], int] = {}
        self._alive: list[tuple[int, ...]] = []

    def rework(self, demand: Demand, array: IntArray) -> FloatArray | None:
        """The rework factor of one replica in each eligible pool (None when no pool has any)."""
        if not demand.workload.preemptible or not self.interruptions[array].any():
            return None
        return rework_factors(demand.workload, demand.hours, self.interruptions[array], self.provision[array])

    def token(self, eligible: tuple[int, ...]) -> int:
        """A small integer per distinct eligible list, for the keys below: hashing a list of a
        hundred pools in every key cost more than the rest of the loop at 100,000 demands. Looked
        up by the list's identity (the index hands the same tuple to every demand of a signature),
        then by value, so equal lists get the same integer."""
        found = self._token_by_id.get(id(eligible))
        if found is None:
            found = self._token.setdefault(eligible, len(self._token))
            self._token_by_id[id(eligible)] = found
            self._alive.append(eligible)  # an id stays unique while its object lives
        return found

    def penalty_gpus(self, eligible: tuple[int, ...], array: IntArray, gpu_count: int) -> int:
        key = (self.token(eligible), gpu_count)
        found = self._penalty_gpus.get(key)
        if found is None:
            per_node = self.table.per_node[array]
            rounded = np.where(self.table.committed[array], gpu_count, -(-gpu_count // per_node) * per_node)
            found = self._penalty_gpus[key] = max(int(rounded.max(initial=0)), gpu_count)
        return found

    def arrays(self, eligible: tuple[int, ...]) -> tuple[IntArray, int]:
        """The eligible pools as an array, and how many failure domains they span."""
        token = self.token(eligible)
        found = self._arrays.get(token)
        if found is None:
            array = np.asarray(eligible, dtype=np.int64)
            found = self._arrays[token] = (array, len(np.unique(self.table.domain[array])))
        return found

    def egress(self, demand: Demand, eligible: tuple[int, ...]) -> tuple[FloatArray, tuple[object, ...] | None, float]:
        """Data movement per eligible pool; the datasets read (None when it pays nothing); passes."""
        passes = demand.workload.data_passes_per_month
        # the dataset objects stand for what is read (holders and size) in the memo's key: cheaper
        # to make, and they live as long as the demands do
        key = (self.token(eligible), tuple(map(id, demand.remote_datasets)), passes)
        found = self._egress.get(key)
        if found is None:
            reads = demand.reads()
            by_site = egress_usd_by_site(demand, self.pools, eligible, self.egress_rate) if reads and passes else {}
            array = np.array([by_site.get(self.pools[p].site.name, 0.0) for p in eligible], dtype=np.float64)
            found = self._egress[key] = (array, reads if array.any() else None, passes)
        return found


def build_units(demands: list[Demand], index: EligibilityIndex,
                previous: Mapping[str, Mapping[str, int]] | None = None,
                table: PoolTable | None = None, *, merge_egress: bool = True, week: Week | None = None,
                previous_hours: Mapping[str, Mapping[str, tuple[float, ...]]] | None = None) -> list[Unit]:
    """One unit per demand with side constraints; one merged unit per class of twins. With a timed
    `week`, each unit carries its workload's windows and hours, and twins share them; a deferrable unit the
    previous plan placed, its hours there (`previous_hours`: demand key -> pool -> hours per segment)."""
    pools = index.pools
    table = table if table is not None else PoolTable.of(pools)
    memo = _Memo(pools, table)
    pool_index = {p.name: p.index for p in pools}
    units: list[Unit] = []
    twins: dict[tuple[object, ...], Unit] = {}
    binding = _binding_ceilings(demands, index, memo, table)
    for demand in demands:
        eligible = index.eligible(demand)
        if not eligible:
            continue
        array, domains = memo.arrays(eligible)
        spread = min(demand.spread, demand.replicas, domains)
        egress, reads, passes = memo.egress(demand, eligible)
        paid = reads is not None
        ceiling = demand.workload.name if demand.workload.name in binding else None
        before: dict[int, int] = {}
        for name, n in (previous or {}).get(demand.key, {}).items():
            p = pool_index.get(name)
            if p is not None and p in eligible:
                before[p] = n
        # A spread of 2 stays exact when twins merge: each domain holding at most n(R-1) of the
        # n twins' replicas is exactly what dealing them out round-robin needs (see planner.py).
        timing = week.workloads[demand.workload.name] if week is not None and week.timed else None
        signature: tuple[object, ...] | None = None
        if not (spread > 2 or ceiling or before or (paid and (spread > 1 or not merge_egress))):
            # the checkpoint interval sets a preemptible replica's rework on spot
            signature = (memo.token(eligible), demand.gpu_count, demand.hours,
                         demand.workload.checkpoint_minutes if demand.workload.preemptible else None, demand.tier, spread,
                         demand.replicas if spread > 1 or paid else 0, reads, passes if paid else 0.0,
                         None if timing is None else (timing.segments, timing.weekly_hours, timing.deferrable))
            twin = twins.get(signature)
            if twin is not None:  # most demands of a large fleet: no unit of their own
                twin.members.append(demand)
                twin.replicas += demand.replicas
                continue
        unit = Unit([demand], eligible, demand.gpu_count, demand.hours, demand.tier, demand.replicas,
                    spread, demand.replicas, egress, ceiling, before, array,
                    memo.penalty_gpus(eligible, array, demand.gpu_count), memo.rework(demand, array),
                    timing=timing)
        if before and timing is not None and timing.deferrable:
            ran = (previous_hours or {}).get(demand.key, {})
            unit.previous_hours = {pool_index[name]: hours for name, hours in ran.items()
                                   if pool_index.get(name) in before}
        units.append(unit)
        if signature is not None:
            twins[signature] = unit
    return units


def _binding_ceilings(demands: list[Demand], index: EligibilityIndex, memo: _Memo, table: PoolTable) -> set[str]:
    """Workloads whose cost ceiling some placement could break. Any other ceiling holds whatever
    the plan does (every replica in its dearest eligible pool, each paying the dearest data
    movement, stays below it): its row can never bind, so it is left out and the workload merges
    with its twins, which is exact. Generated and real fleets set most ceilings with headroom."""
    worst: dict[str, float] = {}
    for demand in demands:
        if demand.workload.max_usd_per_month is None:
            continue
        eligible = index.eligible(demand)
        if not eligible:
            continue
        array, _ = memo.arrays(eligible)
        egress, _, _ = memo.egress(demand, eligible)
        rework = memo.rework(demand, array)
        prices = table.price[array] if rework is None else table.price[array] * rework
        dearest = gpu_hours_usd_per_month(demand.gpu_count, demand.hours, float(prices.max()))
        name = demand.workload.name
        worst[name] = worst.get(name, 0.0) + demand.replicas * (dearest + float(egress.max(initial=0.0)))
    return {d.workload.name for d in demands if d.workload.max_usd_per_month is not None
            and worst.get(d.workload.name, 0.0) > d.workload.max_usd_per_month - 1e-6}


def components(units: list[Unit]) -> list[list[int]]:
    """Independent groups of units: those that share no pool (nor a cost ceiling) are solved apart."""
    parent: dict[int, int] = {}

    def find(p: int) -> int:
        while parent.setdefault(p, p) != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)

    for eligible in sorted({unit.eligible for unit in units}):
        for p in eligible[1:]:
            union(eligible[0], p)
    ceiling_pool: dict[str, int] = {}
    for unit in units:
        # federated trainer groups of one workload share its ceiling: keep them together
        if unit.ceiling_group is not None:
            union(ceiling_pool.setdefault(unit.ceiling_group, unit.eligible[0]), unit.eligible[0])
    groups: dict[int, list[int]] = {}
    for i, unit in enumerate(units):
        groups.setdefault(find(unit.eligible[0]), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])


def distribute(unit: Unit, counts: Mapping[int, int], table: PoolTable) -> list[tuple[Demand, int, int]]:
    """Hand a merged unit's replicas back to its member demands: (demand, pool, replicas), when the
    model did not count the twins' patterns (then patterns.py's deal_by_pattern does)."""
    if len(unit.members) == 1:
        return [(unit.members[0], p, n) for p, n in sorted(counts.items()) if n > 0]
    if unit.spread > 1:
        return _deal_round_robin(unit, counts, table)
    if unit.pays_egress:
        return _deal_by_site(unit, counts, table)
    remaining = dict(counts)
    order = sorted(remaining, key=lambda p: (float(table.price[p]), p))
    result: list[tuple[Demand, int, int]] = []
    for member in sorted(unit.members, key=lambda d: d.key):
        need = member.replicas
        for p in order:
            take = min(need, remaining[p])
            if take > 0:
                result.append((member, p, take))
                remaining[p] -= take
                need -= take
            if need == 0:
                break
    return result


def _deal_round_robin(unit: Unit, counts: Mapping[int, int], table: PoolTable) -> list[tuple[Demand, int, int]]:
    """Deal merged twins' replicas, sorted by failure domain, one to each twin in turn.

    Twin i gets slots i, i+n, i+2n...: its replicas stand n apart in the sorted list, so they
    all fall in one domain only if that domain holds more than n(R-1) slots, which the
    formulation forbids. Twins left short (capacity ran out) are the last in the order.
    """
    slots = [p for p in sorted(counts, key=lambda p: (int(table.domain[p]), p)) for _ in range(counts[p])]
    members = sorted(unit.members, key=lambda d: d.key)
    taken: dict[tuple[int, int], int] = {}
    for position, p in enumerate(slots):
        key = (position % len(members), p)
        taken[key] = taken.get(key, 0) + 1
    return [(members[m], p, n) for (m, p), n in sorted(taken.items())]


def split_by_egress(unit: Unit, counts: Mapping[int, int],
                    table: PoolTable) -> tuple[dict[int, list[int]], list[int]]:
    """The unit's replicas as pools, one entry a replica: those in pools that pay data movement by
    site, and those in pools that pay nothing (which any twin may take without changing the cost)."""
    egress_at = dict(zip(unit.eligible, unit.egress.tolist(), strict=True))
    paying: dict[int, list[int]] = {}
    free: list[int] = []
    for p in sorted(counts):
        if egress_at[p] > 0:
            paying.setdefault(int(table.site[p]), []).extend([p] * counts[p])
        else:
            free.extend([p] * counts[p])
    return paying, free


def _deal_by_site(unit: Unit, counts: Mapping[int, int], table: PoolTable) -> list[tuple[Demand, int, int]]:
    """Deal twins that pay data movement so that each pays at as few sites as it can.

    Whole workloads go first (R replicas at one paying site pay once); what is left at each
    paying site is packed best-fit-decreasing into the remaining twins, then replicas at sites
    that pay nothing fill the gaps (splitting those is free). A paying remainder is split only
    when nothing else fits: the one case where the plan pays more than the merged model counted.
    """
    size = unit.member_replicas
    paying, filler = split_by_egress(unit, counts, table)
    bins: list[list[int]] = []
    pieces: list[list[int]] = []
    for site in sorted(paying):
        slots = paying[site]
        whole = len(slots) // size
        bins.extend(slots[i * size:(i + 1) * size] for i in range(whole))
        if len(slots) > whole * size:
            pieces.append(slots[whole * size:])
    spare = len(unit.members) - len(bins)
    partial: list[list[int]] = []
    for piece in sorted(pieces, key=len, reverse=True):
        fits = [b for b in partial if size - len(b) >= len(piece)]
        if fits:
            min(fits, key=lambda b: size - len(b)).extend(piece)
        elif len(partial) < spare:
            partial.append(list(piece))
        else:
            rest = list(piece)
            for b in sorted(partial, key=len):
                take = min(size - len(b), len(rest))
                b.extend(rest[:take])
                rest = rest[take:]
    for p in filler:
        room = next((b for b in partial if len(b) < size), None)
        if room is None:
            room = []
            partial.append(room)
        room.append(p)
    bins.extend(partial)
    members = sorted(unit.members, key=lambda d: d.key)
    result: list[tuple[Demand, int, int]] = []
    for member, slots in zip(members, bins, strict=False):
        for p in sorted(set(slots)):
            result.append((member, p, slots.count(p)))
    return result
