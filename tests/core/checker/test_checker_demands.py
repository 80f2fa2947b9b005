"""One rule for a placement's workload (issue 34, finding 2): every placement counts toward its workload,
under the one demand the planner can make for it — the workload itself, or a federated trainer group
`workload@site` placed at that site, which holds its data. Anything else is a violation of the checker
and of the plan-file reader (verify.py), whatever the summaries and the content digest say.

Before, a placement whose demand was `W@x` (or `""` for federated work) was counted under a key the
checker never compared with the replicas wanted: 13 more p5.48xlarge and a queue quota of 128 GPUs
applied with exit 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.checker.verify import plan_file_violations, plan_violations
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES
from support.hostile import placed_copy, resummarize
from support.plan_week import AT_PLAN_WEEK


def planned(name: str) -> tuple[Inventory, dict[str, Any]]:
    inventory = load_inventory(EXAMPLES / name).inventory
    return inventory, json.loads(json.dumps(plan_to_dict(plan(inventory, options=AT_PLAN_WEEK), plan_file=True)))


@pytest.fixture(scope="module")
def cloud_burst() -> tuple[Inventory, dict[str, Any]]:
    return planned("cloud-burst.yaml")


@pytest.fixture(scope="module")
def federated() -> tuple[Inventory, dict[str, Any]]:
    return planned("federated.yaml")


def copy(document: dict[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(document))


TRAINER = "tumour-segmentation-fl"


class TestTheCheckerCountsEveryPlacement:
    def test_the_planners_plans_pass(self, cloud_burst: tuple[Inventory, dict[str, Any]],
                                     federated: tuple[Inventory, dict[str, Any]]) -> None:
        for inventory, document in (cloud_burst, federated):
            assert check_plan(inventory, plan_from_dict(document)) == []
            assert plan_file_violations(plan_from_dict(document)) == []

    def test_more_p5_up_to_the_quota_under_a_demand_the_workload_does_not_have(
            self, cloud_burst: tuple[Inventory, dict[str, Any]]) -> None:
        inventory, document = cloud_burst
        forged = copy(document)
        placed_copy(forged, {"workload": "foundation-pretrain", "pool": "use1-p5-od"},
                    demand="foundation-pretrain@x", replicas=11)
        forged_plan = plan_from_dict(resummarize(forged))
        pool = next(p for p in forged_plan.pools if p.pool == "use1-p5-od")
        # the forgery: the quota filled, 11 machines more than the 5 planned
        assert (pool.used_gpus, pool.machines) == (128, 16)
        problems = check_plan(inventory, forged_plan)
        assert "foundation-pretrain in use1-p5-od: demand 'foundation-pretrain@x' is not one of " \
               "foundation-pretrain's (a placement of it at aws-us-east-1 places 'foundation-pretrain')" in problems
        assert "foundation-pretrain@x: 11 replicas placed under a demand foundation-pretrain does not have" in problems

    def test_a_federated_trainer_without_its_site(self, federated: tuple[Inventory, dict[str, Any]]) -> None:
        inventory, document = federated
        forged = copy(document)
        placed_copy(forged, {"demand": f"{TRAINER}@hospital-berlin"}, demand="", replicas=3)
        problems = check_plan(inventory, plan_from_dict(resummarize(forged)))
        assert f"{TRAINER} in ber-a100: demand '' is not one of {TRAINER}'s (a placement of it at " \
               f"hospital-berlin places '{TRAINER}@hospital-berlin')" in problems
        assert f": 3 replicas placed under a demand {TRAINER} does not have" in " ".join(problems)

    def test_a_federated_trainer_group_placed_at_another_site(self, federated: tuple[Inventory, dict[str, Any]]) -> None:
        inventory, document = federated
        forged = copy(document)
        placed = next(p for p in forged["placements"] if p["demand"] == f"{TRAINER}@hospital-berlin")
        placed["demand"] = f"{TRAINER}@hospital-london"  # its replica now counts for London: Berlin's is missing
        problems = check_plan(inventory, plan_from_dict(resummarize(forged)))
        assert any("is not one of" in p and "hospital-berlin" in p for p in problems), problems

    @pytest.mark.parametrize("demand", ["nobody", "api@dc", "foundation-pretrain@", "support-assistant"])
    def test_unplaced_replicas_count_toward_a_demand_of_their_workload(
            self, cloud_burst: tuple[Inventory, dict[str, Any]], demand: str) -> None:
        inventory, document = cloud_burst
        forged = copy(document)
        forged["unplaced"].append({"workload": "foundation-pretrain", "reason": "x", "replicas": 1, "tier": "burst",
                                   "demand": demand})
        problems = check_plan(inventory, plan_from_dict(resummarize(forged)))
        assert any(f"demand {demand!r} is not one of foundation-pretrain's" in p for p in problems), problems

    def test_an_unplaced_entry_listed_twice(self, cloud_burst: tuple[Inventory, dict[str, Any]]) -> None:
        inventory, document = cloud_burst
        forged = copy(document)
        entry = {"workload": "nightly-eval", "reason": "x", "replicas": 0, "tier": "burst", "demand": "nightly-eval"}
        forged["unplaced"] += [entry, entry]
        assert "unplaced nightly-eval: listed twice" in check_plan(inventory, plan_from_dict(resummarize(forged)))


class TestThePlanFileReaderRefusesItToo:
    """verify.py: with the inventory (apply, synth, drill --plan) and without it (show, cost, report)."""

    @pytest.mark.parametrize(("demand", "named"), [
        ("foundation-pretrain@x", "demand 'foundation-pretrain@x' is not 'foundation-pretrain'"),
        ("", "demand '' is not 'foundation-pretrain'"),
        ("nightly-eval", "demand 'nightly-eval' is not 'foundation-pretrain'"),
    ])
    def test_a_demand_that_is_not_the_workloads(self, cloud_burst: tuple[Inventory, dict[str, Any]], demand: str,
                                                named: str) -> None:
        inventory, document = cloud_burst
        forged = copy(document)
        placed_copy(forged, {"workload": "foundation-pretrain", "pool": "use1-p5-od"}, demand=demand, replicas=1)
        forged_plan = plan_from_dict(resummarize(forged))
        assert any(named in p for p in plan_file_violations(forged_plan)), plan_file_violations(forged_plan)
        assert any(named in p for p in plan_violations(inventory, forged_plan))


def test_a_plan_file_of_every_example_is_accepted(tmp_path: Path) -> None:
    for path in sorted([*EXAMPLES.glob("*.yaml"), EXAMPLES / "enterprise"]):
        inventory = load_inventory(path).inventory
        made = plan_from_dict(json.loads(json.dumps(plan_to_dict(plan(inventory, options=AT_PLAN_WEEK), plan_file=True))))
        assert plan_violations(inventory, made) == [], path
