"""The placement MILP of one component, as sparse arrays a solver can take directly.

Columns: x[u,p] replicas of unit u in pool p (integer); s[u] replicas left unplaced (integer,
priced by a penalty so that everything that fits is placed); y[u,site] whether u has a
replica at a site that pays data movement (binary); v[u,domain] whether u uses a failure
domain (binary, only for spreads of 3 or more); z[u,p] replicas moved away from a previous
placement (continuous, priced by the move threshold).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import IntEnum

import numpy as np
import numpy.typing as npt

from hybridctl.core.eligibility import PoolInfo
from hybridctl.core.plan.units import TIER_WEIGHT, Unit


class Col(IntEnum):
    PLACE = 0
    UNPLACED = 1
    SITE = 2
    DOMAIN = 3
    MOVED = 4


@dataclass
class Model:
    cost: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    integer: list[bool] = field(default_factory=list)
    kind: list[Col] = field(default_factory=list)
    owner: list[tuple[int, int]] = field(default_factory=list)  # (unit, pool index / -1 / site or domain id)
    rows_lower: list[float] = field(default_factory=list)
    rows_upper: list[float] = field(default_factory=list)
    entries_row: list[int] = field(default_factory=list)
    entries_col: list[int] = field(default_factory=list)
    entries_value: list[float] = field(default_factory=list)
    names: list[str] = field(default_factory=list)  # site/domain names behind SITE/DOMAIN owners

    def column(self, kind: Col, owner: tuple[int, int], cost: float, upper: float, integer: bool) -> int:
        self.cost.append(cost)
        self.lower.append(0.0)
        self.upper.append(upper)
        self.integer.append(integer)
        self.kind.append(kind)
        self.owner.append(owner)
        return len(self.cost) - 1

    def row(self, lower: float, upper: float, terms: list[tuple[int, float]]) -> None:
        r = len(self.rows_lower)
        self.rows_lower.append(lower)
        self.rows_upper.append(upper)
        for col, value in terms:
            self.entries_row.append(r)
            self.entries_col.append(col)
            self.entries_value.append(value)

    def csc(self) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int32], npt.NDArray[np.float64]]:
        """Column-wise sparse matrix: starts, row indices, values."""
        cols = np.asarray(self.entries_col, dtype=np.int64)
        order = np.argsort(cols, kind="stable")
        counts = np.bincount(cols, minlength=len(self.cost))
        starts = np.zeros(len(self.cost) + 1, dtype=np.int32)
        np.cumsum(counts, out=starts[1:])
        rows = np.asarray(self.entries_row, dtype=np.int32)[order]
        values = np.asarray(self.entries_value, dtype=np.float64)[order]
        return starts, rows, values


def penalty_per_replica(unit: Unit, max_price: float) -> float:
    """Dearer than any placement with its data movement, and dearer for higher tiers, so that
    everything that fits is placed and capacity goes to fixed work first. Kept as small as
    that allows: huge penalties beside small costs slow the MIP down."""
    egress = max(unit.egress_usd_by_site.values(), default=0.0)
    return unit.gpu_count * unit.hours * (2.0 * max_price + 1.0) * TIER_WEIGHT[unit.tier] + egress


def formulate(units: list[Unit], pools: list[PoolInfo], ceilings: dict[str, float],
              move_threshold_usd: float) -> Model:
    model = Model()
    max_price = max((p.usd_per_gpu_hour for p in pools), default=1.0)
    capacity_terms: dict[int, list[tuple[int, float]]] = defaultdict(list)
    ceiling_terms: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for u, unit in enumerate(units):
        place: dict[int, int] = {}
        for p in unit.eligible:
            per_replica = unit.gpu_count * unit.hours * pools[p].usd_per_gpu_hour
            col = model.column(Col.PLACE, (u, p), per_replica, float(unit.replicas), True)
            place[p] = col
            capacity_terms[p].append((col, float(unit.gpu_count)))
            if unit.ceiling_group is not None:
                ceiling_terms[unit.ceiling_group].append((col, per_replica))
        unplaced = model.column(Col.UNPLACED, (u, -1), penalty_per_replica(unit, max_price), float(unit.replicas), True)
        model.row(unit.replicas, unit.replicas, [*((c, 1.0) for c in place.values()), (unplaced, 1.0)])
        by_site: dict[str, list[int]] = defaultdict(list)
        by_domain: dict[str, list[int]] = defaultdict(list)
        for p, col in place.items():
            by_site[pools[p].site.name].append(col)
            by_domain[pools[p].domain].append(col)
        for site, usd in sorted(unit.egress_usd_by_site.items()):
            model.names.append(site)
            y = model.column(Col.SITE, (u, len(model.names) - 1), usd, 1.0, True)
            model.row(-np.inf, 0.0, [*((c, 1.0) for c in by_site[site]), (y, -float(unit.replicas))])
            if unit.ceiling_group is not None:
                ceiling_terms[unit.ceiling_group].append((y, usd))
        if unit.spread > 1:
            # no failure domain may hold more than R - (k - 1) of a workload's replicas (n(R - 1) for
            # n merged twins with k = 2); for k = 2 this alone is exact
            cap = float(len(unit.members) * (unit.member_replicas - unit.spread + 1))
            for domain in sorted(by_domain):
                model.row(-np.inf, cap, [(c, 1.0) for c in by_domain[domain]])
            if unit.spread > 2:
                used: list[int] = []
                for domain in sorted(by_domain):
                    model.names.append(domain)
                    v = model.column(Col.DOMAIN, (u, len(model.names) - 1), 0.0, 1.0, True)
                    model.row(0.0, np.inf, [*((c, 1.0) for c in by_domain[domain]), (v, -1.0)])
                    used.append(v)
                model.row(float(unit.spread), np.inf, [(v, 1.0) for v in used])
        for p, before in sorted(unit.previous.items()):
            moved = model.column(Col.MOVED, (u, p), move_threshold_usd, float(before), False)
            model.row(float(before), np.inf, [(place[p], 1.0), (moved, 1.0)])
    for p in sorted(capacity_terms):
        model.row(-np.inf, float(pools[p].capacity_gpus), capacity_terms[p])
    for group in sorted(ceiling_terms):
        model.row(-np.inf, ceilings[group], ceiling_terms[group])
    return model
