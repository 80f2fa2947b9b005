"""Plan -> step graph: order, dependencies, identities, model sync choices, teardown."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hybridctl.core.deploy.steps import (
    BundleRef,
    CloudStack,
    DeployedStep,
    StepGraph,
    StepGraphError,
    StepKind,
    apply_steps,
    destroy_steps,
    make_step,
)
from hybridctl.core.placement.planner import plan as make_plan
from support.apply_inventories import lab_inventory


def graph_ids(inventory_changes: dict[str, Any] | None = None, **kwargs: Any) -> tuple[str, ...]:
    inventory = lab_inventory(**(inventory_changes or {}))
    return apply_steps(make_plan(inventory), inventory, **kwargs).graph.ids


def bundle(workload: str, version: str = "1") -> BundleRef:
    return BundleRef(workload, f"/bundles/{workload}", workload, version, "ab" * 32)


class TestApplyOrder:
    def test_cloud_then_queues_then_per_site_preflight_baseline_models(self) -> None:
        inventory = lab_inventory()
        step_plan = apply_steps(make_plan(inventory), inventory, bundles={"shop-vision": bundle("shop-vision")})
        graph = step_plan.graph
        assert set(graph.ids) == {
            "cloud-pools/aws-euc1", "cluster-queues/ml-euc1",
            "preflight/dc-fra", "node-baseline/dc-fra", "preflight/edge-17", "node-baseline/edge-17",
            "model-sync/edge-17/shop-vision",
        }
        position = {sid: i for i, sid in enumerate(graph.ids)}
        for step in graph:  # the order respects every dependency
            assert all(position[dep] < position[step.id] for dep in step.depends_on)
        assert graph.get("cluster-queues/ml-euc1").depends_on == ("cloud-pools/aws-euc1",)
        assert graph.get("node-baseline/dc-fra").depends_on == ("preflight/dc-fra",)
        assert graph.get("model-sync/edge-17/shop-vision").depends_on == ("node-baseline/edge-17",)
        # Sites do not wait for each other, and nodes do not wait for the cloud.
        assert graph.get("preflight/edge-17").depends_on == ()
        assert graph.dependents("preflight/dc-fra") == {"node-baseline/dc-fra"}
        assert graph.dependents("cloud-pools/aws-euc1") == {"cluster-queues/ml-euc1"}

    def test_cloud_steps_carry_the_stack_configuration(self) -> None:
        inventory = lab_inventory()
        graph = apply_steps(make_plan(inventory), inventory).graph
        pools = graph.get("cloud-pools/aws-euc1")
        assert pools.params["project"] == "aws-gpu-pools" and pools.params["stack_name"] == "lab-aws-euc1"
        config = pools.params["config"]
        assert isinstance(config, dict) and config["aws:region"] == "eu-central-1"
        queues = graph.get("cluster-queues/ml-euc1")
        assert queues.params["sites"] == ["aws-euc1"] and queues.kind == StepKind.CLUSTER_QUEUES
        assert pools.deploys and queues.deploys

    def test_ansible_steps_carry_only_their_sites_hosts(self) -> None:
        inventory = lab_inventory()
        graph = apply_steps(make_plan(inventory), inventory).graph
        baseline = graph.get("node-baseline/edge-17")
        assert baseline.params["playbook"] == "node.yml"
        hosts = baseline.params["inventory"]
        assert isinstance(hosts, dict) and list(hosts["hostvars"]) == ["edge-17-a"]
        assert graph.get("preflight/dc-fra").params["playbook"] == "preflight.yml"

    def test_a_site_without_hosts_is_noted_not_configured(self) -> None:
        inventory = lab_inventory()
        sites = [s.model_dump(mode="json") for s in inventory.sites]
        sites[1]["hosts"] = []
        inventory = lab_inventory(sites=sites)
        step_plan = apply_steps(make_plan(inventory), inventory)
        assert "preflight/edge-17" not in step_plan.graph.ids
        assert any("edge-17 lists no hosts" in n for n in step_plan.notes)


class TestModelSync:
    def test_no_bundles_directory_skips_model_sync_with_a_note(self) -> None:
        inventory = lab_inventory()
        step_plan = apply_steps(make_plan(inventory), inventory, bundles=None)
        assert not any(s.kind == StepKind.MODEL_SYNC for s in step_plan.graph)
        assert "model sync skipped: no --bundles directory given" in step_plan.notes

    def test_a_workload_without_a_bundle_is_named(self) -> None:
        inventory = lab_inventory()
        step_plan = apply_steps(make_plan(inventory), inventory, bundles={})
        assert any("no bundle for workload shop-vision" in n for n in step_plan.notes)

    def test_sync_targets_the_hosts_of_the_pools_the_workload_is_placed_in(self) -> None:
        inventory = lab_inventory()
        plan = make_plan(inventory)
        bundles = {"chat": bundle("chat"), "train": bundle("train"), "shop-vision": bundle("shop-vision")}
        step_plan = apply_steps(plan, inventory, bundles=bundles, bundle_public_key="/keys/pub.pem")
        # chat runs on fra-h100 (owned capacity fills first under the cash cost model)
        sync = step_plan.graph.get("model-sync/dc-fra/chat")
        hosts = sync.params["inventory"]
        assert isinstance(hosts, dict) and sorted(hosts["hostvars"]) == ["fra-01", "fra-02", "fra-03"]  # not fra-l4-01
        extravars = sync.params["extravars"]
        assert isinstance(extravars, dict)
        assert extravars["hybridctl_bundle_dir"] == "/bundles/chat"
        assert extravars["hybridctl_bundle_public_key_file"] == "/keys/pub.pem"
        # train runs in the cloud: it is not synced by Ansible, only on-prem/edge hosts are.
        assert not any(sid.startswith("model-sync/aws") for sid in step_plan.graph.ids)
        assert "hybridctl_common_verify_full" not in extravars

    def test_verify_full_reaches_model_sync_and_changes_its_identity(self) -> None:
        inventory = lab_inventory()
        plan = make_plan(inventory)
        refs = {"chat": bundle("chat")}
        plain = apply_steps(plan, inventory, bundles=refs).graph.get("model-sync/dc-fra/chat")
        full = apply_steps(plan, inventory, bundles=refs, verify_full=True).graph.get("model-sync/dc-fra/chat")
        assert full.params["extravars"]["hybridctl_common_verify_full"] is True  # type: ignore[index]
        assert full.key != plain.key  # so a resumed apply runs the re-hash too


class TestIdentity:
    def test_the_same_inputs_give_the_same_keys(self) -> None:
        inventory = lab_inventory()
        one = apply_steps(make_plan(inventory), inventory).graph
        two = apply_steps(make_plan(inventory), inventory).graph
        assert [s.key for s in one] == [s.key for s in two]

    def test_a_changed_host_changes_only_its_sites_steps(self) -> None:
        inventory = lab_inventory()
        before = {s.id: s.key for s in apply_steps(make_plan(inventory), inventory).graph}
        sites = [s.model_dump(mode="json") for s in inventory.sites]
        sites[1]["hosts"][0]["port"] = 2200
        changed = lab_inventory(sites=sites)
        after = {s.id: s.key for s in apply_steps(make_plan(changed), changed).graph}
        assert {sid for sid in before if before[sid] != after[sid]} == {"preflight/edge-17", "node-baseline/edge-17"}

    def test_the_plan_digest_a_stack_is_tagged_with_does_not_change_its_identity(self) -> None:
        stack = CloudStack("aws-gpu-pools", "lab-a", {"site": "a", "planDigest": "sha256:1"}, site="a")
        inventory = lab_inventory()
        plan = make_plan(inventory)
        one = apply_steps(plan, inventory, stacks=[stack]).graph.get("cloud-pools/a")
        two = apply_steps(plan, inventory, stacks=[replace(stack, config={"site": "a", "planDigest": "sha256:2"})]
                          ).graph.get("cloud-pools/a")
        three = apply_steps(plan, inventory, stacks=[replace(stack, config={"site": "b", "planDigest": "sha256:2"})]
                            ).graph.get("cloud-pools/a")
        assert one.key == two.key != three.key
        assert two.params["config"] == {"site": "a", "planDigest": "sha256:2"}  # still handed to Pulumi

    def test_an_edited_playbook_changes_its_steps(self) -> None:
        inventory = lab_inventory()
        plan = make_plan(inventory)
        one = apply_steps(plan, inventory, asset_digests={"node.yml": "sha256:1"}).graph
        two = apply_steps(plan, inventory, asset_digests={"node.yml": "sha256:2"}).graph
        assert one.get("node-baseline/dc-fra").key != two.get("node-baseline/dc-fra").key
        assert one.get("preflight/dc-fra").key == two.get("preflight/dc-fra").key


class TestGraph:
    def test_duplicate_ids_unknown_dependencies_and_cycles_are_refused(self) -> None:
        a = make_step("a", "k", "a", {})
        with pytest.raises(StepGraphError, match="two steps"):
            StepGraph.of([a, a])
        with pytest.raises(StepGraphError, match="unknown step 'x'"):
            StepGraph.of([make_step("a", "k", "a", {}, depends_on=["x"])])
        with pytest.raises(StepGraphError, match="cycle"):
            StepGraph.of([make_step("a", "k", "a", {}, depends_on=["b"]), make_step("b", "k", "b", {}, depends_on=["a"])])

    def test_ties_are_broken_by_phase_then_id(self) -> None:
        graph = StepGraph.of([make_step("z", "k", "z", {}, phase=1), make_step("b", "k", "b", {}, phase=2),
                              make_step("a", "k", "a", {}, phase=2)])
        assert graph.ids == ("z", "a", "b")

    def test_runbook_kinds_of_their_own_are_fine(self) -> None:
        step = make_step("drain/site-a", "drain-site", "drain", {"site": "site-a"})
        assert step.kind == "drain-site" and step.phase == 0 and step.key.startswith("drain/site-a@")


class TestTeardown:
    def deployed(self) -> dict[str, DeployedStep]:
        return {
            "cloud-pools/aws-a": DeployedStep("cloud-pools/aws-a", StepKind.CLOUD_POOLS, "aws-a",
                                              {"project": "aws-gpu-pools", "stack_name": "lab-aws-a", "config": {}}),
            "cloud-pools/aws-b": DeployedStep("cloud-pools/aws-b", StepKind.CLOUD_POOLS, "aws-b",
                                              {"project": "aws-gpu-pools", "stack_name": "lab-aws-b", "config": {}}),
            "cluster-queues/c1": DeployedStep("cluster-queues/c1", StepKind.CLUSTER_QUEUES, None,
                                              {"project": "k8s-queues", "stack_name": "lab-c1", "config": {},
                                               "cluster": "c1", "sites": ["aws-a", "aws-b"]}),
            "node-baseline/dc": DeployedStep("node-baseline/dc", StepKind.NODE_BASELINE, "dc", {}),
            "model-sync/dc/m": DeployedStep("model-sync/dc/m", StepKind.MODEL_SYNC, "dc", {}),
        }

    def test_destroy_takes_queues_down_before_pools_and_releases_hosts(self) -> None:
        step_plan = destroy_steps(self.deployed())
        graph = step_plan.graph
        assert graph.get("destroy/cloud-pools/aws-a").depends_on == ("destroy/cluster-queues/c1",)
        assert graph.get("destroy/cluster-queues/c1").removes == ("cluster-queues/c1",)
        assert graph.get("release/dc").removes == ("model-sync/dc/m", "node-baseline/dc")
        assert any("keep their node configuration" in n for n in step_plan.notes)
        assert graph.get("destroy/cloud-pools/aws-a").params["stack_name"] == "lab-aws-a"

    def test_destroy_of_one_site_keeps_queues_that_admit_to_another(self) -> None:
        step_plan = destroy_steps(self.deployed(), site="aws-a")
        assert step_plan.graph.ids == ("destroy/cloud-pools/aws-a",)
        assert any("cluster-queues/c1 stays" in n for n in step_plan.notes)

    def test_destroying_the_last_site_of_a_cluster_takes_its_queues(self) -> None:
        deployed = self.deployed()
        del deployed["cloud-pools/aws-b"]
        assert set(destroy_steps(deployed, site="aws-a").graph.ids) == {"destroy/cluster-queues/c1",
                                                                       "destroy/cloud-pools/aws-a"}

    def test_apply_tears_down_cloud_stacks_the_new_plan_no_longer_has(self) -> None:
        inventory = lab_inventory()
        graph = apply_steps(make_plan(inventory), inventory, deployed=self.deployed()).graph
        assert "destroy/cloud-pools/aws-b" in graph.ids and "destroy/cluster-queues/c1" in graph.ids
        # A dropped pool goes only after the new plan's queues stop admitting to it.
        assert "cluster-queues/ml-euc1" in graph.get("destroy/cloud-pools/aws-b").depends_on
        assert not any(s.startswith("release/") for s in graph.ids)  # hosts are not released by apply
