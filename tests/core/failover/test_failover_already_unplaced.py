"""A failover of a plan that already left work unplaced (issue 34, #12), worked by hand.

dc-a: a-l4 (2 L4, reserved, $1.00/GPU-h); dc-b: b-t4 (2 T4, $0.50) and b-a10 (2 A10G, $0.60); aws-c: c-l4
(on-demand g6.xlarge, one L4 a machine, $2.00). The applied plan (cash cost model):

    web      fixed, 2 × L4          a-l4 × 2
    reports  burst, 1 × T4, 100 h   b-t4 × 1
    api      fixed, 3 × A10G        b-a10 × 2, 1 replica unplaced (b-a10 holds 2)
    sweep    opportunistic, 1 × 2 T4  unplaced (b-t4 has 1 T4 left)

Committed cash: a-l4 2 × 730 × 1.00 = 1460, b-t4 2 × 730 × 0.50 = 730, b-a10 2 × 730 × 0.60 = 876: $3,066.
The work already unplaced is no loss of an incident; the healthy work stays where it is (api is
replanned, being fixed work left short, and must still not move); the cash change adds up.
"""

from __future__ import annotations

import pytest
from failover_helpers import by_pool, cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.drill import ScenarioResult
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import Status
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.replan import Replan
from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from support.failover_runs import failed_over


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)], provision=5),
         onprem("dc-b", [pool("b-t4", "T4", 2, 0.5), pool("b-a10", "A10G", 2, 0.6)], provision=5),
         cloud("aws-c", [cloud_pool("c-l4", "L4", "g6.xlarge", 4, 2.0, "on_demand")], provision_minutes=10)],
        [workload("web", "realtime_inference", ["L4"], replicas=2, rto_minutes=30),
         workload("reports", "batch_inference", ["T4"], hours_per_month=100, tier="burst"),
         workload("api", "realtime_inference", ["A10G"], replicas=3, rto_minutes=20),
         workload("sweep", "batch_inference", ["T4"], count=2, tier="opportunistic", hours_per_month=100)],
        cost_model="cash")


@pytest.fixture(scope="module")
def base(inv: Inventory) -> Plan:
    applied = plan(inv)
    placed = {p.workload: by_pool(applied.placements, p.workload) for p in applied.placements}
    assert placed == {"web": {"a-l4": 2}, "reports": {"b-t4": 1}, "api": {"b-a10": 2}}
    assert [(u.workload, u.tier, u.replicas) for u in applied.unplaced] == [("api", "fixed", 1),
                                                                           ("sweep", "opportunistic", 1)]
    return applied


def _failover(inv: Inventory, base: Plan, event: str) -> tuple[Runbook, Replan]:
    runbook, result = failed_over(inv, base, parse_events([event]), steps_for=plain_steps(inv))
    assert check_plan(result.disruption.inventory, result.after) == []
    return runbook, result


class TestASiteLostElsewhere:
    """dc-a is lost: web moves to aws-c; nothing else may change."""

    def test_healthy_work_does_not_move(self, inv: Inventory, base: Plan) -> None:
        _, result = _failover(inv, base, "site-lost dc-a")
        assert by_pool(result.after.placements, "web") == {"c-l4": 2}
        # api (fixed, left short, so replanned) and reports keep the very placements they had
        kept = [p for p in base.placements if p.workload != "web"]
        assert [p for p in result.after.placements if p.workload != "web"] == kept

    def test_the_work_unplaced_before_is_unplaced_as_before_and_no_loss(self, inv: Inventory, base: Plan) -> None:
        runbook, result = _failover(inv, base, "site-lost dc-a")
        assert result.after.unplaced == base.unplaced  # the same replicas, for the same reasons
        assert [(i.workload, i.status) for i in runbook.impacts] == [("web", Status.MOVED)]
        scenario = ScenarioResult(Scenario("site-lost-dc-a", tuple(parse_events(["site-lost dc-a"]))),
                                  runbook.impacts, runbook.cash.before_usd_per_month,
                                  runbook.cash.after_usd_per_month, None, result.after.solver.status, 0.0)
        assert scenario.lost == [] and scenario.unexpected_fixed_losses == [] and scenario.gate_failures == []

    def test_the_cash_adds_up(self, inv: Inventory, base: Plan) -> None:
        runbook, _ = _failover(inv, base, "site-lost dc-a")
        cash = runbook.cash
        # web on c-l4: 2 machines × 730 h × $2.00 = $2,920 bought by use; the committed $3,066 still paid,
        # a-l4's 2 GPUs (2 × 730 × 1.00 = $1,460) among it
        assert (cash.before_usd_per_month, cash.after_usd_per_month) == (3066.0, 5986.0)
        assert runbook.usd_per_month_delta == 2920.0
        assert dict(cash.by_workload) == {"web": 2920.0}
        [web] = runbook.impacts
        assert (web.usd_per_month_before, web.usd_per_month_after, web.usd_per_month_delta) == (0.0, 2920.0, 2920.0)
        assert runbook.unlisted_usd_per_month_delta == 0.0
        assert [(x.pool, x.gpus, x.usd_per_month) for x in cash.lost] == [("a-l4", 2, 1460.0)]

    def test_recovery_of_the_moved_work(self, inv: Inventory, base: Plan) -> None:
        runbook, _ = _failover(inv, base, "site-lost dc-a")
        [web] = runbook.impacts
        # both replicas arrive at aws-c (provision 10 min, no model to ship): back in 10 min, within its 30
        assert [(a.site, a.pool, a.replicas, a.recovery_minutes) for a in web.arrivals] == [("aws-c", "c-l4", 2, 10.0)]
        assert (web.outage_minutes, web.recovery_minutes, web.meets_rto) == (10.0, 10.0, True)


class TestThePoolOfWorkLeftShortShrinks:
    """b-a10 falls to 1 GPU: api, 2 of 3 running, loses 1 more replica. Its row says how many this incident
    took (1) and that the other was unplaced before it."""

    def test_one_replica_lost_to_this_incident(self, inv: Inventory, base: Plan) -> None:
        runbook, result = _failover(inv, base, "capacity b-a10=1")
        [api] = runbook.impacts
        assert (api.workload, api.status, api.before, api.after) == ("api", Status.DEGRADED, {"b-a10": 2},
                                                                    {"b-a10": 1})
        assert (api.replicas_wanted, api.replicas_running) == (3, 1)
        assert [(u.workload, u.replicas) for u in result.after.unplaced] == [("api", 2), ("sweep", 1)]
        assert api.reason.startswith("its capacity changed: capacity b-a10=1; 2 replica(s) unplaced, 1 of them "
                                     "before these events too: "), api.reason
        # healthy work stays; committed capacity lost is paid, so the cash does not change
        assert [p for p in result.after.placements if p.workload != "api"] == [p for p in base.placements
                                                                              if p.workload != "api"]
        assert (runbook.usd_per_month_delta, dict(runbook.cash.by_workload)) == (0.0, {})
        assert [(x.pool, x.gpus, x.usd_per_month) for x in runbook.cash.lost] == [("b-a10", 1, 438.0)]


class TestRoomForWorkLeftShort:
    """b-a10 grows to 3 GPUs: api's unplaced replica runs now; nothing moved, nothing was displaced."""

    def test_its_replica_starts_and_its_row_says_why(self, inv: Inventory, base: Plan) -> None:
        runbook, result = _failover(inv, base, "capacity b-a10=3")
        assert by_pool(result.after.placements, "api") == {"b-a10": 3}
        assert [(u.workload, u.replicas) for u in result.after.unplaced] == [("sweep", 1)]
        [api] = runbook.impacts
        assert (api.status, api.replicas_running, api.outage_minutes) == (Status.MOVED, 3, None)
        assert [(a.pool, a.replicas, a.recovery_minutes) for a in api.arrivals] == [("b-a10", 1, 5.0)]
        assert api.reason == "1 replica(s) unplaced before these events now run", api.reason
        assert [p for p in result.after.placements if p.workload != "api"] == [p for p in base.placements
                                                                              if p.workload != "api"]
