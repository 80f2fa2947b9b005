"""What `synth` writes for the cloud-burst example, run against Kueue's documented behaviour
(kueue_model.py): burst work spills over on premises first, the manager's quota and its own work are
right, capacity is checked before admission, and always-on GPUs are within some queue's reach."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.paths import inventories_dir, stacks_dir
from kueue_model import Cluster, kubeconfig_accepted, submit

ROOT = Path(__file__).resolve().parents[2]


@cache
def planned(example: str = "cloud-burst.yaml") -> tuple[Inventory, Plan]:
    inventory = load_inventory(inventories_dir() / example).inventory
    return inventory, plan(inventory)


def planned_gpus(workload: str, sites: set[str]) -> int:
    return sum(p.gpus for p in planned()[1].placements if p.workload == workload and p.site in sites)


def sites_of(cluster: str) -> set[str]:
    return {s.name for s in planned()[0].sites if s.cluster == cluster}


@cache
def runs(example: str = "cloud-burst.yaml") -> dict[str, ProgramRun]:
    inventory, plan_ = planned(example)
    configs = stack_configs(inventory, plan_, "sha256:test")
    return {c.cluster_name: synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in configs.queues}


def clusters(example: str = "cloud-burst.yaml") -> dict[str, Cluster]:
    """Fresh clusters (nothing admitted yet) from the synthesized queues stacks."""
    return {name: Cluster(name, [r.inputs for r in run.resources if r.type.startswith("kubernetes:")])
            for name, run in runs(example).items()}


def manager_of(found: dict[str, Cluster]) -> str:
    (manager,) = [name for name, c in found.items() if c.workers()]
    return manager


class TestMultiKueue:
    def test_an_on_prem_cluster_is_a_worker(self) -> None:
        found = clusters()
        assert found[manager_of(found)].workers() == ["ash-k8s"]  # the on-prem cluster of dc-ashburn

    def test_the_managers_quota_does_not_cap_what_the_workers_were_planned(self) -> None:
        """foundation-pretrain: 32 GPUs planned on premises. Before: the manager's dispatching queue held its
        own share (16), so only two 8-GPU jobs ever reached the worker."""
        found = clusters()
        manager = manager_of(found)
        on_workers = planned_gpus("foundation-pretrain", sites_of("ash-k8s"))
        assert on_workers >= 32
        placed = [submit(found, manager, "foundation-pretrain", "foundation-pretrain", 8) for _ in range(on_workers // 8 + 1)]
        assert placed == ["ash-k8s"] * (on_workers // 8) + [None]  # every planned GPU of the worker, then it waits

    def test_the_managers_own_share_runs_on_the_manager_through_its_own_queue(self) -> None:
        """Kueue never runs a dispatching queue's work on the manager: its planned 16 GPUs are reached
        through `foundation-pretrain-local`, a queue that does not dispatch."""
        found = clusters()
        manager = manager_of(found)
        assert manager not in found[manager].workers()
        own = planned_gpus("foundation-pretrain", sites_of(manager))
        local = found[manager].cluster_queue_of("foundation-pretrain", "foundation-pretrain-local")
        assert own and local is not None and not found[manager].dispatches(local)
        room = found[manager].free(local)  # its own share, and any other workload's of the same reach
        assert room >= own
        placed = [submit(found, manager, "foundation-pretrain", "foundation-pretrain-local", 8, ["cloud-burst-provisioning"])
                  for _ in range(room // 8 + 1)]
        assert placed == [manager] * (room // 8) + [None]

    def test_jobs_without_a_queue_label_get_their_namespaces_queue(self) -> None:
        found = clusters()
        for cluster in found.values():
            for ns in cluster.of("Namespace"):
                default = cluster.cluster_queue_of(ns["metadata"]["name"], "default")
                assert default is not None
                assert default == cluster.cluster_queue_of(ns["metadata"]["name"], ns["metadata"]["name"])

    def test_workers_are_nominated_one_at_a_time_in_spill_order(self) -> None:
        conf = runs()[manager_of(clusters())].outputs["kueueConfiguration"]
        assert conf["multiKueue"] == {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                                      "incrementalDispatcherConfig": {"stepSize": 1}}

    def test_worker_kubeconfigs_are_secrets_and_the_documented_one_has_no_exec_plugin(self) -> None:
        found = clusters()
        for remote in found[manager_of(found)].of("MultiKueueCluster"):
            assert remote["spec"]["clusterSource"]["kubeConfig"]["locationType"] == "Secret"
        readme = (ROOT / "stacks" / "README.md").read_text()
        block = re.search(r"```yaml\n(# a MultiKueue worker's kubeconfig.*?)```", readme, re.S)
        assert block, "stacks/README.md shows the kubeconfig to put in a worker's Secret"
        documented: dict[str, Any] = yaml.safe_load(block.group(1))
        assert kubeconfig_accepted(documented)
        with_exec = {**documented, "users": [{"name": "x", "user": {"exec": {"command": "aws"}}}]}
        assert not kubeconfig_accepted(with_exec)  # what `aws eks get-token` gives: Kueue refuses it


class TestCapacityBeforeAdmission:
    def test_cloud_burst_and_opportunistic_queues_wait_for_provisioned_capacity(self) -> None:
        found = clusters()
        cloud = found["ml-use1"]
        (config,) = cloud.of("ProvisioningRequestConfig")
        assert config["spec"]["provisioningClassName"] == "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
        for queue in cloud.of("ClusterQueue"):
            tier = queue["metadata"]["labels"]["hybridctl.io/tier"]
            expected = [] if tier == "fixed" else ["cloud-burst-multikueue"] if cloud.dispatches(queue) \
                else ["cloud-burst-provisioning"]
            assert cloud.checks(queue) == expected, queue["metadata"]["name"]

    def test_a_two_node_gang_is_not_admitted_half_provisioned(self) -> None:
        found = clusters()
        cloud = found["ml-use1"]
        queue = cloud.cluster_queue_of("foundation-pretrain", "foundation-pretrain-local")
        assert queue is not None and cloud.free(queue) >= 16  # two p5s' worth of quota
        assert not cloud.admit(queue, 16)  # quota, but the nodes are not there: it waits
        assert cloud.admit(queue, 16, ["cloud-burst-provisioning"])  # all of them provisioned

    def test_kueue_evicts_a_gang_whose_pods_are_not_ready_in_time(self) -> None:
        for run in runs().values():
            ready = run.outputs["kueueConfiguration"]["waitForPodsReady"]
            assert ready["timeout"] and ready["requeuingStrategy"]["timestamp"] == "Eviction"


class TestAlwaysOnGpus:
    def test_idle_on_prem_and_always_on_gpus_are_in_the_cohorts_pool(self) -> None:
        found = clusters()
        (cohort,) = found["ash-k8s"].of("Cohort")
        pool = {f["name"]: f["resources"][0]["nominalQuota"] for g in cohort["spec"]["resourceGroups"] for f in g["flavors"]}
        l40s = sum(p.gpus for p in planned()[1].placements if p.pool == "ash-l40s")
        assert 0 < l40s < 16 and pool.get("ash-l40s") == 16 - l40s  # owned GPUs no queue held before
        # and a queue reaching the flavor can borrow them
        burst = found["ash-k8s"].cluster_queue_of("nightly-eval", "nightly-eval")
        assert burst is not None
        flavors = {f["name"] for g in burst["spec"]["resourceGroups"] for f in g["flavors"]}
        assert "ash-l40s" in flavors
        assert found["ash-k8s"].free(burst) == planned_gpus("nightly-eval", {"dc-ashburn"}) + sum(pool.get(f, 0) for f in flavors)
