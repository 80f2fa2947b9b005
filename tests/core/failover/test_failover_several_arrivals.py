"""The outage of a workload whose replicas arrive at several sites (issue 34, #12), worked by hand.

`chat` (4 × L4, a 12 GB model, rto_minutes 18) runs on dc-a's four L4s. dc-a is lost, and no one site has
room for all four: two go to dc-b, two to dc-c. Each arrival is back after its site's provisioning and the
model's transfer at its uplink (impact.py):

    dc-b: 20 min + 12 GB × 8,000 Mbit/GB / 800 Mbit/s / 60 = 20 + 2.0 = 22.0 min
    dc-c:  8 min + 12 GB × 8,000 Mbit/GB / 200 Mbit/s / 60 =  8 + 8.0 = 16.0 min

The service is back when the first replicas serve: an outage of 16.0 min, within its 18; every replica runs
after 22.0 min (the recovery). The slower site sorts first (b-l4 before c-l4), so taking the first arrival,
the last, or the sum for the outage each gives another figure.
"""

from __future__ import annotations

import pytest
from failover_helpers import by_pool, inventory, onprem, pool, workload
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.drill import ScenarioResult
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import Status, WorkloadImpact
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.failover.serialize import impact_to_dict
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.render.failover import recovery_text
from support.failover_runs import failed_over


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=5),
         onprem("dc-b", [pool("b-l4", "L4", 2, 1.2)], provision=20, uplink=800),
         onprem("dc-c", [pool("c-l4", "L4", 2, 1.5)], provision=8, uplink=200)],
        [workload("chat", "realtime_inference", ["L4"], replicas=4, model_gb=12, rto_minutes=18)])


def _chat(inv: Inventory, event: str) -> tuple[WorkloadImpact, ScenarioResult]:
    base = plan(inv)
    assert by_pool(base.placements, "chat") == {"a-l4": 4}
    runbook, result = failed_over(inv, base, parse_events([event]), steps_for=plain_steps(inv))
    assert check_plan(result.disruption.inventory, result.after) == []
    [chat] = runbook.impacts
    scenario = ScenarioResult(Scenario(event, tuple(parse_events([event]))), runbook.impacts,
                              runbook.cash.before_usd_per_month, runbook.cash.after_usd_per_month, None,
                              result.after.solver.status, 0.0)
    return chat, scenario


class TestEveryReplicaArrivesElsewhere:
    def test_each_arrival_and_its_time(self, inv: Inventory) -> None:
        chat, _ = _chat(inv, "site-lost dc-a")
        assert (chat.status, chat.before, chat.after) == (Status.MOVED, {"a-l4": 4}, {"b-l4": 2, "c-l4": 2})
        assert [(a.site, a.pool, a.replicas, a.provision_minutes, a.transfer_minutes, a.recovery_minutes)
                for a in chat.arrivals] == [("dc-b", "b-l4", 2, 20.0, 2.0, 22.0), ("dc-c", "c-l4", 2, 8.0, 8.0, 16.0)]

    def test_the_outage_ends_with_the_first_arrival_and_recovery_with_the_last(self, inv: Inventory) -> None:
        chat, scenario = _chat(inv, "site-lost dc-a")
        assert (chat.outage_minutes, chat.recovery_minutes) == (16.0, 22.0)
        assert chat.meets_rto is True  # 16 ≤ 18; the last arrival (22) or the first listed (22) would miss it
        assert (scenario.worst_outage_minutes, scenario.recovery_minutes) == (16.0, 22.0)
        assert scenario.rto_misses == [] and scenario.gate_failures == []
        assert recovery_text(chat) == "back in ~16 min (RTO 18 min: met)"
        shown = impact_to_dict(chat)
        assert (shown["outage_minutes"], shown["recovery_minutes"], shown["meets_rto"]) == (16.0, 22.0, True)
        assert [a["recovery_minutes"] for a in shown["arrivals"]] == [22.0, 16.0]

    def test_a_tighter_objective_is_missed_by_the_first_arrival(self) -> None:
        tight = inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=5),
             onprem("dc-b", [pool("b-l4", "L4", 2, 1.2)], provision=20, uplink=800),
             onprem("dc-c", [pool("c-l4", "L4", 2, 1.5)], provision=8, uplink=200)],
            [workload("chat", "realtime_inference", ["L4"], replicas=4, model_gb=12, rto_minutes=15)])
        chat, scenario = _chat(tight, "site-lost dc-a")
        assert (chat.outage_minutes, chat.meets_rto) == (16.0, False)
        assert [i.workload for i in scenario.rto_misses] == ["chat"]
        assert scenario.gate_failures == ["chat (fixed) is back in ~16 min, over its rto_minutes 15"]


class TestOneReplicaStays:
    """dc-a keeps one L4: one replica keeps serving, three arrive (two at dc-b, the cheaper, one at dc-c)."""

    def test_no_outage_and_recovery_with_the_last_arrival(self, inv: Inventory) -> None:
        chat, scenario = _chat(inv, "capacity a-l4=1")
        assert (chat.status, chat.after) == (Status.MOVED, {"a-l4": 1, "b-l4": 2, "c-l4": 1})
        assert [(a.pool, a.replicas, a.recovery_minutes) for a in chat.arrivals] == [("b-l4", 2, 22.0),
                                                                                     ("c-l4", 1, 16.0)]
        assert (chat.outage_minutes, chat.recovery_minutes, chat.meets_rto) == (None, 22.0, True)
        assert (scenario.worst_outage_minutes, scenario.recovery_minutes) == (None, 22.0)
        assert recovery_text(chat) == "keeps running (RTO 18 min: met)"
