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
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.parallel import map_in_processes
from hybridctl.paths import inventories_dir
from support.plan_week import AT_PLAN_WEEK


@pytest.fixture(scope="module")
def enterprise():
    inventory = load_inventory(inventories_dir() / "enterprise").inventory
    # every third scenario: site losses, spot reclaims, capacity cuts and a link down, in a few seconds
    return inventory, plan(inventory, options=AT_PLAN_WEEK), standard_scenarios(inventory)[::3]


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
    """The pipeline hands the runbook and the rollback the steps it built for the same plan (steps_once), and
    plain_steps reuses the queues of clusters placed the same: the runbooks they give are byte for
    byte those built with every plan's steps derived afresh."""
    from hybridctl.core.deploy.steps import apply_steps, cloud_stacks
    from hybridctl.core.failover.pipeline import failover
    from hybridctl.core.failover.plan_steps import REHEARSAL_DIGEST, plain_steps
    from hybridctl.core.failover.replan import FailoverOptions
    from hybridctl.core.failover.run import FailoverRun
    from hybridctl.core.failover.serialize import runbook_to_json

    inventory, base, scenarios = enterprise

    def fresh(p):  # type: ignore[no-untyped-def]
        # every plan's steps and stacks derived from nothing (plain_steps reuses clusters' queues)
        return apply_steps(p, inventory, stacks=cloud_stacks(inventory, p, REHEARSAL_DIGEST))

    shared = plain_steps(inventory)  # one for all scenarios, as a drill has
    for scenario in scenarios:
        runbooks = []
        for steps_for in (fresh, shared):
            made = failover(inventory, base, scenario.events, FailoverOptions(), FailoverRun(steps_for=steps_for),
                            with_rollback=True)
            assert made.rollback is not None
            runbooks.append((runbook_to_json(made.built()), runbook_to_json(made.rollback)))
        assert runbooks[0] == runbooks[1], scenario.name


def test_the_queues_memo_gives_what_stack_configs_gives_for_every_failover_plan(enterprise) -> None:
    """Clusters a failover plan places the same on get the very queues of the applied plan; the others
    are derived again, and every configuration equals the one derived without the memo."""
    from hybridctl.core.deploy.stackconfig import stack_configs
    from hybridctl.core.deploy.stackreuse import StackConfigMemo
    from hybridctl.core.failover.replan import replan

    inventory, base, scenarios = enterprise
    memo = StackConfigMemo()
    first = stack_configs(inventory, base, "sha256:x", memo=memo)
    assert first == stack_configs(inventory, base, "sha256:x")
    reused = derived = 0
    for scenario in scenarios:
        after = replan(inventory, base, scenario.events).after
        got = stack_configs(inventory, after, "sha256:x", memo=memo)
        assert got == stack_configs(inventory, after, "sha256:x"), scenario.name
        mine = {q.cluster_name: q for q in first.queues}
        for q in got.queues:
            if mine.get(q.cluster_name) is q:
                reused += 1
            else:
                derived += 1
    assert reused and derived  # both paths were taken


def test_a_pool_whose_gpus_per_tier_change_gets_its_node_group_derived_again(enterprise) -> None:
    """Same workloads and machines on a pool, but GPUs moved between tiers: its node group's minimum
    (the fixed tier's machines) changes, and the memo must not hand back the applied plan's."""
    import dataclasses

    from hybridctl.core.deploy.stackconfig import stack_configs
    from hybridctl.core.deploy.stackreuse import StackConfigMemo

    inventory, base, _ = enterprise
    # a pay-per-use node group's minimum reads the tiers (a reserved one's is its reservation); the example's
    # pay-per-use work is all fixed-tier, its burst work is on owned and reserved GPUs: a fixed replica turns burst
    pay_per_use = {pool.name for s in inventory.sites if s.kind.value == "cloud" for pool in s.pools
                   if pool.capacity_type.value != "reserved"}
    target = next(p for p in base.placements if p.pool in pay_per_use and p.gpus)
    variant = dataclasses.replace(base, placements=tuple(
        dataclasses.replace(p, tier="burst" if p.tier == "fixed" else "fixed") if p is target else p
        for p in base.placements))
    memo = StackConfigMemo()
    before = stack_configs(inventory, base, "sha256:x", memo=memo)
    got = stack_configs(inventory, variant, "sha256:x", memo=memo)
    assert got == stack_configs(inventory, variant, "sha256:x")
    assert got.gpu_pools != before.gpu_pools  # the change reached a node group


def test_plain_steps_reuses_the_first_plan_s_steps_only_for_a_plan_that_reads_the_same(enterprise) -> None:
    """A plan equal to the first in all that apply's steps read (a scenario that moved nothing) gets the
    first plan's steps; a change to a placement or to a pool's machines gets steps derived afresh."""
    from hybridctl.core.deploy.steps import apply_steps, cloud_stacks
    from hybridctl.core.failover.plan_steps import REHEARSAL_DIGEST, plain_steps

    inventory, base, _ = enterprise
    shared = plain_steps(inventory)
    first = shared(base)
    # another plan object, other solver figures and unplaced work: the steps read none of that
    same = dataclasses.replace(base, unplaced=(), solver=dataclasses.replace(base.solver, seconds=99.0),
                               pools=tuple(dataclasses.replace(u, capacity_gpus=u.capacity_gpus + 1) for u in base.pools))
    assert shared(same) is first
    # nor a placement's reason, price or hours
    reasons = dataclasses.replace(base, placements=tuple(
        dataclasses.replace(p, reason="moved", usd_per_month=p.usd_per_month + 1, hours_per_month=1.0)
        for p in base.placements))
    assert shared(reasons) is first
    cloud = {s.name for s in inventory.sites if s.kind.value == "cloud"}
    on_cloud = next(p for p in base.placements if p.site in cloud and p.tier != "fixed" and p.gpus)
    busy = next(u for u in base.pools if u.site in cloud and u.machines)
    hosted = {h.pool for s in inventory.sites for h in s.hosts}
    on_hosts = next(p for p in base.placements if p.pool in hosted and p.replicas)
    variants = {
        "a placement's GPUs": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, gpus=p.gpus * 8) if p is on_cloud else p for p in base.placements)),
        "a placement's replicas": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, replicas=0) if p is on_hosts else p for p in base.placements)),
        "a placement's workload": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, workload="w-new") if p is on_hosts else p for p in base.placements)),
        "a placement's site": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, site=next(s for s in sorted(cloud) if s != p.site)) if p is on_cloud else p
            for p in base.placements)),
        "a placement's pool": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, pool=next(q.name for s in inventory.sites if s.name == p.site for q in s.pools
                                             if q.name != p.pool)) if p is on_cloud else p
            for p in base.placements)),
        "a placement's tier": dataclasses.replace(base, placements=tuple(
            dataclasses.replace(p, tier="fixed") if p is on_cloud else p for p in base.placements)),
        "a pool's machines": dataclasses.replace(base, pools=tuple(
            dataclasses.replace(u, machines=u.machines + 1) if u is busy else u for u in base.pools)),
        "a placement gone": dataclasses.replace(base, placements=tuple(p for p in base.placements if p is not on_cloud)),
    }
    for what, variant in variants.items():
        got = shared(variant)
        assert got == apply_steps(variant, inventory, stacks=cloud_stacks(inventory, variant, REHEARSAL_DIGEST)), what
        assert got.graph != first.graph, what  # the change reaches the steps: reusing the first plan's would be wrong
