"""Data movements: each dataset a workload reads from a site that holds no copy of it, once per site
it has replicas at (not once per replica), read from the cheapest holder. Priced by pricing/rates.py."""

from __future__ import annotations

from collections.abc import Iterable

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.eligibility import Demand
from hybridctl.core.plan.model import DataMovement, Placement
from hybridctl.core.pricing.rates import cheapest_holder, egress_rates, movement_usd_per_month


def data_movements(inventory: Inventory, demands: Iterable[Demand], placements: Iterable[Placement]) -> list[DataMovement]:
    """Each dataset read by a workload from another site is paid once per site it has replicas at."""
    egress = egress_rates(inventory.sites)
    # each dataset is read from the cheapest holder; a site holding a copy reads it for free
    sites_of: dict[str, set[str]] = {}
    for placement in placements:
        if placement.replicas > 0:
            sites_of.setdefault(placement.demand or placement.workload, set()).add(placement.site)
    movements: list[DataMovement] = []
    for demand in demands:
        passes = demand.workload.data_passes_per_month
        for site in sorted(sites_of.get(demand.key, ())):
            for dataset in demand.remote_datasets:
                if site in dataset.holders:
                    continue
                gb = dataset.size_gb * passes
                if gb <= 0:
                    continue
                movements.append(DataMovement(demand.workload.name, dataset.name, cheapest_holder(dataset, egress),
                                              site, round(gb, 3), movement_usd_per_month(dataset, site, passes, egress)))
    return sorted(movements, key=lambda m: (m.workload, m.dataset, m.to_site))
