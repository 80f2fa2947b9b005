"""Failover details that mutation testing found unguarded: options reaching the replan, reshaped
fallbacks, stateless work, federated trainers and copies, the callback and steps of a drill."""

from __future__ import annotations

import pytest
from failover_helpers import by_pool, cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.drill import drill, run_scenario
from hybridctl.core.failover.events import Event, EventKind, parse_events
from hybridctl.core.failover.impact import Arrival, Status, impacts, recovery_minutes
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.failover.runbook import System
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.placement.planner import plan
from support.failover_runs import failed_over, rollback_of


def lost(site: str) -> Scenario:
    return Scenario(f"lost-{site}", (Event(EventKind.SITE_LOST, site),))


@pytest.fixture
def three_sites():
    """After dc-a is lost, swapping `always-on` and `nightly` saves $378/month (see test_failover_replan)."""
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]),
         onprem("dc-b", [pool("b-l4", "L4", 2, 1.2)]),
         onprem("dc-c", [pool("c-l4", "L4", 10, 1.5)])],
        [workload("always-on", "realtime_inference", ["L4"], replicas=2),
         workload("nightly", "batch_inference", ["L4"], replicas=2, hours_per_month=100)])


class TestOptionsReachTheReplan:
    def test_the_failover_uses_the_move_threshold_it_is_given(self, three_sites) -> None:
        base = plan(three_sites)
        events = parse_events(["site-lost dc-a"])
        steps = plain_steps(three_sites)
        _, default = failed_over(three_sites, base, events, steps_for=steps)
        assert by_pool(default.after.placements, "nightly") == {"b-l4": 2}  # $378 < the default threshold
        _, low = failed_over(three_sites, base, events, steps_for=steps,
                               options=FailoverOptions(move_threshold_usd=100.0))
        assert by_pool(low.after.placements, "nightly") == {"c-l4": 2}
        assert by_pool(low.after.placements, "always-on") == {"b-l4": 2}

    def test_a_drill_uses_the_move_threshold_it_is_given(self, three_sites) -> None:
        base = plan(three_sites)
        moved = {name: [i.workload for i in report.results[0].moved] for name, report in (
            ("default", drill(three_sites, base, [lost("dc-a")])),
            ("low", drill(three_sites, base, [lost("dc-a")], FailoverOptions(move_threshold_usd=100.0))))}
        assert moved == {"default": ["always-on"], "low": ["always-on", "nightly"]}


class TestDrillReport:
    def test_on_result_sees_each_result_in_scenario_order(self, three_sites) -> None:
        seen: list = []
        report = drill(three_sites, plan(three_sites), [lost("dc-a"), lost("dc-b")], on_result=seen.append)
        assert seen == list(report.results)
        assert [r.scenario.name for r in report.results] == ["lost-dc-a", "lost-dc-b"]

    def test_a_drill_counts_the_steps_of_the_runbook_and_rollback_failover_would_build(self) -> None:
        inv = inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)], hosts=[{"name": "a-1", "address": "10.0.0.1", "pool": "a-l4"}]),
             onprem("dc-b", [pool("b-l4", "L4", 2, 2.0)], hosts=[{"name": "b-1", "address": "10.0.1.1", "pool": "b-l4"}])],
            [workload("web", "realtime_inference", ["L4"], model_gb=1)])
        base = plan(inv)
        steps = plain_steps(inv)
        runbook, _ = failed_over(inv, base, parse_events(["site-lost dc-a"]), steps_for=steps)
        back = rollback_of(inv, runbook, runbook.after, steps_for=steps, returning_sites=["dc-a"])
        result = drill(inv, base, [lost("dc-a")]).results[0]
        # the failover plan's steps are built from the failover plan, not the base plan's reused
        assert "node-baseline/dc-b" in {s.id for s in runbook.steps}
        assert (result.steps, result.rollback_steps) == (len(runbook.steps), len(back.steps))


class TestReshapedFallback:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=7)],
            [workload("assistant", "realtime_inference", ["L4"], count=2, replicas=1, rto_minutes=30,
                      fallback={"gpu": {"types": ["L4"], "count": 1}, "replicas": 1})])

    def test_a_fallback_with_another_gpu_count_restarts_every_replica(self, inv) -> None:
        result = replan(inv, plan(inv), parse_events(["capacity a-l4=1"]))
        assistant = next(i for i in impacts(inv, result) if i.workload == "assistant")
        assert assistant.status is Status.DEGRADED and assistant.fallback == "1 replica × 1 L4"
        # the same pool, but a new shape: the replica stops and starts again
        assert assistant.arrivals == (Arrival("dc-a", "a-l4", 1, "L4", 7.0, 0.0),)
        assert assistant.outage_minutes == pytest.approx(7.0)


class TestFallbackWithoutReplicas:
    def test_it_keeps_the_workload_s_replica_count(self) -> None:
        inv = inventory(
            [onprem("dc-a", [pool("a-h100", "H100", 4, 2.0)]), onprem("dc-b", [pool("b-l4", "L4", 4, 0.5)])],
            [workload("assistant", "realtime_inference", ["H100"], replicas=3, sites=["dc-a", "dc-b"],
                      fallback={"gpu": {"types": ["L4"], "count": 1}})])
        result = replan(inv, plan(inv), parse_events(["site-lost dc-a"]))
        assert by_pool(result.after.placements, "assistant") == {"b-l4": 3}
        assert result.fallbacks == {"assistant": "3 replicas × 1 L4"}


class TestWorkLost:
    def test_stateless_work_that_moves_loses_no_work(self) -> None:
        inv = inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]), onprem("dc-b", [pool("b-l4", "L4", 2, 2.0)])],
            [workload("web", "realtime_inference", ["L4"], checkpoint_minutes=15),
             workload("train", "fine_tuning", ["L4"], hours_per_month=100, checkpoint_minutes=15)])
        result = replan(inv, plan(inv), parse_events(["site-lost dc-a"]))
        by_name = {i.workload: i for i in impacts(inv, result)}
        assert by_name["web"].status is by_name["train"].status is Status.MOVED
        assert (by_name["web"].work_lost_minutes_max, by_name["web"].restarts_from_scratch) == (None, False)
        assert (by_name["train"].work_lost_minutes_max, by_name["train"].restarts_from_scratch) == (15, False)


class TestRecoveryMinutes:
    def test_provisioning_plus_the_model_transfer_over_the_site_s_uplink(self) -> None:
        inv = inventory([onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)], provision=4, uplink=800)],
                        [workload("web", "realtime_inference", ["L4"], model_gb=30)])
        # 30 GB × 8,000 Mbit/GB ÷ 800 Mbit/s = 300 s = 5 min, after 4 min of provisioning
        assert recovery_minutes(inv.workloads[0], inv.sites[0]) == pytest.approx(9.0)


class TestFederatedCopies:
    def test_no_trainer_starts_at_a_site_that_only_holds_a_copy(self) -> None:
        inv = inventory(
            [onprem(f"edge-{n}", [pool(f"{n}-l4", "L4", 2, 0.5)], kind="edge") for n in ("x", "y", "w")],
            [workload("fed", "federated_training", ["L4"], hours_per_month=100, datasets=["vx", "vy"])],
            datasets=[{"name": "vx", "site": "edge-x", "size_gb": 10, "sensitivity": "confidential",
                       "copies": ["edge-w"]},
                      {"name": "vy", "site": "edge-y", "size_gb": 10, "sensitivity": "confidential"}])
        base = plan(inv)
        assert by_pool(base.placements, "fed") == {"x-l4": 1, "y-l4": 1}
        result = run_scenario(inv, base, lost("edge-x"), FailoverOptions())
        # federated training uses no copies: edge-x's trainer is down, not restarted at edge-w
        fed = next(i for i in result.impacts if i.workload == "fed")
        assert fed.after == {"y-l4": 1} and fed.arrivals == ()
        assert fed.status is Status.DEGRADED and fed.replicas_running == 1


class TestReasons:
    def test_a_workload_lost_with_two_sites_names_both(self) -> None:
        inv = inventory(
            [onprem(f"store-{n}", [pool(f"{n}-l4", "L4", 1, 0.5)], kind="edge") for n in ("a", "b")]
            + [onprem("dc", [pool("dc-l4", "L4", 4, 1.0)])],
            [workload("camera", "realtime_inference", ["L4"], replicas=2, survives_site_loss=False,
                      sites=["store-a", "store-b", "dc"])])
        base = plan(inv)
        assert by_pool(base.placements, "camera") == {"a-l4": 1, "b-l4": 1}
        result = replan(inv, base, parse_events(["site-lost store-a", "site-lost store-b"]))
        camera = next(i for i in impacts(inv, result) if i.workload == "camera")
        assert camera.status is Status.DOWN and camera.expected_loss
        assert camera.reason == ("expected: it does not survive the loss of store-a, store-b "
                                 "(survives_site_loss: false)")

    def test_work_moved_off_two_repriced_pools_names_both_events(self) -> None:
        inv = inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 1, 1.0), pool("a2-l4", "L4", 1, 1.0)]),
             onprem("dc-b", [pool("b-l4", "L4", 4, 2.0)])],
            [workload("web", "realtime_inference", ["L4"], replicas=2)])
        base = plan(inv)
        assert by_pool(base.placements, "web") == {"a-l4": 1, "a2-l4": 1}
        # each replica saves 730 h × ($10 - $2) = $5,840 a month, over a $100 threshold
        result = replan(inv, base, parse_events(["price a-l4=x10", "price a2-l4=x10"]),
                        FailoverOptions(move_threshold_usd=100.0))
        assert by_pool(result.after.placements, "web") == {"b-l4": 2}
        web = next(i for i in impacts(inv, result) if i.workload == "web")
        assert web.reason == ("under the new prices (price a-l4=x10, price a2-l4=x10) moving saves more than the "
                              "move threshold")


class TestRunbookStepsForTheCloud:
    def test_a_site_lost_to_the_cloud_scales_the_pools_then_admits_the_work(self) -> None:
        inv = inventory([onprem("dc", [pool("dc-l4", "L4", 4, 1.0)]),
                         cloud("aws", [cloud_pool("g6-od", "L4", "g6.xlarge", 8, 2.0, "on_demand")],
                               provision_minutes=12)],
                        [workload("api", "realtime_inference", ["L4"], replicas=2)])
        runbook, _ = failed_over(inv, plan(inv), parse_events(["site-lost dc"]), steps_for=plain_steps(inv))
        steps = {s.id: (s.group, s.system, s.estimated_minutes, s.workloads, s.detail) for s in runbook.steps}
        assert steps["cloud-pools/aws"] == (
            "capacity", System.PULUMI, 12.0, ("api",),
            "scale the GPU pools of aws to the failover plan; new nodes take about 12 min (provision_minutes)")
        assert steps["cluster-queues/k8s-aws"] == (
            "admission", System.PULUMI, 0.0, (), "update the Kueue queues so the moved and degraded workloads are "
            "admitted")
        assert runbook.estimated_minutes == 12.0


class TestEventsAndNotes:
    def test_a_price_factor_below_one_is_a_discount_not_an_error(self) -> None:
        [event] = parse_events(["price a-l4=x0.5"])
        assert (event.factor, event.amount, str(event)) == (True, 0.5, "price a-l4=x0.5")
        assert event.price_after(2.0) == 1.0

    def test_the_rollback_says_which_failover_it_undoes(self, three_sites) -> None:
        base = plan(three_sites)
        steps = plain_steps(three_sites)
        runbook, _ = failed_over(three_sites, base, parse_events(["site-lost dc-a"]), steps_for=steps)
        back = rollback_of(three_sites, runbook, runbook.after, steps_for=steps, returning_sites=["dc-a"])
        assert back.notes[0] == f"returns to the plan that ran before {runbook.id} (site-lost dc-a)"
        # the failover's own notes come from apply's steps: sites without hosts are named
        assert "site dc-b lists no hosts: nothing for Ansible to configure there" in runbook.notes
