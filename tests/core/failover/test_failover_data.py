"""After a site loss: data is read from the holders that are left, workloads with no holder left are down,
federated trainers at the lost site are down while the others go on, and survives_site_loss: false is an
expected loss."""

from __future__ import annotations

from failover_helpers import by_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.drill import run_scenario
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.impact import Status, impacts
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.failover.scenario import Scenario
from hybridctl.core.placement.planner import plan


def lost(site: str) -> list[Event]:
    return [Event(EventKind.SITE_LOST, site)]


def three_sites(copies: list[str] | None = None, **corpus: object):
    """`pretrain` runs at dc-a, where its corpus lives; dc-b and dc-c have room for it."""
    dataset = {"name": "corpus", "site": "dc-a", "size_gb": 1000, "sensitivity": "internal", **corpus}
    if copies is not None:
        dataset["copies"] = copies
    return inventory(
        [onprem("dc-a", [pool("a-h100", "H100", 8, 1.0)]),
         onprem("dc-b", [pool("b-h100", "H100", 8, 2.0)], egress_usd_per_gb=0.5),
         onprem("dc-c", [pool("c-h100", "H100", 8, 3.0)], egress_usd_per_gb=0.02)],
        [workload("pretrain", "pretraining", ["H100"], count=8, hours_per_month=500, datasets=["corpus"]),
         workload("chat", "realtime_inference", ["H100"], sites=["dc-b", "dc-c"])],
        datasets=[dataset])


class TestHolders:
    def test_data_is_read_from_a_remaining_copy_never_from_the_lost_site(self) -> None:
        inv = three_sites(copies=["dc-c"])
        base = plan(inv)
        assert by_pool(base.placements, "pretrain") == {"a-h100": 1}
        result = replan(inv, base, lost("dc-a"))
        assert by_pool(result.after.placements, "pretrain") != {}
        assert all(m.from_site != "dc-a" for m in result.after.data_movements)
        assert {m.from_site for m in result.after.data_movements if m.workload == "pretrain"} <= {"dc-c"}

    def test_a_workload_whose_data_has_no_holder_left_is_down(self) -> None:
        inv = three_sites()
        base = plan(inv)
        result = replan(inv, base, lost("dc-a"))
        assert by_pool(result.after.placements, "pretrain") == {}
        assert [u.reason for u in result.after.unplaced if u.workload == "pretrain"] == [
            "data unavailable: every holder of dataset corpus (dc-a) is lost"]
        assert result.after.data_movements == ()
        pretrain = next(i for i in impacts(inv, result) if i.workload == "pretrain")
        assert pretrain.status is Status.DOWN and pretrain.reason.startswith("data unavailable")

    def test_a_lost_copy_leaves_the_primary(self) -> None:
        inv = three_sites(copies=["dc-b"])
        base = plan(inv)
        result = replan(inv, base, lost("dc-b"))
        assert by_pool(result.after.placements, "pretrain") == {"a-h100": 1}  # unaffected: it did not move
        assert "dc-b" not in {m.from_site for m in result.after.data_movements}


class TestFederated:
    def fleet(self):
        return inventory(
            [onprem(f"edge-{n}", [pool(f"{n}-l4", "L4", 2, 0.5)], kind="edge") for n in ("x", "y", "z")],
            [workload("fed", "federated_training", ["L4"], hours_per_month=100, datasets=["vx", "vy", "vz"])],
            datasets=[{"name": f"v{n}", "site": f"edge-{n}", "size_gb": 10, "sensitivity": "confidential",
                       "copies": ["edge-z" if n != "z" else "edge-x"]} for n in ("x", "y", "z")])

    def test_the_trainer_at_the_lost_site_is_down_and_the_others_go_on(self) -> None:
        inv = self.fleet()
        base = plan(inv)
        assert by_pool(base.placements, "fed") == {"x-l4": 1, "y-l4": 1, "z-l4": 1}
        result = replan(inv, base, lost("edge-x"))
        # copies are not used by federated training: no trainer starts at edge-z for edge-x's data
        assert by_pool(result.after.placements, "fed") == {"y-l4": 1, "z-l4": 1}
        assert [(u.demand, u.reason) for u in result.after.unplaced] == [
            ("fed@edge-x", "data unavailable: the trainer's dataset vx lives at edge-x, which is lost "
                           "(federated training uses no copies)")]
        fed = next(i for i in impacts(inv, result) if i.workload == "fed")
        assert fed.status is Status.DEGRADED and fed.replicas_running == 2 and fed.replicas_wanted == 3
        assert "data unavailable" in fed.reason


class TestExpectedLoss:
    def fleet(self, survives: bool):
        return inventory(
            [onprem("store", [pool("store-l4", "L4", 1, 0.5)], kind="edge"),
             onprem("dc", [pool("dc-l4", "L4", 4, 1.0)])],
            [workload("camera", "realtime_inference", ["L4"], rto_minutes=10, survives_site_loss=survives,
                      sites=["store", "dc"]),
             workload("api", "realtime_inference", ["L4"], sites=["dc"])])

    def test_a_workload_that_does_not_survive_its_site_goes_down_with_it_and_the_drill_passes(self) -> None:
        inv = self.fleet(survives=False)
        base = plan(inv)
        assert by_pool(base.placements, "camera") == {"store-l4": 1}
        result = run_scenario(inv, base, Scenario("lost-store", tuple(lost("store"))), FailoverOptions())
        camera = next(i for i in result.impacts if i.workload == "camera")
        # there was room at dc, but it starts nowhere else
        assert camera.status is Status.DOWN and camera.expected_loss and camera.meets_rto is False
        assert "survives_site_loss: false" in camera.reason
        assert [i.workload for i in result.impacts if i.expected_loss] == ["camera"]
        assert result.passed and result.gate_failures == []

    def test_a_workload_that_survives_is_moved(self) -> None:
        inv = self.fleet(survives=True)
        result = run_scenario(inv, plan(inv), Scenario("lost-store", tuple(lost("store"))), FailoverOptions())
        camera = next(i for i in result.impacts if i.workload == "camera")
        assert camera.status is Status.MOVED and not camera.expected_loss and result.passed


class TestWholeMachines:
    def test_pinned_work_takes_whole_machines_of_a_pay_per_use_quota(self) -> None:
        """`pinned` runs 2 replicas of 1 GPU on machines of 8 (2 machines of the 3 the quota allows):
        only one machine is left for the displaced `sweep`, however few GPUs the pinned replicas use."""
        from failover_helpers import cloud, cloud_pool
        from hybridctl.core.checker.verify import verified

        inv = inventory(
            [onprem("dc", [pool("dc-a100", "A100-40GB", 2, 0.5)]),
             cloud("aws", [cloud_pool("p4d-spot", "A100-40GB", "p4d.24xlarge", 24, 1.0, "spot")])],
            [workload("pinned", "experiment", ["A100-40GB"], replicas=2, hours_per_month=100, preemptible=True,
                      checkpoint_minutes=10, sites=["aws"]),
             workload("sweep", "experiment", ["A100-40GB"], replicas=2, hours_per_month=100, preemptible=True,
                      checkpoint_minutes=10)])
        base = plan(inv)
        assert by_pool(base.placements, "sweep") == {"dc-a100": 2}
        result = replan(inv, base, lost("dc"))
        verified(result.disruption.inventory, result.after, "failover plan")
        assert by_pool(result.after.placements, "pinned") == {"p4d-spot": 2}
        assert by_pool(result.after.placements, "sweep") == {"p4d-spot": 1}
