"""The examples that have a week (issue 31, item 7): their owned GPUs are shared over the day, and their
windows save what revision 2's model, where part-time work holds its GPUs all month, would rent."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.week.segments import parse_iso_week
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES, without_windows

WINTER = PlanOptions(week=parse_iso_week("2026-W48"))  # Dublin on UTC, Berlin on UTC+1
TRAIN_SERVE = EXAMPLES / "train-onprem-serve-cloud.yaml"


def _planned(path: str) -> tuple[Inventory, Plan]:
    inventory = load_inventory(EXAMPLES / path).inventory
    return inventory, plan(inventory, options=WINTER)


def _gpu_hours(result: Plan, workload: str, pool: str, hours: range) -> float:
    """GPU-hours a week the workload holds in the pool during the given hours of the week (UTC)."""
    held = 0.0
    for p in result.placements:
        if (p.workload, p.pool) != (workload, pool):
            continue
        for segment, run in zip(result.segments, p.segment_hours, strict=True):
            overlap = sum(1 for h in hours if segment.start_hour <= h < segment.end_hour)
            held += p.replicas * p.gpus_per_replica * run * overlap / segment.hours
    return held


def _rented_gpu_hours(result: Plan) -> float:
    return sum(p.usd_per_month / p.usd_per_gpu_hour for p in result.pools if not p.committed and p.usd_per_gpu_hour)


@pytest.mark.parametrize("path", ["enterprise", "train-onprem-serve-cloud.yaml"])
def test_the_example_has_a_week_and_places_everything(path: str) -> None:
    inventory, result = _planned(path)
    assert sum(w.schedule is not None for w in inventory.workloads) >= 4
    assert result.segments and result.unplaced == ()


def test_the_dublin_a100s_hold_the_notebooks_by_day_and_training_by_night() -> None:
    _, result = _planned(TRAIN_SERVE.name)
    workday = range(8, 19)  # Dublin's working day, in UTC in winter
    days = [range(24 * d + workday.start, 24 * d + workday.stop) for d in range(5)]
    notebooks_by_day = sum(_gpu_hours(result, "ranker-notebooks", "dub-a100", d) for d in days)
    notebooks_all_week = _gpu_hours(result, "ranker-notebooks", "dub-a100", range(168))
    assert notebooks_by_day == pytest.approx(12 * 55) == notebooks_all_week  # 12 GPUs, 55 h a week
    assert sum(_gpu_hours(result, "ranker-train", "dub-a100", d) for d in days) == 0
    assert _gpu_hours(result, "ranker-train", "dub-a100", range(168)) == pytest.approx(16 * 400 * 168 / 730)
    # more work on the pool than it holds at once, every segment within its 32 GPUs
    on_pool = [p for p in result.placements if p.pool == "dub-a100"]
    assert sum(p.gpus for p in on_pool) > 32
    for i, segment in enumerate(result.segments):
        assert sum(p.replicas * p.gpus_per_replica * p.segment_hours[i] for p in on_pool) <= 32 * segment.hours + 1e-6


@pytest.mark.parametrize(("path", "without"), [("enterprise", "rents"), ("train-onprem-serve-cloud.yaml", "waits")])
def test_without_its_windows_the_example_rents_or_waits_for_what_its_owned_gpus_hold_at_other_hours(
        path: str, without: str) -> None:
    inventory, timed = _planned(path)
    untimed = plan(without_windows(inventory), options=WINTER)
    assert untimed.segments == () and timed.unplaced == ()
    if without == "rents":
        assert untimed.unplaced == ()
        assert timed.total_usd_per_month < untimed.total_usd_per_month - 3000
        assert _rented_gpu_hours(timed) < _rented_gpu_hours(untimed) - 900
    else:  # revision 4: the notebooks (opportunistic) wait rather than move the training onto a rented p4de
        assert [(u.workload, u.tier) for u in untimed.unplaced] == [("ranker-notebooks", "opportunistic")]
        assert "usw2-p4de-od" not in {p.pool for p in untimed.placements}
