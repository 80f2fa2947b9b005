"""The Plan: where every workload runs, what it costs, and how sure the solver is.

A plan is a value. `plan()` computes it; `apply` acts on it; the JSON form (serialize.py)
is versioned and byte-stable, so that a reviewed plan file is exactly what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hybridctl.core.pricing import totals

# 2: the cost model (cash or amortized), committed / pay-per-use / data / idle-committed parts, and
# per pool its machines, commitment and cash cost; placements carry their hours.
# 3: the plan's week (inventory revision 3): its ISO week and segments, and each placement's hours per
# segment, written when the plan is timed. Files of format 2 still read (an untimed plan).
# 4: `over_budget` (inventory revision 4, "Budget"): a plan over its monthly budget is written, marked, and
# apply refuses it without --allow-over-budget. Files of format 2 and 3 still read (the mark is derived
# from their totals), but a reader that knew no mark must not take a plan marked over budget for one within.
FORMAT_VERSION = 4
READABLE_FORMAT_VERSIONS = (2, 3, 4)


@dataclass(frozen=True)
class Placement:
    workload: str
    tier: str
    site: str
    pool: str
    replicas: int
    gpus: int  # replicas × GPUs per replica
    usd_per_month: float  # compute only; data movement is listed separately
    reason: str = ""
    demand: str = ""  # the placed unit: the workload, or "workload@site" for a federated trainer group
    gpu_type: str = ""
    gpus_per_replica: int = 0
    degraded: bool = False  # placed in its fallback shape (failover only)
    hours_per_month: float = 0.0  # hours each replica runs; 730 means always on
    # hours each replica runs in each segment of the plan's week (Plan.segments); () in an untimed plan
    segment_hours: tuple[float, ...] = ()


@dataclass(frozen=True)
class PlanSegment:
    """A stretch of the plan's week in which the same workloads may run (hours from Monday 00:00 UTC)."""

    start_hour: float
    end_hour: float

    @property
    def hours(self) -> float:
        return self.end_hour - self.start_hour


# A replica's hours in a segment within this of its length run the segment whole (float noise of the solver's
# hours): such replicas share machines there; the others run their own for their hours.
WHOLE_SEGMENT_TOLERANCE_HOURS = 1e-9


def runs_whole_segment(hours: float, length: float) -> bool:
    return hours >= length - WHOLE_SEGMENT_TOLERANCE_HOURS


@dataclass(frozen=True)
class Unplaced:
    workload: str
    reason: str
    replicas: int = 0  # replicas that found no pool
    tier: str = ""
    demand: str = ""


@dataclass(frozen=True)
class DataMovement:
    workload: str
    dataset: str
    from_site: str
    to_site: str
    gb_per_month: float
    usd_per_month: float


@dataclass(frozen=True)
class PoolUsage:
    site: str
    pool: str
    gpu: str
    capacity_type: str
    capacity_gpus: int
    used_gpus: int
    usd_per_gpu_hour: float
    committed: bool = True  # paid whether used or not (onprem, edge, reserved cloud)
    gpus_per_node: int = 1
    # Machines the plan runs in this pool. Pay-per-use: the always-on machines (shared by the
    # always-on replicas) plus every other replica's own machines, the figure node groups are
    # sized from. Committed: the machines the pool has (its capacity in whole machines).
    machines: int = 0
    always_on_machines: int = 0  # pay-per-use: the machines that run all month
    usd_per_month: float = 0.0  # the pool's cash: committed constant, or its machines' cost
    amortized_usd_per_month: float = 0.0  # the amortized compute of the replicas placed in it
    # Where usd_per_gpu_hour comes from when the inventory sets none (pricing.rates.catalog_price_note),
    # e.g. "us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for eu-west-1"; "" for its own price.
    price_source: str = ""


@dataclass(frozen=True)
class SolverReport:
    status: str  # optimal | time_limit | gap_limit | infeasible | no_demand
    objective: float
    bound: float
    gap: float  # relative, 0.0 when proven optimal
    seconds: float
    method: str = ""  # how it was solved, e.g. "mip" or "lp-fix-mip"
    components: int = 0
    variables: int = 0
    penalty_usd: float = 0.0  # the share of the objective that prices unplaced replicas


@dataclass(frozen=True)
class Plan:
    inventory_name: str
    inventory_digest: str
    placements: tuple[Placement, ...]
    unplaced: tuple[Unplaced, ...]
    data_movements: tuple[DataMovement, ...]
    pools: tuple[PoolUsage, ...]
    solver: SolverReport
    compute_usd_per_month: float
    data_usd_per_month: float
    budget_usd_per_month: float | None = None
    tiers: dict[str, str] = field(default_factory=dict)  # workload -> tier, placed or not
    workload_types: dict[str, str] = field(default_factory=dict)  # workload -> type, for showback
    teams: dict[str, str] = field(default_factory=dict)  # workload -> team, for workloads that name one
    base_serial: int | None = None  # the state serial this plan was made against (plan files only)
    tool_version: str = ""
    cost_model: str = "cash"  # cash | amortized: what total_usd_per_month means
    week: str = ""  # the ISO week the plan is for (2026-W48) when time matters to it (inventory revision 3)
    segments: tuple[PlanSegment, ...] = ()  # the week cut at every window edge; () in an untimed plan

    # the totals are priced by pricing/totals.py, the one place that adds a plan's costs up

    @property
    def committed_usd_per_month(self) -> float:
        """Committed pools, paid whether used or not."""
        return totals.committed_usd_per_month(self)

    @property
    def pay_per_use_usd_per_month(self) -> float:
        """Pay-per-use pools' whole machines."""
        return totals.pay_per_use_usd_per_month(self)

    @property
    def idle_committed_usd_per_month(self) -> float:
        """Committed cost less the amortized compute of the replicas placed in committed pools."""
        return totals.idle_committed_usd_per_month(self)

    @property
    def cash_usd_per_month(self) -> float:
        return totals.cash_usd_per_month(self)

    @property
    def total_usd_per_month(self) -> float:
        """The month's total under the plan's cost model (cash: committed + pay-per-use + data)."""
        return totals.total_usd_per_month(self)

    @property
    def over_budget(self) -> bool:
        """The total above the monthly budget by a cent or more (spec, "Budget"): such a plan fails, is marked
        in its file and shown so, and apply refuses it without --allow-over-budget."""
        budget = self.budget_usd_per_month
        return budget is not None and self.total_usd_per_month > budget + 0.005

