"""Hand-worked failover values the other tests only checked in passing: a chain of two moves, a
runbook whose critical path is not the sum of its steps, and a multi-site step with one site out.

Prices: a realtime replica runs 730 h/month, so one L4 at $1.00/GPU-h costs $730/month.
"""

from __future__ import annotations

import pytest
from failover_helpers import by_pool, inventory, onprem, pool, workload
from hybridctl.core.checker.check import check_plan
from hybridctl.core.deploy.steps import StepGraph, StepKind, make_step
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import Status, impacts
from hybridctl.core.failover.replan import replan
from hybridctl.core.failover.runbook import Runbook, RunbookKind, RunbookStep, System, build_runbook
from hybridctl.core.placement.planner import plan


class TestAChainOfTwoMoves:
    """dc-a is lost. `lamp` (L4 only) can only go to b-l4, where `desk` (L4 or T4) runs; so `desk`
    must move on to c-t4 to make room. Neither move alone is a valid failover."""

    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]),
             onprem("dc-b", [pool("b-l4", "L4", 2, 1.5)]),
             onprem("dc-c", [pool("c-t4", "T4", 2, 2.0)])],
            [workload("lamp", "realtime_inference", ["L4"], replicas=2, sites=["dc-a", "dc-b"]),
             workload("desk", "realtime_inference", ["L4", "T4"], replicas=2, sites=["dc-b", "dc-c"])])

    def test_both_move_one_after_the_other(self, inv) -> None:
        base = plan(inv)
        assert (by_pool(base.placements, "lamp"), by_pool(base.placements, "desk")) == ({"a-l4": 2}, {"b-l4": 2})
        result = replan(inv, base, parse_events(["site-lost dc-a"]))
        assert check_plan(result.disruption.inventory, result.after) == []
        assert by_pool(result.after.placements, "lamp") == {"b-l4": 2}
        assert by_pool(result.after.placements, "desk") == {"c-t4": 2}
        assert result.after.unplaced == ()

    def test_costs_and_impacts(self, inv) -> None:
        result = replan(inv, plan(inv), parse_events(["site-lost dc-a"]))
        # before: lamp 2 × 730 × $1.00 = 1460, desk 2 × 730 × $1.50 = 2190 → 3650
        # after:  lamp 2 × 730 × $1.50 = 2190, desk 2 × 730 × $2.00 = 2920 → 5110
        assert (result.before.total_usd_per_month, result.after.total_usd_per_month) == (3650.0, 5110.0)
        by_name = {i.workload: i for i in impacts(inv, result)}
        assert by_name["lamp"].status is Status.MOVED and by_name["desk"].status is Status.MOVED
        assert (by_name["lamp"].before, by_name["lamp"].after) == ({"a-l4": 2}, {"b-l4": 2})
        assert (by_name["desk"].before, by_name["desk"].after) == ({"b-l4": 2}, {"c-t4": 2})
        # cash: both move between committed pools, paid whatever runs in them: no change of cash (the amortized
        # 2190 → 2920 above is not cash)
        assert (by_name["desk"].usd_per_month_before, by_name["desk"].usd_per_month_after) == (0.0, 0.0)
        assert by_name["lamp"].usd_per_month_delta == 0.0


def _runbook(steps: list[RunbookStep]) -> Runbook:
    empty = plan(inventory([onprem("dc", [pool("p", "L4", 1, 1.0)])], []))
    return Runbook(RunbookKind.FAILOVER, "inc", "inv", (), None, empty, empty, (), tuple(steps), (), ())


def _step(id_: str, minutes: float, *after: str) -> RunbookStep:
    return RunbookStep(make_step(id_, "manual", id_, {}, depends_on=after), "capacity", System.MANUAL, minutes)


class TestCriticalPath:
    def test_parallel_branches_take_the_longest_not_the_sum(self) -> None:
        # gate → a (10) → c (5) ; gate → b (20): the path is max(10 + 5, 20) = 20 min, the sum is 35
        runbook = _runbook([_step("gate", 0.0), _step("a", 10.0, "gate"), _step("b", 20.0, "gate"),
                            _step("c", 5.0, "a")])
        assert runbook.estimated_minutes == 20.0

    def test_a_chain_adds_up(self) -> None:
        runbook = _runbook([_step("a", 10.0), _step("b", 20.0, "a"), _step("c", 5.0, "b")])
        assert runbook.estimated_minutes == 35.0

    def test_the_longest_path_is_not_the_last_step(self) -> None:
        # a (30) alone; b (1) → c (2): the path is 30, though c finishes last in listing order
        runbook = _runbook([_step("a", 30.0), _step("b", 1.0), _step("c", 2.0, "b")])
        assert runbook.estimated_minutes == 30.0


class TestMultiSiteStepWithOneSiteUnreachable:
    """A cluster's queue step acts on every cloud site the cluster admits to: it is deferred only
    when all of them are unreachable, since the reachable ones still need it."""

    @pytest.fixture
    def inv(self):
        return inventory([onprem("dc", [pool("p", "L4", 1, 1.0)])], [])

    def _build(self, inv, unreachable: dict[str, str]) -> Runbook:
        queues = make_step("cluster-queues/k8s", StepKind.CLUSTER_QUEUES, "queues", {"sites": ["aws-a", "aws-b"]})
        empty = plan(inv)
        return build_runbook(inv, kind=RunbookKind.FAILOVER, incident="inc", events=[], before=empty, after=empty,
                             impacts=[], before_steps=StepGraph.of([]), after_steps=StepGraph.of([queues]),
                             unreachable=unreachable)

    def test_one_site_out_runs_the_step(self, inv) -> None:
        runbook = self._build(inv, {"aws-a": "site-lost aws-a"})
        assert [s.id for s in runbook.steps] == ["confirm/admission", "cluster-queues/k8s"]
        assert runbook.deferred == ()

    def test_every_site_out_defers_it(self, inv) -> None:
        runbook = self._build(inv, {"aws-a": "site-lost aws-a", "aws-b": "site-lost aws-b"})
        assert runbook.steps == ()
        assert [(d.step_id, d.site, d.reason) for d in runbook.deferred] == [
            ("cluster-queues/k8s", "aws-a", "site-lost aws-a; once it is back: queues")]
