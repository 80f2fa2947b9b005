"""Monthly costs by the spec: compute per replica, and data movement once per remote site."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from hybridctl.core.eligibility import Demand
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.model import DataMovement, Placement


def inventory_digest(inventory: Inventory) -> str:
    """A digest of what the inventory means, not how it is written: comments and layout don't count."""
    canonical = json.dumps(inventory.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def data_movements(inventory: Inventory, demands: Iterable[Demand], placements: Iterable[Placement]) -> list[DataMovement]:
    """Each dataset read by a workload from another site is paid once per site it has replicas at."""
    egress = {s.name: s.egress_usd_per_gb for s in inventory.sites}
    sites_of: dict[str, set[str]] = {}
    for placement in placements:
        if placement.replicas > 0:
            sites_of.setdefault(placement.demand or placement.workload, set()).add(placement.site)
    movements: list[DataMovement] = []
    for demand in demands:
        passes = demand.workload.data_passes_per_month
        for site in sorted(sites_of.get(demand.key, ())):
            for dataset in demand.remote_datasets:
                if dataset.site == site:
                    continue
                gb = dataset.size_gb * passes
                if gb <= 0:
                    continue
                movements.append(DataMovement(demand.workload.name, dataset.name, dataset.site, site,
                                              round(gb, 3), round(gb * egress[dataset.site], 2)))
    return sorted(movements, key=lambda m: (m.workload, m.dataset, m.to_site))
