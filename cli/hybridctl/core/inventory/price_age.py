"""Catalog prices that have aged: a pool without its own usd_per_gpu_hour is priced from the shipped catalog's
list price, read on a date; read long before the plan, it may no longer be what the provider charges. The
caller names today (the core reads no clock)."""

from __future__ import annotations

from datetime import date

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.diagnostics import Diagnostic, Severity
from hybridctl.core.inventory.documents import Locator
from hybridctl.core.inventory.models import Inventory


def aged_catalog_prices(inventory: Inventory, locator: Locator, today: date) -> list[Diagnostic]:
    """One warning per pool priced from a catalog price read more than policies.catalog_price_max_age_days
    before `today`, at the pool's instance_type line."""
    limit = inventory.policies.catalog_price_max_age_days
    instances = catalog().instances
    found: list[Diagnostic] = []
    for s, site in enumerate(inventory.sites):
        for p, pool in enumerate(site.pools):
            instance = instances.get(pool.instance_type or "")
            if instance is None or pool.usd_per_gpu_hour is not None:
                continue
            age = (today - instance.price_read_on).days
            if age > limit:
                found.append(Diagnostic(
                    "catalog-price-aged", f"pool {pool.name}: priced from the catalog's list price for "
                    f"{instance.name}, read on {instance.price_read_on.isoformat()}, {age} days before "
                    f"{today.isoformat()} (policies.catalog_price_max_age_days: {limit})",
                    locator.location(("sites", s, "pools", p, "instance_type")),
                    "set usd_per_gpu_hour to today's price, or update hybridctl (its catalog)", Severity.WARNING))
    return found
