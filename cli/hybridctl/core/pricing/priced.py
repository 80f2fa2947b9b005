"""What pricing reads of the things it prices, as protocols: the planner's pools and demands
(eligibility.py) and a plan's parts (model.py); arrays.py has the solver's pool arrays' (units.py). Those modules
call pricing; pricing names only what it reads of them, so it imports none of them. No numpy here: a plan file is totalled without it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # annotations only: `plan` and `cost` import showback at start-up, and the models are heavy
    from hybridctl.core.inventory.models import Dataset, Pool, Site, Workload


class PricedPool(Protocol):
    """A pool as the planner sees it (eligibility.PoolInfo)."""

    @property
    def site(self) -> Site: ...
    @property
    def pool(self) -> Pool: ...
    @property
    def usd_per_gpu_hour(self) -> float: ...
    @property
    def gpus_per_node(self) -> int: ...
    @property
    def committed(self) -> bool: ...


class PricedDemand(Protocol):
    """What one replica of a workload needs (eligibility.Demand)."""

    @property
    def workload(self) -> Workload: ...
    @property
    def gpu_count(self) -> int: ...
    @property
    def hours(self) -> float: ...
    @property
    def remote_datasets(self) -> tuple[Dataset, ...]: ...


class PricedPart(Protocol):
    """A placement or a data movement of a plan, with the cost the plan records for it."""

    @property
    def workload(self) -> str: ...
    @property
    def usd_per_month(self) -> float: ...


class PoolCost(Protocol):
    """A pool of a plan with its cash and the amortized compute placed in it (model.PoolUsage)."""

    @property
    def committed(self) -> bool: ...
    @property
    def usd_per_month(self) -> float: ...
    @property
    def amortized_usd_per_month(self) -> float: ...


class PricedPlan(Protocol):
    """What a plan's totals are added up from (model.Plan)."""

    @property
    def cost_model(self) -> str: ...
    @property
    def pools(self) -> Sequence[PoolCost]: ...
    @property
    def compute_usd_per_month(self) -> float: ...
    @property
    def data_usd_per_month(self) -> float: ...
