"""An inventory of bench/inventory_gen.py's seeded generator, written and loaded as the CLI loads it."""

from __future__ import annotations

from pathlib import Path

import yaml
from hybridctl.core.inventory.models import Inventory
from hybridctl.drivers.inventory_files import load_inventory
from inventory_gen import generate


def generated(directory: Path, workloads: int, pools: int, seed: int) -> Inventory:
    path = directory / "inventory.yaml"
    path.write_text(yaml.safe_dump(generate(workloads, pools, seed), sort_keys=False))
    return load_inventory(path).inventory
