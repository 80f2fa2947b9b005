"""The steps and stack configurations a drill derives from its base plan's (StackConfigMemo, plain_steps)
are exactly those derived from scratch, for every plan a drill meets and for hand-made changes that reach
each input of a configuration."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
from hybridctl.core.deploy.stackplanned import burst_spread, cluster_of, multikueue_groups, spanning_of
from hybridctl.core.deploy.stackreuse import StackConfigMemo
from hybridctl.core.deploy.stackvalues import StackConfigs
from hybridctl.core.deploy.steps import BundleRef, DeployedStep, StepPlan, apply_steps, cloud_stacks
from hybridctl.core.failover.plan_steps import REHEARSAL_DIGEST, derived_steps, plain_steps
from hybridctl.core.failover.replan import replan
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Placement, Plan
from hybridctl.core.plan.serialize import plan_from_dict, plan_to_dict
from hybridctl.drivers.inventory_files import load_inventory
from inventory_gen import generate
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

DIGEST = "sha256:x"


def scratch_steps(inventory: Inventory, p: Plan) -> StepPlan:
    return apply_steps(p, inventory, stacks=cloud_stacks(inventory, p, REHEARSAL_DIGEST))


class Drilled:
    """A base plan's memo and steps, as a drill holds them, and the checks every variant must pass."""

    def __init__(self, inventory: Inventory, base: Plan) -> None:
        self.inventory, self.base = inventory, base
        self.memo = StackConfigMemo()
        self.first = stack_configs(inventory, base, DIGEST, memo=self.memo)
        self.steps_for = plain_steps(inventory)
        self.steps_for(base)

    def configs(self, variant: Plan) -> StackConfigs:
        """The variant's configurations from the memo, asserted equal to those from scratch."""
        got = stack_configs(self.inventory, variant, DIGEST, memo=self.memo)
        assert got == stack_configs(self.inventory, variant, DIGEST)
        got_steps = self.steps_for(variant)
        assert got_steps == scratch_steps(self.inventory, variant)
        return got

    def replaced(self, change: Callable[[Placement], Placement | None]) -> Plan:
        """The base plan with `change` applied to each placement (None drops it), keeping the others' objects."""
        kept = (change(p) for p in self.base.placements)
        return dataclasses.replace(self.base, placements=tuple(p for p in kept if p is not None))


@cache
def example(path: Path) -> Drilled:
    inventory = load_inventory(path).inventory
    return Drilled(inventory, plan(inventory, options=AT_PLAN_WEEK))


@cache
def fleet() -> Drilled:
    # 4 clusters; one burst workload spans two of them, with as many GPUs in each (the name decides the manager)
    inventory = Inventory.model_validate(generate(1000, 100, 1))
    base = plan(inventory)
    clusters = cluster_of(inventory)
    spanning = spanning_of(burst_spread(base.placements, clusters))[0]
    if len(spanning) != 1 or any(p.tier != "burst" for p in base.placements if p.workload in spanning):
        # Not the premise (the planner's choices move): keep each spanning workload in one cluster, then
        # span one burst workload by hand, as many GPUs in another cluster.
        keep = {p.workload: clusters[p.site] for p in reversed(base.placements) if p.workload in spanning and p.site in clusters}
        kept = tuple(p for p in base.placements
                     if p.workload not in spanning or p.site not in clusters or clusters[p.site] == keep[p.workload])
        lone = next(p for p in kept if p.tier == "burst" and p.site in clusters and p.gpus
                    and sum(q.workload == p.workload for q in kept) == 1)
        other = next(s for s, c in sorted(clusters.items()) if c != clusters[lone.site])
        pool = next(q.name for s in inventory.sites if s.name == other for q in s.pools)
        base = dataclasses.replace(base, placements=(*kept, dataclasses.replace(lone, site=other, pool=pool)))
    return Drilled(inventory, base)


@cache
def two_spanning() -> Drilled:
    """The fleet with a second burst workload spanning clusters: one of the first's, and one it does not reach."""
    drilled = fleet()
    clusters = cluster_of(drilled.inventory)
    (manager, workers), = _groups(drilled, drilled.base)[0].items()
    spanning, _ = spanning_of(burst_spread(drilled.base.placements, clusters))
    outside = sorted(set(clusters.values()) - {manager, *workers})[0]
    lone = next(p for p in drilled.base.placements
                if p.tier == "burst" and clusters.get(p.site) == outside and p.workload not in spanning and p.gpus
                and sum(q.workload == p.workload for q in drilled.base.placements) == 1)
    site = next(s for s, c in sorted(clusters.items()) if c == workers[0])
    copy = dataclasses.replace(lone, site=site, pool=next(q.name for s in drilled.inventory.sites if s.name == site
                                                          for q in s.pools))
    return Drilled(drilled.inventory, dataclasses.replace(drilled.base, placements=(*drilled.base.placements, copy)))


def _check_scenarios(drilled: Drilled, every: int) -> None:
    for scenario in standard_scenarios(drilled.inventory)[::every]:
        after = replan(drilled.inventory, drilled.base, scenario.events).after
        try:
            drilled.configs(after)
        except AssertionError as exc:
            raise AssertionError(f"scenario {scenario.name}") from exc


@pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.name)
def test_every_standard_scenario_of_every_example_gets_the_steps_derived_from_scratch(path: Path) -> None:
    _check_scenarios(example(path), every=1)


def test_standard_scenarios_of_a_synthetic_fleet_get_the_steps_derived_from_scratch() -> None:
    _check_scenarios(fleet(), every=3)


def _groups(drilled: Drilled, p: Plan) -> tuple[dict[str, tuple[str, ...]], dict[str, set[str]]]:
    managers, mirrored, _ = multikueue_groups(*spanning_of(burst_spread(p.placements, cluster_of(drilled.inventory))))
    return managers, mirrored


def _spanning(drilled: Drilled) -> tuple[str, list[Placement]]:
    spanning, _ = spanning_of(burst_spread(drilled.base.placements, cluster_of(drilled.inventory)))
    assert spanning, "the fleet has no burst work spanning clusters"
    name = sorted(spanning)[0]
    return name, [p for p in drilled.base.placements if p.workload == name]


class TestHandMadeChanges:
    def test_more_gpus_in_the_manager_cluster_hands_the_manager_role_to_another_cluster(self) -> None:
        drilled = fleet()
        (manager, _), = _groups(drilled, drilled.base)[0].items()
        clusters = cluster_of(drilled.inventory)
        _, placed = _spanning(drilled)
        target = next(p for p in placed if p.tier == "burst" and clusters.get(p.site) == manager)
        variant = drilled.replaced(lambda p: dataclasses.replace(p, gpus=p.gpus + 64) if p is target else p)
        assert manager not in _groups(drilled, variant)[0]  # the role moved
        got = drilled.configs(variant)
        assert got.queues != drilled.first.queues

    def test_a_new_manager_changes_the_queues_of_workloads_mirrored_there_that_did_not_change(self) -> None:
        drilled = two_spanning()
        (manager, _), = _groups(drilled, drilled.base)[0].items()
        clusters = cluster_of(drilled.inventory)
        spanning, _ = spanning_of(burst_spread(drilled.base.placements, clusters))
        assert len(spanning) >= 2  # burst and opportunistic work that spans clusters
        target = next(p for p in drilled.base.placements
                      if p.workload in spanning and p.tier == "burst" and clusters.get(p.site) == manager)
        variant = drilled.replaced(lambda p: dataclasses.replace(p, gpus=p.gpus + 64) if p is target else p)
        assert manager not in _groups(drilled, variant)[0]
        drilled.configs(variant)

    def test_a_workload_mirrored_into_a_cluster_it_is_not_placed_in_stays_there_when_it_changes(self) -> None:
        """One spanning workload changes, and so does another workload in a cluster that only mirrors it."""
        drilled = two_spanning()
        clusters = cluster_of(drilled.inventory)
        spanning, _ = spanning_of(burst_spread(drilled.base.placements, clusters))
        mirrored = _groups(drilled, drilled.base)[1]
        one = sorted(spanning)[0]
        at = {clusters[p.site] for p in drilled.base.placements if p.workload == one and p.site in clusters}
        elsewhere = sorted(set(mirrored) - at)[0]
        changed = next(p for p in drilled.base.placements if p.workload == one)
        other = next(p for p in drilled.base.placements
                     if clusters.get(p.site) == elsewhere and p.workload not in spanning and p.gpus)
        variant = drilled.replaced(lambda p: dataclasses.replace(p, gpus=p.gpus + 1) if p is other else
                                   dataclasses.replace(p) if p is changed else p)
        drilled.configs(variant)

    def test_a_workload_that_stops_spanning_clusters_leaves_every_cluster_of_the_group(self) -> None:
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        spanning, _ = spanning_of(burst_spread(drilled.base.placements, clusters))
        placed = [p for p in drilled.base.placements if p.workload in spanning]
        # keep each spanning workload's work in one cluster only: MultiKueue no longer dispatches anything
        keep = {p.workload: clusters[p.site] for p in reversed(placed) if p.site in clusters}
        ids = {id(p) for p in placed}
        variant = drilled.replaced(lambda p: None if id(p) in ids and clusters.get(p.site) != keep[p.workload] else p)
        assert _groups(drilled, variant) == ({}, {})
        drilled.configs(variant)

    def test_a_workload_that_starts_spanning_clusters_is_mirrored_into_every_cluster_of_the_group(self) -> None:
        """Its burst work in the manager's cluster, as many GPUs in a worker's: the manager stays, and its
        cluster, where nothing changed, gets the workload mirrored all the same."""
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        ((manager, workers),), _ = (tuple(g.items()) for g in _groups(drilled, drilled.base))
        spanning, _ = spanning_of(burst_spread(drilled.base.placements, clusters))
        lone = next(p for p in drilled.base.placements
                    if p.tier == "burst" and clusters.get(p.site) == manager and p.workload not in spanning and p.gpus
                    and sum(q.workload == p.workload for q in drilled.base.placements) == 1)
        worker_site = next(s for s, c in sorted(clusters.items()) if c == workers[0])
        pool = next(q.name for s in drilled.inventory.sites if s.name == worker_site for q in s.pools)
        copy = dataclasses.replace(lone, site=worker_site, pool=pool)
        variant = dataclasses.replace(drilled.base, placements=(*drilled.base.placements, copy))
        managers, mirrored = _groups(drilled, variant)
        assert manager in managers and lone.workload in mirrored[manager]
        drilled.configs(variant)

    def test_a_group_that_changes_workers_reaches_the_manager_where_nothing_changed(self) -> None:
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        ((manager, workers),), _ = (tuple(g.items()) for g in _groups(drilled, drilled.base))
        _, placed = _spanning(drilled)
        target = next(p for p in placed if p.tier == "burst" and clusters.get(p.site) == workers[0])
        other = next(s for s, c in sorted(clusters.items()) if c not in (manager, *workers))
        pool = next(q.name for s in drilled.inventory.sites if s.name == other for q in s.pools)
        variant = drilled.replaced(lambda p: dataclasses.replace(p, site=other, pool=pool) if p is target else p)
        managers, _ = _groups(drilled, variant)
        assert managers != {manager: workers}  # another group: its manager (the fewest GPUs) or its workers
        drilled.configs(variant)

    def test_a_change_only_in_a_pools_machines_resizes_its_node_group(self) -> None:
        drilled = fleet()
        planned = {(c.site, n.name) for c in drilled.first.gpu_pools for n in c.node_pools}
        busy = next(u for u in drilled.base.pools if (u.site, u.pool) in planned)
        variant = dataclasses.replace(drilled.base, pools=tuple(
            dataclasses.replace(u, machines=u.machines + 5) if u is busy else u for u in drilled.base.pools))
        got = drilled.configs(variant)
        assert got.gpu_pools != drilled.first.gpu_pools and got.queues == drilled.first.queues

    def test_a_change_only_in_a_workloads_tier_repoints_its_queue(self) -> None:
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        on_cloud = {p.workload for p in drilled.base.placements if p.site in clusters and p.tier == "burst"}
        name = sorted(on_cloud)[0]
        variant = drilled.replaced(lambda p: dataclasses.replace(p, tier="opportunistic") if p.workload == name else p)
        got = drilled.configs(variant)
        assert got.queues != drilled.first.queues

    def test_a_placement_of_another_tier_beside_the_others_is_derived_in_full(self) -> None:
        """A workload with placements of two tiers takes its last placement's, which only the whole
        plan's order tells: the memo must not guess it from the changed placements. The changed
        placement first and last of its workload's: one of the two would catch any guess."""
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        twice = next(p for p in drilled.base.placements  # the first of its workload's placements
                     if p.site in clusters and sum(q.workload == p.workload for q in drilled.base.placements) > 1)
        for tier in sorted({"fixed", "burst", "opportunistic"} - {twice.tier}):
            changed = dataclasses.replace(twice, tier=tier)
            in_place = drilled.replaced(lambda p, c=changed: c if p is twice else p)
            drilled.configs(in_place)
            drilled.configs(dataclasses.replace(in_place, placements=(
                *(p for p in in_place.placements if p is not changed), changed)))

    def test_a_base_plan_with_a_workload_of_two_tiers_lets_the_order_of_placements_decide(self) -> None:
        """Its tier is its last placement's: a variant holding the very same placements in another order
        gives it another tier, which no delta shows."""
        drilled = fleet()
        clusters = cluster_of(drilled.inventory)
        twice = next(p for p in drilled.base.placements if p.site in clusters and p.tier == "burst"
                     and sum(q.workload == p.workload for q in drilled.base.placements) > 1)
        mixed = Drilled(drilled.inventory, drilled.replaced(
            lambda p: dataclasses.replace(p, tier="opportunistic") if p is twice else p))
        reordered = dataclasses.replace(mixed.base, placements=mixed.base.placements[::-1])
        mixed.configs(reordered)

    def test_another_digest_or_inventory_is_derived_in_full(self) -> None:
        drilled = fleet()
        moved = drilled.base.placements[0]
        variant = drilled.replaced(lambda p: dataclasses.replace(p, gpus=p.gpus + 1) if p is moved else p)
        assert stack_configs(drilled.inventory, variant, "sha256:y", memo=drilled.memo) == stack_configs(
            drilled.inventory, variant, "sha256:y")
        renamed = drilled.inventory.model_copy(update={"name": "renamed"})
        assert stack_configs(renamed, variant, DIGEST, memo=drilled.memo) == stack_configs(renamed, variant, DIGEST)

    def test_a_change_at_a_site_with_hosts_reaches_its_ansible_steps(self) -> None:
        drilled = example(next(p for p in EXAMPLE_PATHS if p.name == "enterprise"))
        hosted = {h.pool for s in drilled.inventory.sites for h in s.hosts}
        target = next(p for p in drilled.base.placements if p.pool in hosted and p.replicas)
        first = drilled.steps_for(drilled.base)
        for variant in (drilled.replaced(lambda p: dataclasses.replace(p, replicas=0) if p is target else p),
                        drilled.replaced(lambda p: dataclasses.replace(p, workload="w-new") if p is target else p)):
            drilled.configs(variant)
            assert drilled.steps_for(variant).graph != first.graph


class TestPlansOfTheirOwnDigest:
    """The failover command tags each plan's stacks with that plan's file digest (derived_steps with plan_digest):
    the failover plan's stacks still come from the applied plan's, and equal those derived from scratch."""

    def test_a_variant_of_another_digest_gets_the_stacks_from_scratch_tagged_with_its_own(self) -> None:
        drilled = fleet()
        memo = StackConfigMemo()
        cloud_stacks(drilled.inventory, drilled.base, DIGEST, memo)
        moved = drilled.base.placements[0]
        variant = drilled.replaced(lambda p: dataclasses.replace(p, gpus=p.gpus + 1) if p is moved else p)
        got = cloud_stacks(drilled.inventory, variant, "sha256:y", memo)
        scratch = cloud_stacks(drilled.inventory, variant, "sha256:y")
        assert got == scratch
        assert [s.identity_digest for s in got] == [s.identity_digest for s in scratch]
        assert {s.config["planDigest"] for s in got} == {"sha256:y"}

    def test_a_tagged_stack_keeps_its_identity_and_changes_its_tag_alone(self) -> None:
        drilled = fleet()
        stack = cloud_stacks(drilled.inventory, drilled.base, DIGEST)[0]
        tagged = stack.tagged("sha256:y")
        assert tagged.identity_digest == stack.identity_digest
        assert {k: v for k, v in tagged.config.items() if k != "planDigest"} == {
            k: v for k, v in stack.config.items() if k != "planDigest"}
        assert tagged.config["planDigest"] == "sha256:y" and stack.config["planDigest"] == DIGEST
        assert stack.tagged(DIGEST) is stack

    @pytest.mark.parametrize("path", EXAMPLE_PATHS, ids=lambda p: p.name)
    def test_apply_steps_with_deployed_state_and_bundles_as_from_scratch(self, path: Path) -> None:
        drilled = example(path)
        inventory = drilled.inventory
        bundles = {w.name: BundleRef(w.name, f"/bundles/{w.name}", "m", "1", "0" * 64) for w in inventory.workloads}
        options = {"bundles": bundles, "bundle_public_key": "/keys/pub", "asset_digests": {"node.yml": "sha256:n"}}
        made = apply_steps(drilled.base, inventory, **options)  # type: ignore[arg-type]
        deployed = {s.id: DeployedStep(s.id, s.kind, s.site, dict(s.params)) for s in made.graph if s.deploys}
        steps_for = derived_steps(inventory, plan_digest, deployed=deployed, **options)  # type: ignore[arg-type]
        assert steps_for(drilled.base) == apply_steps(drilled.base, inventory, deployed=deployed, **options)  # type: ignore[arg-type]
        for scenario in standard_scenarios(inventory)[::4]:
            after = replan(inventory, drilled.base, scenario.events).after
            assert steps_for(after) == apply_steps(after, inventory, deployed=deployed, **options), scenario.name  # type: ignore[arg-type]

    def test_a_plan_read_from_another_file_is_derived_as_from_scratch(self) -> None:
        drilled = fleet()
        memo = StackConfigMemo()
        cloud_stacks(drilled.inventory, drilled.base, DIGEST, memo)
        read_back = plan_from_dict(plan_to_dict(drilled.base, plan_file=True))
        assert not set(map(id, read_back.placements)) & set(map(id, drilled.base.placements))
        assert cloud_stacks(drilled.inventory, read_back, "sha256:y", memo) == cloud_stacks(
            drilled.inventory, read_back, "sha256:y")
