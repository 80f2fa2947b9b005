"""cost: showback of a plan file, or of the plan an inventory gets (commands/plan_cmds.py renders it)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

# light (an enum and dataclasses): the --by option's type, imported by the command when --help is built
from hybridctl.core.pricing.showback import CostDimension, CostLine

if TYPE_CHECKING:
    from hybridctl.core.plan.model import Plan

__all__ = ["CostDimension", "CostLine", "cost_by"]


def cost_by(source: Path, by: CostDimension, week_text: str | None) -> tuple[Plan, list[CostLine]]:
    """The plan (read, or made for --week's week) and its monthly cost broken down by `by`."""
    from hybridctl.core.pricing.showback import showback
    from hybridctl.operations.common import looks_like_plan, read_plan
    from hybridctl.operations.moments import week_of_source

    cost_week = week_of_source(week_text, source, what="costs")
    if looks_like_plan(source):
        planned = read_plan(source)
    else:
        from hybridctl.drivers.inventory_files import load_inventory
        from hybridctl.operations.week import planned as planned_for

        planned = planned_for(load_inventory(source).inventory, cost_week)
    return planned, showback(planned, by)
