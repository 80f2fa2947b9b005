"""What runbook, drill and scenario files hold: a runbook read back is the runbook written, the JSON
keys are the documented ones, and a scenario file's errors point at the offending line."""

from __future__ import annotations

import json
import textwrap

import pytest
from failover_helpers import inventory, onprem, pool, two_sites_inventory, workload
from hybridctl.core.failover.drill import drill
from hybridctl.core.failover.events import Event, EventKind, parse_events
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.scenario import Scenario, ScenarioError, parse_scenario_file
from hybridctl.core.failover.serialize import (
    RunbookFileError,
    drill_to_dict,
    drill_to_json,
    runbook_from_json,
    runbook_to_dict,
    runbook_to_json,
)
from hybridctl.core.memo import RunMemo
from hybridctl.core.placement.planner import plan
from support.failover_runs import failed_over


@pytest.fixture
def fleet():
    """A data centre and an edge store with hosts; `recs` reads data at dc-a and has a recovery objective."""
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=6, uplink=8000,
                hosts=[{"name": "a-1", "address": "10.0.0.1", "pool": "a-l4"}]),
         onprem("edge-1", [pool("e1-l4", "L4", 2, 0.5)], kind="edge", uplink=100,
                hosts=[{"name": "e-1", "address": "10.0.1.1", "pool": "e1-l4"}])],
        [workload("shelf", "realtime_inference", ["L4"], sites=["edge-1"], model_gb=2),
         workload("recs", "realtime_inference", ["L4"], datasets=["catalog"], model_gb=16, rto_minutes=15)],
        datasets=[{"name": "catalog", "site": "dc-a", "size_gb": 5, "sensitivity": "internal"}])


def link_down(inv):
    runbook, _ = failed_over(inv, plan(inv), parse_events(["link-down edge-1"]), steps_for=plain_steps(inv),
                               base_serial=3)
    return runbook


class TestRunbookFile:
    def test_a_runbook_read_back_is_the_runbook_written(self, fleet) -> None:
        runbook = link_down(fleet)
        # the case carries what a round trip could drop: moved work with arrivals and an objective,
        # deferred steps behind the down link, steps that carry workloads and phases
        assert runbook.deferred and any(i.arrivals and i.rto_minutes for i in runbook.impacts)
        assert any(s.workloads for s in runbook.steps) and any(s.step.phase for s in runbook.steps)
        loaded = runbook_from_json(runbook_to_json(runbook), "rb.json")
        assert loaded.steps == runbook.steps
        assert loaded.impacts == runbook.impacts
        assert loaded.deferred == runbook.deferred
        assert (loaded.kind, loaded.incident, loaded.inventory, loaded.events, loaded.base_serial, loaded.notes) == (
            runbook.kind, runbook.incident, runbook.inventory, runbook.events, 3, runbook.notes)

    def test_the_file_is_json_indented_as_the_standard_library_writes_it(self, fleet) -> None:
        runbook = link_down(fleet)
        memo = RunMemo()  # a failover command's
        text = runbook_to_json(runbook, memo)
        assert text == json.dumps(runbook_to_dict(runbook), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        # printed, written to --out and kept with the state: made once in a run
        assert runbook_to_json(runbook, memo) is text
        assert runbook_to_json(runbook) == text  # and alike without a run's memo

    def test_a_step_without_its_digest_is_refused_with_a_way_out(self, fleet) -> None:
        raw = json.loads(runbook_to_json(link_down(fleet)))
        del raw["steps"][0]["digest"]
        with pytest.raises(RunbookFileError) as caught:
            runbook_from_json(json.dumps(raw), "rb.json")
        assert caught.value.message == "rb.json: a step lacks 'digest'"
        assert caught.value.hint == "compute a new runbook with `hybridctl failover`"

    def test_groups_are_listed_with_their_titles_and_steps(self, fleet) -> None:
        runbook = link_down(fleet)
        groups = runbook_to_dict(runbook)["groups"]
        assert groups == [{"name": name, "title": title, "steps": [s.id for s in steps]}
                          for name, title, steps in runbook.groups()]
        assert groups[0]["name"] == "contain" and groups[0]["title"] == "Contain the failure"


class TestDrillFile:
    def test_each_scenario_names_what_moved_degraded_and_was_lost(self) -> None:
        inv = two_sites_inventory()
        report = drill(inv, plan(inv), [Scenario("lost-dc-a", (Event(EventKind.SITE_LOST, "dc-a"),), "dc-a is dark")])
        scenario = json.loads(json.dumps(drill_to_dict(report)))["scenarios"][0]
        assert (scenario["name"], scenario["description"], scenario["events"]) == (
            "lost-dc-a", "dc-a is dark", ["site-lost dc-a"])
        assert scenario["moved"] == ["search"]
        assert scenario["degraded"] == [{"workload": "checkout", "tier": "fixed", "fallback": "1 replica × 1 T4",
                                         "replicas_running": 1, "replicas_wanted": 2}]
        assert [lost["workload"] for lost in scenario["lost"]] == ["reports"]
        assert scenario["rto_misses"] == [{"workload": "search", "tier": "fixed", "outage_minutes": 12.0,
                                           "rto_minutes": 10.0}]
        assert scenario["passed"] is False
        assert drill_to_json(report) == json.dumps(drill_to_dict(report), indent=2, sort_keys=True,
                                                   ensure_ascii=False) + "\n"


class TestScenarioFileLines:
    @pytest.mark.parametrize(("text", "line", "message"), [
        # the name is on the scenario's second line: the error points at the name, not the scenario
        ("""
         version: 1
         scenarios:
           - events: [site-lost dc-a]
             name: Bad Name
         """, 5, "needs a `name` of lowercase letters"),
        # the second scenario is not a mapping: its own line, not the list's
        ("""
         version: 1
         scenarios:
           - {name: x, events: [site-lost dc-a]}
           - site-lost dc-b
         """, 5, "scenario 2 must be a mapping"),
    ])
    def test_errors_point_at_the_offending_line(self, text: str, line: int, message: str) -> None:
        with pytest.raises(ScenarioError) as caught:
            parse_scenario_file(textwrap.dedent(text), "drills.yaml")[0]
        assert caught.value.location is not None and caught.value.location.line == line
        assert message in caught.value.message
