"""Rule 2 with a schedule (spec, "Tiers"): a workload with `schedule` that runs its whole windows is fixed
when it is realtime_inference, and otherwise follows rules 3 and 4 - in the planner and in the checker alike
(the checker read a missing hours_per_month as 730 and called a nightly fine-tune fixed: exit 70)."""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.checker.rules import spec_tier
from hybridctl.core.placement.tiers import classify_workload
from support.week_fleet import WEEK_FLEET, week_fleet, week_plan


@pytest.mark.parametrize(("window", "tier"), [
    ('{days: mon-fri, from: "20:00", to: "06:00"}', "burst"),
    ('{days: mon-sun, from: "00:00", to: "24:00"}', "burst"),  # every hour of the week, still by its schedule
])
def test_a_scheduled_fine_tune_is_burst(window: str, tier: str) -> None:
    text = WEEK_FLEET.replace('[{days: mon-fri, from: "20:00", to: "06:00"}]', f"[{window}]")
    inventory = week_fleet(text)
    nightly = next(w for w in inventory.workloads if w.name == "nightly-train")
    assert classify_workload(nightly, inventory.policies).tier.value == tier
    assert spec_tier(nightly) == tier


def test_a_scheduled_realtime_service_is_fixed() -> None:
    inventory = week_fleet()
    service = next(w for w in inventory.workloads if w.name == "day-service")
    assert classify_workload(service, inventory.policies).tier.value == "fixed" == spec_tier(service)


def test_the_plan_of_a_nightly_fine_tune_passes_the_checker() -> None:
    inventory = week_fleet()
    result = week_plan(inventory)
    assert result.tiers["nightly-train"] == "burst"
    assert check_plan(inventory, result) == []
