"""rates.py's prices as the solver's arrays: one entry per placement column (or per pool), worked out
with numpy over all of them at once (at 10,000 workloads a Python step per column costs more than
the solver). The products are in rates.py's order, so that a column's price is the float rates.py
gives for the same replica."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from hybridctl.core.inventory.models import DEFAULT_REALTIME_HOURS, CapacityType, Workload
from hybridctl.core.inventory.schedule import HOURS_PER_WEEK
from hybridctl.core.pricing.priced import PricedPool
from hybridctl.core.pricing.rates import TIE_BREAK, committed_pool_usd_per_month
from hybridctl.core.solver.milp import FloatArray, IntArray
from hybridctl.core.week.machines import whole_machines


class PoolArrays(Protocol):
    """The pools as the solver's arrays (units.PoolTable)."""

    @property
    def price(self) -> npt.NDArray[np.float64]: ...
    @property
    def per_node(self) -> npt.NDArray[np.int64]: ...
    @property
    def committed(self) -> npt.NDArray[np.bool_]: ...
    @property
    def committed_usd(self) -> npt.NDArray[np.float64]: ...




@dataclass(frozen=True)
class ColumnCosts:
    """Per placement column: the objective's price of one replica, its amortized compute, and what it adds to
    the month's total under the cost model (the objective's price without the tie-break: what a budget bounds)."""

    objective: FloatArray
    amortized: FloatArray
    spend: FloatArray


def pool_prices(pools: Sequence[PricedPool]) -> tuple[FloatArray, FloatArray]:
    """Per pool: its price per GPU-hour, and a committed pool's cash per month (else 0)."""
    return (np.array([p.usd_per_gpu_hour for p in pools], dtype=np.float64),
            np.array([committed_pool_usd_per_month(p) for p in pools], dtype=np.float64))


def pool_rework(pools: Sequence[PricedPool]) -> tuple[FloatArray, FloatArray]:
    """Per pool: the spot reclaims a day (0 for any other capacity type: no rework there) and its
    site's provision_minutes, the pool's side of rates.rework_factor."""
    return (np.array([p.pool.interruptions_per_day if p.pool.capacity_type is CapacityType.SPOT else 0.0
                      for p in pools], dtype=np.float64),
            np.array([p.site.provision_minutes_effective for p in pools], dtype=np.float64))


def rework_factors(workload: Workload, hours: float, interruptions: FloatArray, provision: FloatArray) -> FloatArray:
    """rates.rework_factor of one workload's replica in each of these pools (their pool_rework entries),
    the same floats: 1 wherever the pool has no reclaims, the workload is not preemptible or it is always on."""
    if not workload.preemptible or hours == DEFAULT_REALTIME_HOURS:
        return np.ones(interruptions.size)
    # rates.rework_from's operations in its order, so that each entry is its float
    lost = 1.0 + interruptions / 24 * ((workload.checkpoint_minutes or 0.0) / 2 + provision) / 60
    factors: FloatArray = np.where(interruptions > 0, lost, 1.0)
    return factors


def always_on(hours: FloatArray) -> npt.NDArray[np.bool_]:
    """Which columns' replicas run all month (rates.is_always_on)."""
    return np.asarray(hours == DEFAULT_REALTIME_HOURS, dtype=np.bool_)


def column_costs(gpus: FloatArray, hours: FloatArray, pools: IntArray, table: PoolArrays, cash: bool,
                 shared: npt.NDArray[np.bool_] | None = None) -> ColumnCosts:
    """What one replica costs in each column, under the cost model: rates.objective_usd_per_month and
    rates.replica_usd_per_month of one replica. `shared` says which columns' replicas share a pay-per-use
    pool's machines (whose price is the machines' own column); default: those that run all month."""
    amortized = gpus * hours * table.price[pools]
    if not cash:
        return ColumnCosts(amortized, amortized, amortized)
    per_node = table.per_node[pools].astype(np.float64)
    own_machines = whole_machines(gpus, per_node) * per_node * hours * table.price[pools]
    pays_own = ~table.committed[pools] & ~(always_on(hours) if shared is None else shared)
    spend = np.where(pays_own, own_machines, 0.0)
    return ColumnCosts(spend + TIE_BREAK * amortized, amortized, spend)


def machine_usd_per_month(table: PoolArrays, pools: IntArray, cash: bool) -> FloatArray:
    """One always-on machine of each of these pay-per-use pools for the month (free under the amortized
    model)."""
    if not cash:
        return np.zeros(pools.size)
    return table.per_node[pools] * float(DEFAULT_REALTIME_HOURS) * table.price[pools]


def segment_machine_usd_per_month(table: PoolArrays, pools: IntArray, segment_hours: FloatArray,
                                  cash: bool) -> FloatArray:
    """One machine of each of these pay-per-use pools running through a segment of the typical week,
    every week of the month (segment hours x 730 / 168); free under the amortized model."""
    return machine_usd_per_month(table, pools, cash) * segment_hours / HOURS_PER_WEEK


def committed_constant(table: PoolArrays, pools: IntArray, cash: bool) -> float:
    """What these committed pools cost whatever is placed: the model's constant under cash (else 0)."""
    return float(table.committed_usd[pools].sum()) if cash else 0.0
