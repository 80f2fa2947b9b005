"""Runbooks: apply's steps for the failover plan, only where they differ, grouped behind confirmations."""

from __future__ import annotations

import json

import pytest
from failover_helpers import by_pool, cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.deploy.steps import BundleRef, StepPlan, apply_steps
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import Status
from hybridctl.core.failover.runbook import CONFIRM_KIND, MANUAL_KIND, RunbookKind, System
from hybridctl.core.failover.serialize import RunbookFileError, runbook_from_json, runbook_to_json
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.plan.serialize import plan_to_json
from support.failover_runs import failed_over, rollback_of


@pytest.fixture
def fleet():
    """An on-prem site and an edge site with hosts, and a cloud region; `recs` at the edge reads remote data."""
    return inventory(
        [onprem("dc-lab", [pool("lab-l4", "L4", 4, 0.6)], provision=6, uplink=8000,
                hosts=[{"name": "lab-1", "address": "10.0.0.1", "pool": "lab-l4"},
                       {"name": "lab-2", "address": "10.0.0.2", "pool": "lab-l4"}]),
         onprem("edge-shop", [pool("shop-l4", "L4", 2, 0.5)], kind="edge", uplink=100,
                hosts=[{"name": "shop-1", "address": "10.0.1.1", "pool": "shop-l4"}]),
         cloud("aws", [cloud_pool("g6-od", "L4", "g6.xlarge", 16, 0.9, "on_demand")])],
        [workload("shelf", "realtime_inference", ["L4"], sites=["edge-shop"], model_gb=2),
         workload("recs", "realtime_inference", ["L4"], datasets=["catalog"], model_gb=16, rto_minutes=15,
                  latency={"region": "eu-users", "p95_ms": 15}),
         workload("chat", "realtime_inference", ["L4"], replicas=3, sites=["dc-lab", "aws"], model_gb=1)],
        datasets=[{"name": "catalog", "site": "dc-lab", "size_gb": 5, "sensitivity": "internal"}])


def steps_for(inv):
    bundles = {w.name: BundleRef(w.name, f"/bundles/{w.name}", w.name, "v1", "ab" * 32) for w in inv.workloads}

    def build(p: Plan) -> StepPlan:
        return apply_steps(p, inv, bundles=bundles, bundle_public_key="/keys/model.pub")

    return build


def link_down(inv):
    base = plan(inv)
    runbook, result = failed_over(inv, base, parse_events(["link-down edge-shop"]), steps_for=steps_for(inv),
                                    base_serial=7)
    return base, runbook, result


class TestFailoverRunbook:
    def test_the_base_plan_puts_recs_at_the_edge(self, fleet) -> None:
        base = plan(fleet)
        assert {(p.workload, p.pool) for p in base.placements if p.site == "edge-shop"} == {("shelf", "shop-l4"),
                                                                                           ("recs", "shop-l4")}

    def test_only_changed_steps_run_and_the_cut_off_site_is_deferred(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        ids = [s.id for s in runbook.steps]
        assert ids == ["confirm/contain", "manual/link-down/edge-shop",
                       "confirm/capacity", "preflight/dc-lab", "node-baseline/dc-lab",
                       # chat's sync runs again: the dc-lab hosts' variables (their workloads) changed
                       "confirm/models", "model-sync/dc-lab/chat", "model-sync/dc-lab/recs"]
        # the edge hosts' variables change (recs leaves), so their steps differ: deferred, not run
        assert [(d.step_id, d.site) for d in runbook.deferred] == [
            ("preflight/edge-shop", "edge-shop"), ("node-baseline/edge-shop", "edge-shop"),
            ("model-sync/edge-shop/shelf", "edge-shop")]
        assert runbook.kind is RunbookKind.FAILOVER and runbook.base_serial == 7

    def test_each_step_says_who_does_it_and_how_long_it_takes(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        steps = {s.id: s for s in runbook.steps}
        assert steps["manual/link-down/edge-shop"].system is System.MANUAL
        assert steps["node-baseline/dc-lab"].system is System.ANSIBLE
        assert steps["node-baseline/dc-lab"].estimated_minutes == 6.0  # dc-lab's provision_minutes
        sync = steps["model-sync/dc-lab/recs"]
        # 16 GB × 8,000 Mbit/GB ÷ 8,000 Mbit/s = 16 s
        assert (sync.system, sync.estimated_minutes, sync.workloads) == (System.ANSIBLE, 0.3, ("recs",))
        assert runbook.estimated_minutes == pytest.approx(6.3)

    def test_the_effect_on_users(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        recs = next(i for i in runbook.impacts if i.workload == "recs")
        assert recs.status is Status.MOVED and recs.after == {"lab-l4": 1}
        assert recs.outage_minutes == pytest.approx(6.3) and recs.meets_rto is True
        assert [i.workload for i in runbook.impacts] == ["recs"]  # shelf keeps serving at the edge

    def test_every_group_waits_for_its_confirmation_and_the_group_before(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        graph = runbook.graph
        gates = [s for s in graph if s.kind == CONFIRM_KIND]
        assert [g.id for g in gates] == ["confirm/contain", "confirm/capacity", "confirm/models"]
        assert graph.get("confirm/capacity").depends_on == ("confirm/contain", "manual/link-down/edge-shop")
        assert "confirm/models" in graph.get("model-sync/dc-lab/recs").depends_on
        assert graph.get("manual/link-down/edge-shop").kind == MANUAL_KIND
        # apply's own ordering survives inside a group
        assert "preflight/dc-lab" in graph.get("node-baseline/dc-lab").depends_on

    def test_steps_keep_apply_digests(self, fleet) -> None:
        _, runbook, result = link_down(fleet)
        applied_graph = steps_for(fleet)(result.after).graph
        for step in runbook.steps:
            if step.step.kind not in (CONFIRM_KIND, MANUAL_KIND):
                assert step.step.key == applied_graph.get(step.id).key

    def test_cloud_capacity_comes_first_when_a_site_is_lost(self, fleet) -> None:
        base = plan(fleet)
        runbook, _ = failed_over(fleet, base, parse_events(["site-lost dc-lab"]), steps_for=steps_for(fleet))
        groups = {s.id: (s.group, s.system) for s in runbook.steps}
        assert groups["cloud-pools/aws"] == ("capacity", System.PULUMI)
        assert groups["cluster-queues/k8s-aws"] == ("admission", System.PULUMI)
        assert next(s for s in runbook.steps if s.id == "cloud-pools/aws").estimated_minutes == 12.0
        assert {d.site for d in runbook.deferred} == {"dc-lab"}
        assert "manual/fence/dc-lab" in groups


class TestFiles:
    def test_json_round_trip_keeps_every_step_key(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        text = runbook_to_json(runbook)
        loaded = runbook_from_json(text, "rb.json")
        assert [s.step.key for s in loaded.steps] == [s.step.key for s in runbook.steps]
        assert loaded.id == runbook.id
        for mine, theirs in ((loaded.after, runbook.after), (loaded.before, runbook.before)):
            assert json.loads(plan_to_json(mine, plan_file=True)) == json.loads(plan_to_json(theirs, plan_file=True))
        assert json.loads(text)["format_version"] == 1

    def test_an_edited_runbook_is_refused(self, fleet) -> None:
        _, runbook, _ = link_down(fleet)
        raw = json.loads(runbook_to_json(runbook))
        sync = next(s for s in raw["steps"] if s["id"] == "model-sync/dc-lab/recs")
        sync["params"]["extravars"]["hybridctl_bundle_dir"] = "/tmp/evil"
        with pytest.raises(RunbookFileError, match="the runbook was edited"):
            runbook_from_json(json.dumps(raw), "rb.json")

    def test_the_same_incident_gives_the_same_runbook(self, fleet) -> None:
        _, one, _ = link_down(fleet)
        _, two, _ = link_down(fleet)
        assert one.id == two.id and runbook_to_json(one) == runbook_to_json(two)


class TestRollback:
    def test_rollback_checks_the_site_then_restores_the_applied_plan(self, fleet) -> None:
        base, runbook, result = link_down(fleet)
        back = rollback_of(fleet, runbook, result.after, steps_for=steps_for(fleet), returning_sites=["edge-shop"])
        assert back.kind is RunbookKind.ROLLBACK and back.incident == runbook.incident
        assert back.after == base and back.before == result.after
        ids = [s.id for s in back.steps]
        assert ids[:2] == ["confirm/verify", "preflight/edge-shop"]
        assert {"node-baseline/edge-shop", "model-sync/edge-shop/recs", "node-baseline/dc-lab"} <= set(ids)
        recs = next(i for i in back.impacts if i.workload == "recs")
        assert recs.after == {"shop-l4": 1} and recs.reason == "returns to its pre-failover placement"
        assert back.deferred == ()


class TestGroupsNeverContradictDependencies:
    """A cloud site that only shrinks releases capacity; the queues that wait for its pools cannot come before."""

    @pytest.fixture
    def spot_fleet(self):
        return inventory(
            [onprem("dc", [pool("dc-l4", "L4", 4, 1.0)]),
             cloud("aws", [cloud_pool("g6-spot", "L4", "g6.xlarge", 8, 0.2, "spot"),
                           cloud_pool("g6-od", "L4", "g6.xlarge", 8, 2.0, "on_demand")])],
            [workload("sweeps", "experiment", ["L4"], replicas=2, hours_per_month=200, preemptible=True,
                      checkpoint_minutes=10),
             workload("api", "realtime_inference", ["L4"], sites=["aws"])],
            # sweeps move to reserved at 5 × the spot price: allowed here (test_failover_price_ratio.py)
            failover_max_price_ratio=5)

    def test_a_shrinking_cloud_site_builds_and_its_queues_follow_its_pools(self, spot_fleet) -> None:
        base = plan(spot_fleet)
        assert by_pool(base.placements, "sweeps") == {"g6-spot": 2}
        runbook, result = failed_over(spot_fleet, base, parse_events(["spot-reclaim g6-spot"]),
                                        steps_for=steps_for(spot_fleet))
        assert by_pool(result.after.placements, "sweeps") == {"dc-l4": 2}
        groups = {s.id: s.group for s in runbook.steps}
        assert groups["cloud-pools/aws"] == "release"
        assert groups["cluster-queues/k8s-aws"] == "release"  # never before the pools it waits for
        ids = [s.id for s in runbook.steps]
        assert ids.index("cloud-pools/aws") < ids.index("cluster-queues/k8s-aws")
        back = rollback_of(spot_fleet, runbook, result.after, steps_for=steps_for(spot_fleet), returning_sites=[])
        assert back.after == base and "cloud-pools/aws" in {s.id for s in back.steps}

    def test_every_dependency_points_to_the_same_group_or_an_earlier_one(self, spot_fleet, fleet) -> None:
        from hybridctl.core.failover.runbook import GROUPS

        order = [name for name, _ in GROUPS]
        for inv, events in ((spot_fleet, "spot-reclaim g6-spot"), (fleet, "site-lost dc-lab"),
                            (fleet, "link-down edge-shop")):
            runbook, _ = failed_over(inv, plan(inv), parse_events([events]), steps_for=steps_for(inv))
            group = {s.id: order.index(s.group) for s in runbook.steps}
            for s in runbook.steps:
                assert all(group[d] <= group[s.id] for d in s.step.depends_on), (events, s.id)
