"""The plan file's week (format 3): written for a timed plan, read back equal, checked as untrusted input;
format 2 files still read."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import FORMAT_VERSION
from hybridctl.core.plan.serialize import (
    PlanFileError,
    plan_from_dict,
    plan_from_json,
    plan_to_dict,
    plan_to_json,
)
from support.timed import WEEK, load

DATA = Path(__file__).resolve().parents[2] / "data" / "plan-files"


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return plan_to_dict(plan(load(100), options=WEEK), plan_file=True)


def test_a_timed_plan_round_trips(document: dict[str, Any]) -> None:
    assert document["format_version"] == FORMAT_VERSION and document["week"] == "2026-W48"
    assert document["segments"][:2] == [{"start_hour": 0.0, "end_hour": 8.0}, {"start_hour": 8.0, "end_hour": 20.0}]
    read = plan_from_dict(document, verify_digest=True)
    assert plan_to_dict(read, plan_file=True) == document
    assert all(len(p.segment_hours) == 11 for p in read.placements)


def test_an_untimed_plan_writes_no_week() -> None:
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.paths import inventories_dir

    result = plan(load_inventory(inventories_dir() / "cloud-burst.yaml").inventory)
    document = plan_to_dict(result)
    assert "week" not in document and "segments" not in document
    assert all("segment_hours" not in p for p in document["placements"])
    assert plan_from_json(plan_to_json(result)).segments == ()


def test_format_2_files_still_read() -> None:
    for path in DATA.glob("*.json"):
        raw = json.loads(path.read_text(encoding="utf-8"))
        if raw.get("format_version") == 2:
            assert plan_from_dict(raw, str(path)).segments == ()


@pytest.mark.parametrize(("change", "words"), [
    (lambda d: d.update(week="2026-48"), "is not an ISO week"),
    # a week plan --week refuses: show and cost read 9999-W52, and synth and apply then failed with exit 70
    (lambda d: d.update(week="9999-W52"), "years 1970 to 9998"),
    (lambda d: d.update(week="2025-W53"), "has no week 53"),
    (lambda d: d.pop("week"), "week and segments go together"),
    (lambda d: d["segments"].pop(), "not at the week's end"),
    (lambda d: d["segments"][1].update(start_hour=9.0), "does not follow the previous segment"),
    (lambda d: d["segments"][0].update(end_hour="8"), "hours must be numbers"),
    (lambda d: d["segments"][0].update(extra=1), "expected {start_hour, end_hour}"),
    (lambda d: d["placements"][0]["segment_hours"].pop(), "10 values for 11 segments"),
    (lambda d: d["placements"][0]["segment_hours"].__setitem__(0, -1.0), "is not between 0"),
    (lambda d: d["placements"][0]["segment_hours"].__setitem__(0, 9.0), "is not between 0"),
    (lambda d: d.update(format_version=2), "in a plan of format 3"),
])
def test_the_week_is_untrusted_input(document: dict[str, Any], change: Any, words: str) -> None:
    broken = json.loads(json.dumps(document))
    change(broken)
    with pytest.raises(PlanFileError, match=words.replace("{", r"\{").replace("}", r"\}")):
        plan_from_dict(broken)


def test_each_pool_over_the_week(document: dict[str, Any]) -> None:
    own = next(w for w in document["pool_weeks"] if w["pool"] == "own")
    # the six off-hours segments are alike (only the batch may run there): its 100 h go to them by length,
    # 100/108 of each. Monday 00:00-08:00: 8 x 100/108 GPUs, 16 x 8 - 8 x 8 x 100/108 idle GPU-hours; a day
    # segment: the service's 12, 4 idle for 12 h
    assert (own["gpus"][0], own["idle_committed_gpu_hours"][0]) == pytest.approx((8 * 100 / 108, 128 - 64 * 100 / 108),
                                                                                 abs=1e-5)
    assert (own["gpus"][1], own["idle_committed_gpu_hours"][1]) == (12.0, 48.0)
    assert own["machines"] == [2.0] * 11
    rent = next(w for w in document["pool_weeks"] if w["pool"] == "rent")
    assert rent["gpus"] == rent["machines"] == [0.0] * 11


def test_pool_weeks_are_checked_against_the_placements(document: dict[str, Any]) -> None:
    broken = json.loads(json.dumps(document))
    broken["pool_weeks"][0]["idle_committed_gpu_hours"][0] = 0.0
    with pytest.raises(PlanFileError, match="pool_weeks are not what the placements"):
        plan_from_dict(broken)
