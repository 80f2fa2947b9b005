"""The work a drill shares across scenarios (the base plan's steps and check, the demand and movement
caches, the placement memo) and its spread over processes change nothing: the report is byte-identical
to running each scenario alone, from scratch, one after the other."""

from __future__ import annotations

import dataclasses
import json
from functools import partial

import pytest
from hybridctl.core.failover.drill import DrillReport, drill, run_scenario
from hybridctl.core.failover.replan import FailoverOptions
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.failover.serialize import drill_to_json
from hybridctl.core.inventory.loader import load_inventory
from hybridctl.core.plan.planner import plan
from hybridctl.drivers.parallel import map_in_processes
from hybridctl.paths import inventories_dir


@pytest.fixture(scope="module")
def enterprise():
    inventory = load_inventory(inventories_dir() / "enterprise").inventory
    # every third scenario: site losses, spot reclaims, capacity cuts and a link down, in a few seconds
    return inventory, plan(inventory), standard_scenarios(inventory)[::3]


def _timeless(report: DrillReport) -> str:
    """The report's JSON with its timings zeroed: they are the only thing allowed to differ."""
    report = dataclasses.replace(report, seconds=0.0,
                                 results=tuple(dataclasses.replace(r, seconds=0.0) for r in report.results))
    return drill_to_json(report)


def test_shared_work_and_processes_give_the_report_of_scenarios_run_alone(enterprise) -> None:
    inventory, base, scenarios = enterprise
    serial = drill(inventory, base, scenarios)
    spread = drill(inventory, base, scenarios, map_scenarios=partial(map_in_processes, workers=2, min_items=1))
    alone = dataclasses.replace(serial, results=tuple(run_scenario(inventory, base, s, FailoverOptions())
                                                      for s in scenarios))
    assert _timeless(spread) == _timeless(serial)
    assert _timeless(alone) == _timeless(serial)
    assert [r["name"] for r in json.loads(_timeless(serial))["scenarios"]] == [s.name for s in scenarios]


def test_runbooks_from_shared_steps_are_the_runbooks_from_fresh_steps(enterprise) -> None:
    """steps_once hands the runbook and the rollback the steps it built for the same plan: the
    runbooks it gives are byte for byte those built with every plan's steps derived afresh."""
    from hybridctl.core.failover.failover import (
        plain_steps,
        plan_failover,
        plan_rollback,
        returning_sites,
        steps_once,
    )
    from hybridctl.core.failover.serialize import runbook_to_json

    inventory, base, scenarios = enterprise
    for scenario in scenarios:
        runbooks = []
        for steps_for in (plain_steps(inventory), steps_once(plain_steps(inventory))):
            runbook, _ = plan_failover(inventory, base, scenario.events, steps_for=steps_for)
            back = plan_rollback(inventory, runbook, runbook.after, steps_for=steps_for,
                                 returning_sites=returning_sites([runbook]))
            runbooks.append((runbook_to_json(runbook), runbook_to_json(back)))
        assert runbooks[0] == runbooks[1], scenario.name
