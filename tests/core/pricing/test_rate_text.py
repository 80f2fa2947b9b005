"""A price per GPU-hour is shown as written, so that the cost beside it can be worked out from it: the enterprise
fleet's recs-realtime-us read "$0.81/GPU-h" beside $587.65 (730 x 0.805), which $0.81 does not give (an audit found
ranker-serve-us alike: 6 x 730 x 0.805 = $3,525.90)."""

from __future__ import annotations

import pytest
from hybridctl.core.placement.planner import plan
from hybridctl.core.pricing.rates import rate_text
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from support.plan_week import AT_PLAN_WEEK


@pytest.mark.parametrize(("rate", "text"), [(1.85, "1.85"), (2.0, "2.00"), (0.805, "0.805"), (1.2345, "1.2345"),
                                            (1.23456, "1.2346"), (1234.5, "1,234.50")])
def test_as_written(rate: float, text: str) -> None:
    assert rate_text(rate) == text


def test_a_reason_gives_the_rate_its_cost_is_worked_from() -> None:
    result = plan(load_inventory(inventories_dir() / "enterprise").inventory, options=AT_PLAN_WEEK)
    placement = next(p for p in result.placements if p.workload == "recs-realtime-us" and p.pool == "use1b-g6-od")
    assert placement.reason.startswith("$0.805/GPU-h")
    assert placement.usd_per_month == pytest.approx(placement.gpus * placement.hours_per_month * 0.805, abs=0.01)
