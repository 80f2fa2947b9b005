"""Drills: the report per scenario, and the gate CI acts on."""

from __future__ import annotations

import random

import pytest
from failover_helpers import by_pool, inventory, onprem, pool, two_sites_inventory, workload
from hybridctl.core.failover.drill import drill, run_scenario
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.scenario import Scenario, standard_scenarios
from hybridctl.core.placement.planner import plan


def lost(site: str) -> Scenario:
    return Scenario(f"lost-{site}", (Event(EventKind.SITE_LOST, site),))


@pytest.fixture
def two_sites():
    return two_sites_inventory()


class TestGate:
    def test_degrading_to_a_fallback_passes_and_losing_service_fails(self, two_sites) -> None:
        base = plan(two_sites)
        result = run_scenario(two_sites, base, lost("dc-a"), FailoverOptions())
        status = {i.workload: i.status.value for i in result.impacts}
        # b-l4 has one GPU: search takes it (checkout degrades to T4; reports, opportunistic, is dropped)
        assert status == {"checkout": "degraded", "search": "moved", "reports": "down"}
        assert [i.fallback for i in result.degraded] == ["1 replica × 1 T4"]
        assert [i.workload for i in result.lost] == ["reports"]
        # search: 12 min at dc-b against rto_minutes 10: a fixed workload misses its objective
        assert result.gate_failures == ["search (fixed) is back in ~12 min, over its rto_minutes 10"]
        assert not result.passed

    def test_a_lost_fixed_workload_fails_the_gate(self) -> None:
        inv = inventory([onprem("dc-a", [pool("a-l4", "L4", 2, 1.0)]), onprem("dc-b", [pool("b-h100", "H100", 2, 3.0)])],
                        [workload("ocr", "realtime_inference", ["L4"])])
        result = run_scenario(inv, plan(inv), lost("dc-a"), FailoverOptions())
        assert len(result.gate_failures) == 1
        assert result.gate_failures == ["ocr (fixed) loses service: no eligible pool left: every pool it may use has "
                                        "lost its capacity; it ran in a-l4 (site-lost dc-a)"]

    def test_lower_tiers_never_fail_the_gate(self, two_sites) -> None:
        relaxed = two_sites.model_copy(update={"workloads": [
            w.model_copy(update={"rto_minutes": None}) if w.name == "search" else w for w in two_sites.workloads]})
        result = run_scenario(relaxed, plan(relaxed), lost("dc-a"), FailoverOptions())
        assert [i.workload for i in result.lost] == ["reports"]
        assert result.passed

    def test_the_report_covers_every_scenario_from_the_same_base(self, two_sites) -> None:
        base = plan(two_sites)
        report = drill(two_sites, base, [lost("dc-a"), lost("dc-b")])
        assert [r.scenario.name for r in report.results] == ["lost-dc-a", "lost-dc-b"]
        assert all(r.usd_per_month_before == base.cash_usd_per_month for r in report.results)
        assert [r.passed for r in report.results] == [False, True]
        assert not report.passed and [r.scenario.name for r in report.failed] == ["lost-dc-a"]

    def test_cost_delta(self, two_sites) -> None:
        base = plan(two_sites)
        result = run_scenario(two_sites, base, lost("dc-a"), FailoverOptions())
        # an owned site lost, no new machine: every pool is committed, paid whether used, and lost or not.
        # cash before = after = a-l4 4 × 730 × $1 + b-l4 1 × 730 × $2 + b-t4 2 × 730 × $0.40 = 2920 + 1460 + 584
        assert result.usd_per_month_before == 4964.0
        assert result.usd_per_month_after == 4964.0
        assert result.usd_per_month_delta == 0.0  # not the −$478 of amortized compute it showed before
        assert {i.workload: i.usd_per_month_delta for i in result.impacts} == {"checkout": 0.0, "search": 0.0,
                                                                               "reports": 0.0}


class TestStabilityMeasured:
    """On a fleet with room to spare, a site loss moves the lost site's work and nothing else."""

    @staticmethod
    def fleet(seed: int):
        rng = random.Random(seed)
        sites = [onprem(f"dc-{i}", [pool(f"dc{i}-l4", "L4", 64, round(rng.uniform(0.6, 1.2), 2)),
                                    pool(f"dc{i}-h100", "H100", 32, round(rng.uniform(1.8, 2.6), 2))])
                 for i in range(4)]
        workloads = []
        for n in range(40):
            kind = rng.choice(["realtime_inference", "training", "batch_inference"])
            extra = {} if kind == "realtime_inference" else {"hours_per_month": rng.choice([50, 200, 400])}
            gpu = rng.choice([["L4"], ["H100"], ["L4", "H100"]])
            workloads.append(workload(f"w{n}", kind, gpu, replicas=rng.randint(1, 3), **extra))
        return inventory(sites, workloads)

    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_workloads_off_the_lost_site_do_not_move(self, seed: int) -> None:
        inv = self.fleet(seed)
        base = plan(inv)
        for site in inv.sites:
            result = replan(inv, base, [Event(EventKind.SITE_LOST, site.name)])
            on_site = {p.workload for p in base.placements if p.site == site.name}
            assert result.after.unplaced == ()
            moved = [w.name for w in inv.workloads if w.name not in on_site
                     and by_pool(base.placements, w.name) != by_pool(result.after.placements, w.name)]
            assert moved == [], f"site-lost {site.name} moved healthy workloads {moved}"

    def test_standard_drill_on_a_roomy_fleet_passes(self) -> None:
        inv = self.fleet(4)
        report = drill(inv, plan(inv), standard_scenarios(inv))
        assert report.passed
        assert {r.scenario.name for r in report.results} >= {"site-lost-dc-0", "capacity-l4-half"}


class TestRunbooksAreBuilt:
    def test_every_scenario_builds_its_runbook_and_rollback(self, two_sites) -> None:
        report = drill(two_sites, plan(two_sites), [lost("dc-a"), lost("dc-b")])
        assert all(r.runbook_problem is None for r in report.results)
        assert all(r.steps > 0 for r in report.results)  # at least: confirm, then fence the lost site

    def test_a_scenario_whose_runbook_cannot_be_built_fails(self, two_sites) -> None:
        from hybridctl.core.deploy.steps import StepGraphError
        from hybridctl.core.failover.plan_steps import plain_steps

        base = plan(two_sites)
        steps = plain_steps(two_sites)

        def broken(p):  # type: ignore[no-untyped-def]
            if p is base:
                return steps(p)
            raise StepGraphError("the steps depend on each other in a cycle: ['a', 'b']")

        result = run_scenario(two_sites, base, lost("dc-b"), FailoverOptions(), FailoverRun(steps_for=broken))
        assert not result.passed
        assert result.gate_failures[0] == ("its runbook cannot be built: the steps depend on each other in a cycle: "
                                           "['a', 'b']")

    def test_each_plan_s_steps_are_built_once_per_scenario(self, two_sites) -> None:
        """The runbook and its rollback both diff the applied plan's steps against the failover plan's:
        a fleet's stack configurations are derived once per plan, not once per runbook."""
        from hybridctl.core.failover.plan_steps import plain_steps

        base = plan(two_sites)
        steps = plain_steps(two_sites)
        built: list[object] = []

        def counted(p):  # type: ignore[no-untyped-def]
            built.append(p)
            return steps(p)

        result = run_scenario(two_sites, base, lost("dc-b"), FailoverOptions(), FailoverRun(steps_for=counted))
        assert result.runbook_problem is None and result.steps > 0
        assert len(built) == 2 and built[0] is base and built[1] is not base
