"""Units: what the MILP places. Identical plain demands are merged into one unit.

Many workloads in a real fleet are copies of one another (the same service in many
flavours, sweeps of one experiment). A demand with no per-workload constraint — no cost
ceiling, no failure-domain spread, no paid data movement, no previous placement to keep —
behaves exactly like its twins, so they are solved as one unit with the replicas summed,
then handed back replica by replica. This is exact, not a heuristic.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from hybridctl.core.eligibility import Demand, EligibilityIndex, PoolInfo
from hybridctl.core.tiers import Tier

TIER_WEIGHT = {Tier.FIXED: 4.0, Tier.BURST: 2.0, Tier.OPPORTUNISTIC: 1.0}


@dataclass
class Unit:
    members: list[Demand]
    eligible: tuple[int, ...]
    gpu_count: int
    hours: float
    tier: Tier
    replicas: int
    spread: int = 1  # failure domains each member's placed replicas must span
    member_replicas: int = 0  # replicas of each member; twins share it
    egress_usd_by_site: dict[str, float] = field(default_factory=dict)  # paid once per site used
    ceiling_group: str | None = None  # workloads with max_usd_per_month share one ceiling row
    previous: dict[int, int] = field(default_factory=dict)  # pool index -> replicas in the previous plan

    @property
    def key(self) -> str:
        return self.members[0].key


def egress_usd_by_site(demand: Demand, pools: list[PoolInfo], eligible: tuple[int, ...],
                       sites: Mapping[str, float]) -> dict[str, float]:
    """Monthly data-movement cost if the demand has a replica at each eligible site (zero ones dropped)."""
    passes = demand.workload.data_passes_per_month
    costs: dict[str, float] = {}
    for site in {pools[p].site.name for p in eligible}:
        usd = sum(d.size_gb * passes * sites[d.site] for d in demand.remote_datasets if d.site != site)
        if usd > 0:
            costs[site] = usd
    return costs


def build_units(demands: list[Demand], index: EligibilityIndex, spread_policy: int,
                previous: Mapping[str, Mapping[str, int]] | None = None) -> list[Unit]:
    """One unit per demand with side constraints; one merged unit per class of plain twins."""
    pools = index.pools
    pool_index = {p.name: p.index for p in pools}
    egress = {p.site.name: p.site.egress_usd_per_gb for p in pools}
    units: list[Unit] = []
    twins: dict[tuple[object, ...], Unit] = {}
    for demand in demands:
        eligible = index.eligible(demand)
        if not eligible:
            continue
        domains = len({pools[p].domain for p in eligible})
        spread = min(spread_policy, demand.replicas, domains) if demand.tier is Tier.FIXED else 1
        paid = egress_usd_by_site(demand, pools, eligible, egress)
        ceiling = demand.workload.name if demand.workload.max_usd_per_month is not None else None
        before = {pool_index[name]: n for name, n in (previous or {}).get(demand.key, {}).items()
                  if name in pool_index and pool_index[name] in eligible}
        unit = Unit([demand], eligible, demand.gpu_count, demand.hours, demand.tier, demand.replicas,
                    spread, demand.replicas, paid, ceiling, before)
        # A spread of 2 stays exact when twins merge: each domain holding at most n(R-1) of the
        # n twins' replicas is exactly what dealing them out round-robin needs (see _distribute).
        if spread > 2 or paid or ceiling or before:
            units.append(unit)
            continue
        signature = (eligible, demand.gpu_count, demand.hours, demand.tier, spread,
                     demand.replicas if spread > 1 else 0)
        twin = twins.get(signature)
        if twin is None:
            twins[signature] = unit
            units.append(unit)
        else:
            twin.members.append(demand)
            twin.replicas += demand.replicas
    return units


def components(units: list[Unit]) -> list[list[int]]:
    """Independent groups of units: those that share no pool can be solved separately."""
    parent: dict[int, int] = {}

    def find(p: int) -> int:
        while parent.setdefault(p, p) != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    for unit in units:
        first = find(unit.eligible[0])
        for p in unit.eligible[1:]:
            root = find(p)
            if root != first:
                parent[root] = first
    groups: dict[int, list[int]] = {}
    ceiling_root: dict[str, int] = {}
    for i, unit in enumerate(units):
        root = find(unit.eligible[0])
        # federated trainer groups of one workload share its ceiling: keep them together
        if unit.ceiling_group is not None:
            other = ceiling_root.setdefault(unit.ceiling_group, root)
            if other != root:
                parent[find(root)] = find(other)
    for i, unit in enumerate(units):
        groups.setdefault(find(unit.eligible[0]), []).append(i)
    return sorted(groups.values(), key=lambda g: g[0])
