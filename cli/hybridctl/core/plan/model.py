"""The Plan: where every workload runs, what it costs, and how sure the solver is.

A plan is a value. `plan()` computes it; `apply` acts on it; the JSON form (serialize.py)
is versioned and byte-stable, so that a reviewed plan file is exactly what runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

FORMAT_VERSION = 1


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
    base_serial: int | None = None  # the state serial this plan was made against (plan files only)
    tool_version: str = ""

    @property
    def total_usd_per_month(self) -> float:
        return round(self.compute_usd_per_month + self.data_usd_per_month, 2)

    def placements_of(self, workload: str) -> list[Placement]:
        return [p for p in self.placements if p.workload == workload]
