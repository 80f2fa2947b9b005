"""The inventory digest a plan records: what the inventory means, not how it is written."""

from __future__ import annotations

import hashlib

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.jsontext import dumps_canonical_ascii


def inventory_digest(inventory: Inventory) -> str:
    """A digest of what the inventory means, not how it is written: comments and layout don't count."""
    canonical = dumps_canonical_ascii(inventory.model_dump(mode="json"))  # json.dumps' bytes, sorted, compact
    return "sha256:" + hashlib.sha256(canonical).hexdigest()
