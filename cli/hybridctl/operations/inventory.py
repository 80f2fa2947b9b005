"""validate, schema, classify: what the inventory's own commands read of inventories."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hybridctl.core.placement.tiers import TierDecision
    from hybridctl.render.diagnostics import InventoryReport


def validate_inventories(paths: Sequence[Path]) -> tuple[list[InventoryReport], bool]:
    """Each inventory loaded and checked: its report (errors and warnings, or its size), and whether any path
    could not be used at all (missing, unreadable: a usage error, exit 2)."""
    from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.errors import UsageError
    from hybridctl.render.diagnostics import InventoryReport

    reports: list[InventoryReport] = []
    usage_failed = False
    for path in paths:
        try:
            loaded = load_inventory(path)
        except InvalidInventoryError as invalid:
            reports.append(InventoryReport(str(path), tuple(invalid.diagnostics)))
        except UsageError as error:
            usage_failed = True
            reports.append(InventoryReport(str(path), (
                Diagnostic("usage", error.message, error.location, error.hint),)))
        else:
            inv = loaded.inventory
            reports.append(InventoryReport(str(path), loaded.warnings, len(inv.workloads), len(inv.sites),
                                           sum(len(s.pools) for s in inv.sites)))
    return reports, usage_failed


def inventory_schema() -> dict[str, Any]:
    """The inventory's JSON Schema, with its dialect and its id."""
    from hybridctl.core.inventory.models import Inventory

    document = Inventory.model_json_schema()
    document["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    document["$id"] = "https://hybridctl.dev/schema/inventory-v1.json"
    return document


def classify_inventory(path: Path) -> list[TierDecision]:
    """Each workload's tier, the rule that decided it and the capacity types it may use."""
    from hybridctl.core.placement.tiers import classify
    from hybridctl.drivers.inventory_files import load_inventory

    return classify(load_inventory(path).inventory)
