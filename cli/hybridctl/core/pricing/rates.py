"""What one thing costs a month: a GPU-hour of a pool, a committed pool, a replica, whole machines, a
dataset read from elsewhere.

**Committed pools** (onprem, edge, reserved cloud) cost `capacity × 730 × usd_per_gpu_hour` whether
used or not. **Pay-per-use pools** (cloud on_demand and spot) are bought in whole machines, by
week/machines.py's rule: the always-on replicas (730 hours a month) of a pool share their GPUs' whole
machines all month, any other replica runs machines of its own while it runs. A replica's **amortized** compute is `gpu.count × hours × usd_per_gpu_hour` in any pool: the
showback share and what cost ceilings compare. **Rework** (revision 3): a preemptible replica on spot
runs `1 + interruptions_per_day / 24 × (checkpoint_minutes / 2 + provision_minutes) / 60` times its
hours (each reclaim loses half a checkpoint interval and a new machine's provisioning), and every
figure above that reads hours reads those. **Data movement**: a dataset read at a site that
holds no copy costs `size_gb × passes × egress_usd_per_gb` of the cheapest holder.

The products are written in one order (count × GPUs × hours × price) everywhere, arrays.py's too,
so that every figure is the same float wherever it is worked out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from hybridctl.core.inventory.catalog import InstanceType
from hybridctl.core.inventory.models import (
    DEFAULT_REALTIME_HOURS,
    CapacityType,
    Dataset,
    Pool,
    Site,
    Workload,
)
from hybridctl.core.inventory.schedule import HOURS_PER_MONTH, HOURS_PER_WEEK
from hybridctl.core.pricing.priced import PricedDemand, PricedPool

# whole_machines stays importable from here for the month's prices (planner, explain, feasibility, pools)
from hybridctl.core.week.machines import own_machines
from hybridctl.core.week.machines import whole_machines as whole_machines

# Under the cash cost model, among plans of (nearly) equal cash the lowest amortized compute wins. The
# weight is small beside any real cash difference and large enough for the solver to see (not below its
# tolerances), so the tie-break also orders committed pools by their amortized price.
TIE_BREAK = 1e-4


def catalog_usd_per_gpu_hour(instance: InstanceType, region: str | None = None) -> float:
    """The catalog's on-demand list price of one GPU of an instance type, per hour, in `region` (or the
    nearest region it lists: InstanceType.price_in; the home region's without one)."""
    return instance.price_in(region).usd_per_hour / instance.gpus_per_node


def pool_usd_per_gpu_hour(pool: Pool, instances: Mapping[str, InstanceType], region: str | None = None) -> float:
    """A pool's price per GPU-hour: its own `usd_per_gpu_hour`, else the catalog's list price for its
    instance type in its site's `region` (0 when it has neither)."""
    if pool.usd_per_gpu_hour is not None:
        return pool.usd_per_gpu_hour
    instance = instances.get(pool.instance_type or "")
    return catalog_usd_per_gpu_hour(instance, region) if instance else 0.0


def catalog_price_note(pool: Pool, site: Site, instances: Mapping[str, InstanceType]) -> str:
    """Where a pool's price comes from when the inventory sets none: the catalog's list price, its
    region and date ("" for a pool with its own price). List prices differ by region, so a pool in a
    region the catalog has no price for says which region's it took, and how to give it its own."""
    instance = instances.get(pool.instance_type or "") if pool.usd_per_gpu_hour is None else None
    if instance is None:
        return ""
    price = instance.price_in(site.region)
    listed = f"{price.region} list price of {price.read_on.isoformat()}"
    if site.region is not None and site.region != price.region:
        return f"{listed}; set usd_per_gpu_hour for {site.region}"
    return listed


def is_always_on(hours: float) -> bool:
    """Always-on replicas (730 hours a month) share a pay-per-use pool's machines; others own theirs."""
    return hours == DEFAULT_REALTIME_HOURS


def rework_factor(workload: Workload, site: Site, pool: Pool, hours: float) -> float:
    """What a replica's hours are multiplied by for the work its reclaims lose (spec, Cost: rework):
    a preemptible replica on spot only. An always-on replica already runs, and pays, every hour of the
    month on its pool's shared machines: its reclaims lose work, not extra machine-hours, so it keeps
    its hours (and stays always-on)."""
    if pool.capacity_type is not CapacityType.SPOT or not workload.preemptible or is_always_on(hours):
        return 1.0
    return rework_from(pool.interruptions_per_day, workload.checkpoint_minutes or 0.0,
                       site.provision_minutes_effective)


def rework_from(interruptions_per_day: float, checkpoint_minutes: float, provision_minutes: float) -> float:
    """The rework factor's formula (arrays.rework_factors writes it over arrays in the same order)."""
    return 1.0 + interruptions_per_day / 24 * (checkpoint_minutes / 2 + provision_minutes) / 60


def replica_hours(demand: PricedDemand, pool: PricedPool) -> float:
    """The hours one replica runs in a pool a month, its rework included: what every cost and
    GPU-hour figure of a placement reads."""
    return demand.hours * rework_factor(demand.workload, pool.site, pool.pool, demand.hours)


def committed_pool_usd_per_month(pool: PricedPool) -> float:
    """What a committed pool costs whether used or not, from its declared capacity (0 for pay-per-use)."""
    if not pool.committed:
        return 0.0
    declared = pool.pool.gpus if pool.pool.gpus is not None else (pool.pool.max_gpus or 0)
    return declared * DEFAULT_REALTIME_HOURS * pool.usd_per_gpu_hour


def committed_total_usd_per_month(pools: Iterable[PricedPool]) -> float:
    """The committed pools' cost: a constant of every plan under the cash cost model."""
    return sum(committed_pool_usd_per_month(p) for p in pools)


def machines_usd_per_month(pool: PricedPool, machines: int, hours: float) -> float:
    """Whole machines of a pool, each running `hours` a month."""
    return machines * pool.gpus_per_node * hours * pool.usd_per_gpu_hour


def machine_hours_usd_per_month(pool: PricedPool, machine_hours_per_week: float) -> float:
    """A timed plan's machines of a pay-per-use pool (revision 3): the machine-hours they run in a week of
    the plan, every week of the month (730 / 168 of them)."""
    return machines_usd_per_month(pool, 1, machine_hours_per_week * HOURS_PER_MONTH / HOURS_PER_WEEK)


def gpu_hours_usd_per_month(gpus: int, hours: float, usd_per_gpu_hour: float) -> float:
    """Amortized compute: GPUs × hours × price, with no machine rounding."""
    return gpus * hours * usd_per_gpu_hour


def replica_usd_per_month(demand: PricedDemand, pool: PricedPool) -> float:
    """Amortized compute of one replica: the showback share and what cost ceilings compare."""
    return gpu_hours_usd_per_month(demand.gpu_count, replica_hours(demand, pool), pool.usd_per_gpu_hour)


def replica_cash_usd_per_month(demand: PricedDemand, pool: PricedPool) -> float:
    """Cash one replica adds by itself: nothing in a committed pool or on shared always-on machines,
    its own whole machines otherwise."""
    if pool.committed or is_always_on(demand.hours):
        return 0.0
    return machines_usd_per_month(pool, own_machines(1, demand.gpu_count, pool.gpus_per_node), replica_hours(demand, pool))


def placement_usd_per_month(demand: PricedDemand, pool: PricedPool, replicas: int) -> float:
    """A placement's cost as the plan records it: the replicas' amortized compute, to the cent."""
    return round(replicas * replica_usd_per_month(demand, pool), 2)


def objective_usd_per_month(demand: PricedDemand, pool: PricedPool, replicas: int, cash: bool) -> float:
    """What `replicas` replicas add to the planner's objective by themselves: under cash their own
    machines plus the amortized tie-break (shared always-on machines are priced per pool), else their
    amortized compute."""
    amortized = replicas * replica_usd_per_month(demand, pool)
    return replicas * replica_cash_usd_per_month(demand, pool) + TIE_BREAK * amortized if cash else amortized


def usd_per_gpu_hour_for(demand: PricedDemand, usd_per_month: float) -> float:
    """The change in GPU-hour price that changes one replica's month by `usd_per_month`."""
    return usd_per_month / max(demand.gpu_count * demand.hours, 1e-9)


def egress_rates(sites: Iterable[Site]) -> dict[str, float]:
    """Site -> what moving a GB out of it costs."""
    return {s.name: s.egress_usd_per_gb for s in sites}


def read_usd_per_gb(dataset: Dataset, site: str, egress_usd_per_gb: Mapping[str, float]) -> float:
    """Reading a dataset at a site: free where a copy is held, else the cheapest holder's egress."""
    if site in dataset.holders:
        return 0.0
    return min(egress_usd_per_gb.get(h, 0.0) for h in dataset.holders)


def cheapest_holder(dataset: Dataset, egress_usd_per_gb: Mapping[str, float]) -> str:
    """The holder data is read from when the reading site holds no copy (ties: the primary, then by name)."""
    return min(dataset.holders, key=lambda h: (egress_usd_per_gb.get(h, 0.0), h != dataset.site, h))


def read_usd_per_month(dataset: Dataset, site: str, passes: float, egress_usd_per_gb: Mapping[str, float]) -> float:
    """Reading a dataset `passes` times a month at a site."""
    return dataset.size_gb * passes * read_usd_per_gb(dataset, site, egress_usd_per_gb)


def movement_usd_per_month(dataset: Dataset, site: str, passes: float,
                           egress_usd_per_gb: Mapping[str, float]) -> float:
    """A data movement's cost as the plan records it, to the cent."""
    return round(read_usd_per_month(dataset, site, passes, egress_usd_per_gb), 2)


def egress_usd_by_site(demand: PricedDemand, pools: Sequence[PricedPool], eligible: tuple[int, ...],
                       egress_usd_per_gb: Mapping[str, float]) -> dict[str, float]:
    """Monthly data-movement cost if the demand has a replica at each eligible site (zero ones dropped)."""
    passes = demand.workload.data_passes_per_month
    costs: dict[str, float] = {}
    for site in sorted({pools[p].site.name for p in eligible}):
        usd = sum(read_usd_per_month(d, site, passes, egress_usd_per_gb) for d in demand.remote_datasets)
        if usd > 0:
            costs[site] = usd
    return costs


def rate_text(usd_per_gpu_hour: float) -> str:
    """A price per GPU-hour as written: to the cent, or to the places it has (4 at most, as a plan's pools
    record it). "$0.81/GPU-h" of a $0.805 rate did not give the cost beside it (6 x 730 x 0.805 = $3,525.90)."""
    for digits in (2, 3, 4):
        if abs(round(usd_per_gpu_hour, digits) - usd_per_gpu_hour) < 1e-9:
            return f"{usd_per_gpu_hour:,.{digits}f}"
    return f"{usd_per_gpu_hour:,.4f}"
