"""The week strip of a timed plan (render/week.py)."""

from __future__ import annotations

from hybridctl.core.placement.planner import plan
from hybridctl.render.week import week_strip_lines
from support.timed import WEEK, load


def test_each_pool_in_use_three_hours_a_cell() -> None:
    head, own = week_strip_lines(plan(load(100), options=WEEK))
    assert head.startswith("week 2026-W48 (UTC, 11 segments)") and head.rstrip().endswith("Sun")
    label, cells = own[:own.index("GPUs") + 4], own[own.index("GPUs") + 4:].strip()
    assert label == "own 16 GPUs" and len(cells) == 56
    # Monday 00:00-03:00: the batch's 8 of 16 GPUs; 09:00-12:00: the service's 12 of 16
    assert (cells[0], cells[3]) == ("▄", "▆")


def test_an_untimed_plan_has_no_strip() -> None:
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.paths import inventories_dir

    assert week_strip_lines(plan(load_inventory(inventories_dir() / "cloud-burst.yaml").inventory)) == []


def test_a_pool_holding_a_sliver_of_its_gpus_shows_it() -> None:
    # the enterprise fleet's euc1-p5-od holds 2 of its 128 GPUs in the working day: a blank cell read as nothing held
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.paths import inventories_dir

    lines = week_strip_lines(plan(load_inventory(inventories_dir() / "enterprise").inventory, options=WEEK))
    [row] = [line for line in lines if line.startswith("euc1-p5-od ")]
    cells = row[len(lines[0]) - 56:]
    assert len(cells) == 56 and " " not in cells and "▁" in cells
