"""A small fleet with a week, worked by hand for failover and drills over the week (issue 31 item 6).

Two owned H100 sites and a rented pool. A daytime service (3 x 4 GPUs, Monday-Friday 08:00-20:00
Amsterdam time), a nightly fine-tune (8 GPUs, 20:00-06:00 UTC, its whole windows) and an evaluation of
100 h a month (8 GPUs, deferrable anywhere in the week). The plan puts two service replicas on dc-b
(8 GPUs, all of it by day) and the rest on dc-a (16 GPUs: 4 by day, 8 at night, the evaluation where
8 are free). Losing dc-b in the daytime leaves 12 free GPUs at dc-a by day: the two service replicas
fit there, and renting is never needed.
"""

from __future__ import annotations

from pathlib import Path

from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.week.segments import parse_iso_week

WEEK_FLEET_FILE = Path(__file__).resolve().parents[1] / "data" / "week" / "week-shop.yaml"
WEEK_FLEET = WEEK_FLEET_FILE.read_text()
# A summer week: Amsterdam is UTC+2, the service runs 06:00-18:00 UTC (in winter, 07:00-19:00 UTC).
SUMMER = "2026-W27"


def week_fleet(text: str = WEEK_FLEET) -> Inventory:
    return load_sources([Source("week-shop.yaml", text)]).inventory


def week_plan(inventory: Inventory, week: str = SUMMER) -> Plan:
    return plan(inventory, options=PlanOptions(week=parse_iso_week(week)))
