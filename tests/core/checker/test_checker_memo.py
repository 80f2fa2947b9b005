"""The checker's placement memo (drills): a verdict is reused only while every object it was
worked out from is the same; any changed workload, pool or placement is checked again."""

from __future__ import annotations

import dataclasses

from hybridctl.core.checker.check import PlacementMemo, check_plan
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES
from support.plan_week import AT_PLAN_WEEK


def _planned():  # type: ignore[no-untyped-def]
    inventory = load_inventory(EXAMPLES / "train-onprem-serve-cloud.yaml").inventory
    base = plan(inventory, options=AT_PLAN_WEEK)
    memo = PlacementMemo()
    assert check_plan(inventory, base, memo) == []
    return inventory, base, memo


def test_a_changed_workload_is_checked_again() -> None:
    inventory, base, memo = _planned()
    placed = base.placements[0]
    others = [s.name for s in inventory.sites if s.name != placed.site]
    workloads = [w.model_copy(update={"sites": others}) if w.name == placed.workload else w
                 for w in inventory.workloads]
    barred = inventory.model_copy(update={"workloads": workloads})
    expected = check_plan(barred, base)
    assert any("allow-list" in v for v in expected)
    assert check_plan(barred, base, memo) == expected


def test_a_changed_pool_or_placement_is_checked_again() -> None:
    inventory, base, memo = _planned()
    placed = base.placements[0]
    repriced = dataclasses.replace(placed, usd_per_month=placed.usd_per_month + 1000)
    edited = dataclasses.replace(base, placements=(repriced, *base.placements[1:]))
    assert check_plan(inventory, edited, memo) == check_plan(inventory, edited) != []
    sites = [s.model_copy(update={"pools": [p.model_copy(update={"gpu": "no-such-gpu"}) for p in s.pools]})
             if s.name == placed.site else s for s in inventory.sites]
    moved = inventory.model_copy(update={"sites": sites})
    expected = check_plan(moved, base)
    assert any("GPU no-such-gpu" in v for v in expected)
    assert check_plan(moved, base, memo) == expected
