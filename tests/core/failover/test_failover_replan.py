"""Hand-computed failovers, one per event type: what moves, the fallback used, the cost delta.

Prices are chosen so the arithmetic is easy: a realtime replica runs 730 h/month, so one L4
at $1.00/GPU-h costs $730/month. Every failover plan is also checked by the independent
plan checker against the disrupted inventory.
"""

from __future__ import annotations

import pytest
from failover_helpers import by_pool, cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.impact import Status, impacts
from hybridctl.core.failover.replan import FailoverOptions, Replan, _newly_short, replan
from hybridctl.core.placement.planner import plan


def failover(inv, *events: str, **options: float) -> Replan:
    base = plan(inv)
    assert check_plan(inv, base) == []
    result = replan(inv, base, parse_events(list(events)), FailoverOptions(**options))
    assert check_plan(result.disruption.inventory, result.after) == []
    return result


def impact_of(inv, result: Replan, name: str):
    return next(i for i in impacts(inv, result) if i.workload == name)


class TestSiteLost:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)], provision=5, uplink=1000),
             onprem("dc-b", [pool("b-l4", "L4", 4, 2.0)], provision=10, uplink=8000)],
            [workload("web", "realtime_inference", ["L4"], replicas=2, model_gb=30, rto_minutes=20),
             workload("api", "realtime_inference", ["L4"], rto_minutes=8)])

    def test_everything_at_the_lost_site_moves_to_the_survivor(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        assert by_pool(result.before.placements, "web") == {"a-l4": 2}
        assert by_pool(result.after.placements, "web") == {"b-l4": 2}
        assert by_pool(result.after.placements, "api") == {"b-l4": 1}
        assert result.after.unplaced == ()

    def test_cost_delta_is_the_price_difference(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        # 3 replicas × 730 h × ($2.00 - $1.00)
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(2190.0)

    def test_recovery_is_provisioning_plus_model_transfer_at_the_receiving_uplink(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        web = impact_of(inv, result, "web")
        # dc-b: 10 min to provision + 30 GB × 8,000 Mbit/GB ÷ 8,000 Mbit/s = 30 s
        assert web.status is Status.MOVED
        assert web.outage_minutes == pytest.approx(10.5)
        assert web.meets_rto is True
        api = impact_of(inv, result, "api")
        assert api.outage_minutes == pytest.approx(10.0)  # no model_gb: provisioning only
        assert api.meets_rto is False  # rto_minutes 8

    def test_the_lost_pool_is_reported_with_its_real_gpu_and_no_capacity(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        lost = next(p for p in result.after.pools if p.pool == "a-l4")
        assert (lost.gpu, lost.capacity_gpus, lost.used_gpus) == ("L4", 0, 0)


class TestStability:
    """After a site loss, workloads elsewhere stay put unless the inventory forces them to move."""

    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]),
             onprem("dc-b", [pool("b-l4", "L4", 2, 1.2)]),
             onprem("dc-c", [pool("c-l4", "L4", 10, 1.5)])],
            [workload("always-on", "realtime_inference", ["L4"], replicas=2),
             workload("nightly", "batch_inference", ["L4"], replicas=2, hours_per_month=100),
             workload("extra", "batch_inference", ["L4"], replicas=1, hours_per_month=50)])

    def test_the_base_plan_fills_the_cheap_pools_first(self, inv) -> None:
        base = plan(inv)
        assert by_pool(base.placements, "always-on") == {"a-l4": 2}
        assert by_pool(base.placements, "nightly") == {"b-l4": 2}

    def test_only_the_displaced_workload_moves(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        assert by_pool(result.after.placements, "always-on") == {"c-l4": 2}
        assert by_pool(result.after.placements, "nightly") == {"b-l4": 2}
        assert by_pool(result.after.placements, "extra") == by_pool(result.before.placements, "extra")
        moved = {i.workload for i in impacts(inv, result)}
        assert moved == {"always-on"}

    def test_a_weak_stability_term_would_reshuffle_healthy_work(self, inv) -> None:
        # swapping saves 2 × (730 - 100) h × $0.30 = $378/month: more than $100, less than the failover default
        result = failover(inv, "site-lost dc-a", move_threshold_usd=100.0)
        assert by_pool(result.after.placements, "always-on") == {"b-l4": 2}
        assert by_pool(result.after.placements, "nightly") == {"c-l4": 2}
        nightly = impact_of(inv, result, "nightly")
        assert "make room" in nightly.reason


class TestPoolLostAndCapacity:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0), pool("a-l40s", "L40S", 4, 3.0)], provision=7)],
            [workload("web", "realtime_inference", ["L4", "L40S"], replicas=2),
             workload("batch", "batch_inference", ["L4", "L40S"], replicas=2, hours_per_month=100)],
            # batch moves to 3 × its price: allowed here (the ratio's own cases: test_failover_price_ratio.py)
            failover_max_price_ratio=3)

    def test_pool_lost_moves_both_to_the_other_pool_of_the_site(self, inv) -> None:
        result = failover(inv, "pool-lost a-l4")
        assert by_pool(result.after.placements, "web") == {"a-l40s": 2}
        assert by_pool(result.after.placements, "batch") == {"a-l40s": 2}
        # web: 2 × 730 × $2; batch: 2 × 100 × $2
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(3320.0)
        assert impact_of(inv, result, "web").outage_minutes == pytest.approx(7.0)

    @pytest.mark.parametrize("event", ["capacity a-l4=2", "capacity a-l4=50%", "capacity a-l4=-50%",
                                       "capacity a-l4=-2"])
    def test_a_shrinking_pool_sheds_the_work_that_is_cheapest_to_move(self, inv, event: str) -> None:
        result = failover(inv, event)
        # both cost the same to move; batch runs 100 h, web 730 h, so batch moves
        assert by_pool(result.after.placements, "web") == {"a-l4": 2}
        assert by_pool(result.after.placements, "batch") == {"a-l40s": 2}
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(400.0)
        batch = impact_of(inv, result, "batch")
        assert batch.status is Status.MOVED
        assert f"its capacity changed: {event}" == batch.reason


class TestPrice:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 16, 1.0)]), onprem("dc-b", [pool("b-l4", "L4", 16, 1.5)])],
            [workload("web", "realtime_inference", ["L4"], replicas=2),
             workload("big", "realtime_inference", ["L4"], count=8, replicas=1, sites=["dc-a", "dc-b"])])

    def test_a_price_rise_below_the_threshold_moves_nothing(self, inv) -> None:
        result = failover(inv, "price a-l4=x3")
        assert impacts(inv, result) == []
        # 10 GPUs × 730 h × ($3 - $1)
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(14600.0)

    def test_a_price_set_in_dollars_can_fall(self, inv) -> None:
        result = failover(inv, "price a-l4=0.5")
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(-3650.0)

    def test_a_rise_that_costs_more_than_the_threshold_moves_the_replica(self, inv) -> None:
        # ×10: moving big saves 8 × 730 × ($10 - $1.5) = $49,640/month, over $10,000; web saves $6,205: stays
        result = failover(inv, "price a-l4=x10")
        assert by_pool(result.after.placements, "big") == {"b-l4": 1}
        assert by_pool(result.after.placements, "web") == {"a-l4": 2}
        assert "under the new prices" in impact_of(inv, result, "big").reason


class TestSpotReclaim:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 4, 1.0)]),
             cloud("aws", [cloud_pool("g6-spot", "L4", "g6.xlarge", 8, 0.25, "spot")], provision_minutes=12)],
            [workload("sweep", "experiment", ["L4"], replicas=3, hours_per_month=200, preemptible=True,
                      checkpoint_minutes=20)],
            # reserved at 4 × the spot price: allowed here (the ratio's own cases: test_failover_price_ratio.py)
            failover_max_price_ratio=4)

    def test_checkpointed_work_moves_to_reserved_and_loses_at_most_a_checkpoint(self, inv) -> None:
        result = failover(inv, "spot-reclaim g6-spot")
        assert by_pool(result.before.placements, "sweep") == {"g6-spot": 3}
        assert by_pool(result.after.placements, "sweep") == {"a-l4": 3}
        # 3 × 200 h × ($1.00 - $0.25)
        assert result.after.total_usd_per_month - result.before.total_usd_per_month == pytest.approx(450.0)
        sweep = impact_of(inv, result, "sweep")
        assert sweep.work_lost_minutes_max == 20
        assert sweep.outage_minutes == pytest.approx(5.0)  # dc-a's default provision_minutes


class TestLinkDown:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 8, 1.0)], uplink=10000),
             onprem("edge-1", [pool("e1-l4", "L4", 4, 0.5)], kind="edge", uplink=80)],
            [workload("shelf-vision", "realtime_inference", ["L4"], sites=["edge-1"], model_gb=6),
             workload("recs", "realtime_inference", ["L4"], datasets=["catalog"], model_gb=6, rto_minutes=10),
             workload("tagger", "batch_inference", ["L4"], hours_per_month=50)],
            datasets=[{"name": "catalog", "site": "dc-a", "size_gb": 10, "sensitivity": "internal"}])

    def test_local_inference_stays_and_what_needs_the_link_moves(self, inv) -> None:
        result = failover(inv, "link-down edge-1")
        assert by_pool(result.before.placements, "recs") == {"e1-l4": 1}
        assert by_pool(result.after.placements, "shelf-vision") == {"e1-l4": 1}
        assert by_pool(result.after.placements, "recs") == {"a-l4": 1}
        assert by_pool(result.after.placements, "tagger") == {"e1-l4": 1}  # reads nothing remote: autonomous
        recs = impact_of(inv, result, "recs")
        assert recs.reason == "the uplink of edge-1 is down and it reads dataset catalog from dc-a"
        # 6 GB at dc-a's 10,000 Mbit/s: 4.8 s on top of 5 min
        assert recs.outage_minutes == pytest.approx(5.1)

    def test_nothing_new_is_shipped_behind_a_down_link(self, inv) -> None:
        result = failover(inv, "link-down edge-1", "site-lost dc-a")
        # recs cannot stay (no data) and cannot go anywhere; the freed edge GPUs stay unused
        assert by_pool(result.after.placements, "recs") == {}
        assert "uplink of edge-1 is down" in result.after.unplaced[0].reason
        edge = next(p for p in result.after.pools if p.pool == "e1-l4")
        assert edge.used_gpus == edge.capacity_gpus == 2


class TestFallback:
    @pytest.fixture
    def inv(self):
        return inventory(
            [onprem("dc-a", [pool("a-h100", "H100", 8, 2.0)]),
             onprem("dc-b", [pool("b-h100", "H100", 2, 2.0), pool("b-l4", "L4", 2, 0.5)])],
            [workload("assistant", "realtime_inference", ["H100"], count=2, replicas=3, rto_minutes=30,
                      fallback={"gpu": {"types": ["L4"], "count": 1}, "replicas": 2}),
             workload("ranker", "realtime_inference", ["H100"], count=2, replicas=2, sites=["dc-a"],
                      fallback={"replicas": 1}),
             workload("scorer", "realtime_inference", ["H100"], replicas=1, sites=["dc-b"],
                      fallback={"replicas": 1})])

    def test_no_full_capacity_anywhere_degrades_to_the_fallback_shape(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        placed = [p for p in result.after.placements if p.workload == "assistant"]
        assert [(p.pool, p.replicas, p.gpus, p.degraded) for p in placed] == [("b-l4", 2, 2, True)]
        assistant = impact_of(inv, result, "assistant")
        assert assistant.status is Status.DEGRADED
        assert assistant.fallback == "2 replicas × 1 L4"
        assert result.fallbacks == {"assistant": "2 replicas × 1 L4"}

    def test_the_fallback_cost_is_what_the_degraded_shape_costs(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        assistant = impact_of(inv, result, "assistant")
        # compute before: 3 × 2 H100 × 730 × $2; after: 2 × 1 L4 × 730 × $0.50
        compute = {pl: sum(p.usd_per_month for p in getattr(result, pl).placements if p.workload == "assistant")
                   for pl in ("before", "after")}
        assert compute == {"before": pytest.approx(8760.0), "after": pytest.approx(730.0)}
        # its cash: committed pools both, so none changes (what a failover costs is cash: pricing/incident.py)
        assert (assistant.usd_per_month_before, assistant.usd_per_month_after) == (0.0, 0.0)

    def test_a_workload_with_nowhere_to_go_is_down_with_the_reason(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        ranker = impact_of(inv, result, "ranker")
        assert ranker.status is Status.DOWN
        assert ranker.loses_service
        assert ranker.reason.endswith("it ran in a-h100 (site-lost dc-a)")
        assert "even in its fallback shape" not in ranker.reason  # the fallback could not help: not used
        assert not any(p.degraded for p in result.after.placements if p.workload == "ranker")

    def test_untouched_workloads_are_not_degraded(self, inv) -> None:
        result = failover(inv, "site-lost dc-a")
        assert by_pool(result.after.placements, "scorer") == {"b-h100": 1}
        assert not any(p.degraded for p in result.after.placements if p.workload == "scorer")


class TestSpreadAfterALoss:
    def test_a_fixed_workload_left_in_one_failure_domain_is_reported(self) -> None:
        inv = inventory([onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]), onprem("dc-b", [pool("b-l4", "L4", 4, 1.0)])],
                        [workload("web", "realtime_inference", ["L4"], replicas=2)], spread_fixed_across=2)
        base = plan(inv)
        assert by_pool(base.placements, "web") == {"a-l4": 1, "b-l4": 1}
        result = replan(inv, base, parse_events(["site-lost dc-a"]))
        assert by_pool(result.after.placements, "web") == {"b-l4": 2}  # one domain is all that is left
        web = impact_of(inv, result, "web")
        assert web.reason == ("its capacity changed: site-lost dc-a; it now runs in 1 failure domain(s): "
                              "spread_fixed_across 2 cannot be met with the capacity that is left")


def test_work_that_may_not_start_behind_a_down_link_is_checked_as_the_replan_placed_it() -> None:
    """A fixed workload left one replica short in the applied plan (its other domains were full) is
    replanned while an edge site is cut off: the replan may place it in the one domain it can still
    reach. Checked against the workload barred from the cut-off site, as the replan saw it, that is
    valid; checked against the unbarred workload, the checker would fault the spread (a drill of this
    synthetic fleet crashed on it with exit 70)."""
    from hybridctl.core.failover.replan import replanned_inventory
    from hybridctl.core.inventory.models import Inventory
    from inventory_gen import generate

    fleet = Inventory.model_validate(generate(1000, 60, 1))
    result = replan(fleet, plan(fleet), parse_events(["link-down edge-5"]))
    assert check_plan(result.disruption.inventory, result.after)  # what the unbarred view says
    assert check_plan(replanned_inventory(result), result.after) == []


class TestWorkTheAppliedPlanLeftUnplaced:
    """Which of the work the applied plan left unplaced a failover tries to place again (scope.py)."""

    @pytest.fixture
    def inv(self):
        # two fixed workloads want dc-b's one A10G, and burst training takes the L4s the sweep wants
        return inventory(
            [onprem("dc-a", [pool("a-l4", "L4", 2, 1.0), pool("a-t4", "T4", 2, 0.5)], provision=5),
             onprem("dc-b", [pool("b-t4", "T4", 2, 0.6), pool("b-a10", "A10G", 1, 0.6)], provision=5)],
            [workload("web", "realtime_inference", ["T4"], rto_minutes=20),
             workload("api", "realtime_inference", ["A10G"], rto_minutes=20),
             workload("api-eu", "realtime_inference", ["A10G"], rto_minutes=20),
             workload("tune", "fine_tuning", ["L4"], count=2, hours_per_month=200),
             workload("sweep", "batch_inference", ["L4"], count=2, tier="opportunistic", hours_per_month=100)])

    @staticmethod
    def freed(inv, *events: str) -> set[str]:
        from hybridctl.core.failover.disrupt import disrupt
        from hybridctl.core.failover.scope import Scope
        from hybridctl.core.placement.eligibility import demands, pool_infos

        base = plan(inv)
        short = {u.workload for u in base.unplaced}
        assert short in ({"api", "sweep"}, {"api-eu", "sweep"})
        disruption = disrupt(inv, parse_events(list(events)), base)
        free = set(Scope.initial(disruption, demands(disruption.inventory), pool_infos(disruption.inventory),
                                 base).free)
        return {"api" if key == "api-eu" else key for key in free}  # whichever of the two is short

    def test_events_that_only_take_other_capacity_leave_opportunistic_work_waiting(self, inv) -> None:
        # the T4s of dc-b go: nothing of sweep's type changed and no room appeared; api (fixed) is tried again
        assert self.freed(inv, "pool-lost b-t4") == {"api"}

    def test_a_change_to_a_pool_of_its_gpu_type_brings_it_in(self, inv) -> None:
        assert self.freed(inv, "capacity a-l4=1") == {"api", "sweep", "tune"}  # tune ran there

    def test_room_anywhere_brings_it_in(self, inv) -> None:
        assert self.freed(inv, "capacity b-t4=8") == {"api", "sweep"}
        assert self.freed(inv, "price b-t4=x0.5") == {"api", "sweep"}

    def test_a_failover_that_frees_nothing_keeps_the_applied_plan(self) -> None:
        from hybridctl.core.failover.plan_steps import plain_steps
        from support.failover_runs import failed_over

        inv = inventory([onprem("dc-a", [pool("a-t4", "T4", 2, 0.5)], provision=5),
                         onprem("dc-b", [pool("b-t4", "T4", 1, 0.6), pool("b-l4", "L4", 2, 0.9)], provision=5)],
                        [workload("web", "realtime_inference", ["T4"], replicas=2, rto_minutes=20),
                         workload("sweep", "batch_inference", ["T4"], count=2, tier="opportunistic",
                                  hours_per_month=100)])  # 3 T4s: web's 2 leave no pool with 2 free
        base = plan(inv)
        assert [u.workload for u in base.unplaced] == ["sweep"]
        runbook, result = failed_over(inv, base, parse_events(["pool-lost b-l4"]), steps_for=plain_steps(inv))
        assert result.after.placements is base.placements  # the very tuple: nothing downstream looks further
        assert result.after.unplaced == base.unplaced
        assert result.after.solver.status == "no_demand"
        assert not [n for n in runbook.notes if "solver stopped" in n]  # nothing was solved, nothing stopped
        assert runbook.impacts == ()


def test_a_pass_that_widens_the_scope_is_not_assembled_and_tells_what_is_short_as_its_whole_plan_would(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hybridctl.core.failover import scope as scope_module
    from hybridctl.core.placement.eligibility import demands, pool_infos
    from hybridctl.core.plan.model import Plan
    from hybridctl.drivers.inventory_files import load_inventory
    from support.examples import EXAMPLES, without_windows

    # without its windows: a timed replan frees at once all work sharing a pool with what moved
    # (scope._timed_scope), so it never widens
    enterprise = without_windows(load_inventory(EXAMPLES / "enterprise").inventory)
    base = plan(enterprise)
    assembled: list[int] = []
    assemble = scope_module.Scope.assemble

    def counted(self: scope_module.Scope, placed: scope_module.Placed) -> Plan:
        assembled.append(len(self.free))
        return assemble(self, placed)

    monkeypatch.setattr(scope_module.Scope, "assemble", counted)
    widened = replan(enterprise, base, parse_events(["site-lost", "dc-frankfurt"]))
    assert widened.passes == 2 and len(assembled) == 1  # the wider pass's plan alone
    # what the first pass's free work's plan tells (what is short, where the free work went) is what its
    # whole plan would have told
    disrupted = widened.disruption.inventory
    first = scope_module.Scope.initial(widened.disruption, demands(disrupted), pool_infos(disrupted), base)
    placed = first.place(FailoverOptions().plan_options())
    whole = first.assemble(placed)
    short = _newly_short(placed.free, base)
    assert short and short == _newly_short(whole, base)
    assert [p for p in whole.placements if p.workload in first.free_workloads] == list(placed.free.placements)
