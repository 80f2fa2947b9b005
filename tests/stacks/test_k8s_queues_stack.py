"""The k8s-queues program under Pulumi's mocks: the Kueue objects that enforce the tiers."""

from __future__ import annotations

from typing import Any

import pytest
from pulumi_stack_harness import ProgramRun, Registered, config_values, import_stack_module, run_program

queues_config = import_stack_module("k8s-queues", "queues_config")
kueue_queues = import_stack_module("k8s-queues", "kueue_queues")

KUEUE = "kubernetes:kueue.x-k8s.io/v1beta2"
RF, CQ, LQ = f"{KUEUE}:ResourceFlavor", f"{KUEUE}:ClusterQueue", f"{KUEUE}:LocalQueue"
COHORT, WPC = f"{KUEUE}:Cohort", f"{KUEUE}:WorkloadPriorityClass"
MKC, MKCONFIG, CHECK = f"{KUEUE}:MultiKueueCluster", f"{KUEUE}:MultiKueueConfig", f"{KUEUE}:AdmissionCheck"
NAMESPACE = "kubernetes:core/v1:Namespace"

FLAVORS: list[dict[str, Any]] = [
    {"name": "use1-p5-on-demand", "gpuType": "H100",
     "nodeLabels": {"hybridctl.io/site": "aws-us-east-1", "hybridctl.io/pool": "p5-on-demand"}},
    {"name": "use1-p5-spot", "gpuType": "H100",
     "nodeLabels": {"hybridctl.io/site": "aws-us-east-1", "hybridctl.io/pool": "p5-spot"}},
]
QUEUES: dict[str, list[dict[str, Any]]] = {
    "fixed": [{"flavor": "use1-p5-on-demand", "gpus": 16}],
    "burst": [{"flavor": "use1-p5-on-demand", "gpus": 32}],
    "opportunistic": [{"flavor": "use1-p5-spot", "gpus": 24}, {"flavor": "use1-p5-on-demand", "gpus": 0}],
}
WORKLOADS = [
    {"name": "fraud-scoring", "tier": "fixed"},
    {"name": "llm-pretrain", "tier": "burst"},
    {"name": "embedding-backfill", "tier": "opportunistic"},
    {"name": "nightly-eval", "tier": "burst"},
]
REMOTES = [
    {"name": "ml-euw1", "kubeconfigSecret": "ml-euw1-kubeconfig"},
    {"name": "ml-usw2", "kubeconfigSecret": "ml-usw2-kubeconfig"},
]


def stack_config(**overrides: Any) -> dict[str, str]:
    values: dict[str, Any] = {
        "clusterName": "ml-use1",
        "inventoryName": "acme-hybrid",
        "planDigest": "sha256:5f2c0e",
        "cohort": "acme-hybrid",
        "flavors": FLAVORS,
        "queues": QUEUES,
        "workloads": WORKLOADS,
    }
    values.update(overrides)
    return config_values("hybridctl", {k: v for k, v in values.items() if v is not None})


def run(**overrides: Any) -> ProgramRun:
    return run_program(lambda: kueue_queues.program(queues_config.load_config()), stack_config(**overrides))


@pytest.fixture(scope="module")
def cluster() -> ProgramRun:
    return run()


@pytest.fixture(scope="module")
def multikueue() -> ProgramRun:
    return run(multiKueueClusters=REMOTES)


def queue(run_: ProgramRun, tier: str) -> dict[str, Any]:
    return run_.one(CQ, f"cq-{tier}").inputs


def gpu_quota(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """flavor -> the nvidia.com/gpu resource entry of a ClusterQueue or Cohort spec."""
    out = {}
    for group in spec.get("resourceGroups", []):
        for flavor in group["flavors"]:
            (gpu,) = [r for r in flavor["resources"] if r["name"] == "nvidia.com/gpu"]
            out[flavor["name"]] = gpu
    return out


class TestResourceInventory:
    def test_registers_the_expected_objects(self, cluster: ProgramRun) -> None:
        assert cluster.type_counts() == {RF: 2, COHORT: 1, WPC: 3, CQ: 3, NAMESPACE: 4, LQ: 4}

    def test_multikueue_adds_clusters_a_config_and_an_admission_check(self, multikueue: ProgramRun) -> None:
        assert multikueue.type_counts() == {RF: 2, COHORT: 1, WPC: 3, CQ: 3, NAMESPACE: 4, LQ: 4, MKC: 2, MKCONFIG: 1, CHECK: 1}

    def test_kueue_objects_use_the_storage_version(self, cluster: ProgramRun) -> None:
        for resource in cluster.resources:
            if resource.type.startswith("kubernetes:kueue"):
                assert resource.inputs["apiVersion"] == "kueue.x-k8s.io/v1beta2"


class TestResourceFlavors:
    def test_a_flavor_per_pool_selects_the_pool_nodes_and_tolerates_their_taint(self, cluster: ProgramRun) -> None:
        for flavor in FLAVORS:
            spec = cluster.one(RF, f"rf-{flavor['name']}").inputs["spec"]
            assert spec["nodeLabels"] == flavor["nodeLabels"]
            assert spec["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]

    def test_flavor_labels_match_the_labels_the_gpu_pools_stack_puts_on_nodes(self, cluster: ProgramRun) -> None:
        gpu_pools = import_stack_module("aws-gpu-pools", "gpu_pools")
        cfg = gpu_pools.GpuPoolsConfig(
            site="aws-us-east-1", region="us-east-1", cluster_name="ml-use1", inventory_name="acme-hybrid",
            plan_digest="sha256:5f2c0e", node_pools=(),
        )
        pool = gpu_pools.NodePool("p5-spot", "p5.48xlarge", "spot", "H100", 8, 0, 1, 8)
        node_labels = gpu_pools.node_labels(cfg, pool)
        selector = cluster.one(RF, "rf-use1-p5-spot").inputs["spec"]["nodeLabels"]
        assert selector.items() <= node_labels.items()


class TestClusterQueues:
    def test_one_queue_per_tier_all_in_the_inventory_cohort(self, cluster: ProgramRun) -> None:
        names = {r.inputs["metadata"]["name"]: r.inputs["spec"]["cohortName"] for r in cluster.of_type(CQ)}
        assert names == {
            "acme-hybrid-fixed": "acme-hybrid",
            "acme-hybrid-burst": "acme-hybrid",
            "acme-hybrid-opportunistic": "acme-hybrid",
        }

    def test_fixed_holds_its_planned_gpus_and_neither_lends_nor_borrows(self, cluster: ProgramRun) -> None:
        assert gpu_quota(queue(cluster, "fixed")["spec"]) == {
            "use1-p5-on-demand": {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 0, "borrowingLimit": 0},
        }

    def test_burst_holds_its_planned_gpus_and_may_borrow_and_lend(self, cluster: ProgramRun) -> None:
        assert gpu_quota(queue(cluster, "burst")["spec"]) == {
            "use1-p5-on-demand": {"name": "nvidia.com/gpu", "nominalQuota": 32},
        }

    def test_opportunistic_owns_nothing_and_the_cohort_pools_its_planned_gpus(self, cluster: ProgramRun) -> None:
        quota = gpu_quota(queue(cluster, "opportunistic")["spec"])
        assert quota == {
            "use1-p5-spot": {"name": "nvidia.com/gpu", "nominalQuota": 0},
            "use1-p5-on-demand": {"name": "nvidia.com/gpu", "nominalQuota": 0},
        }
        # Flavors are tried in the planned order: spot first.
        flavors = queue(cluster, "opportunistic")["spec"]["resourceGroups"][0]["flavors"]
        assert [f["name"] for f in flavors] == ["use1-p5-spot", "use1-p5-on-demand"]
        cohort = cluster.one(COHORT, "cohort").inputs
        assert cohort["metadata"]["name"] == "acme-hybrid"
        assert gpu_quota(cohort["spec"]) == {"use1-p5-spot": {"name": "nvidia.com/gpu", "nominalQuota": 24}}

    def test_tiers_only_see_the_flavors_they_may_use(self, cluster: ProgramRun) -> None:
        # Spot capacity is for preemptible work only: fixed and burst never list it.
        for tier in ("fixed", "burst"):
            assert "use1-p5-spot" not in gpu_quota(queue(cluster, tier)["spec"])

    def test_fixed_and_burst_reclaim_lent_quota_by_preemption(self, cluster: ProgramRun) -> None:
        for tier in ("fixed", "burst"):
            assert queue(cluster, tier)["spec"]["preemption"] == {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}

    def test_opportunistic_never_preempts(self, cluster: ProgramRun) -> None:
        assert queue(cluster, "opportunistic")["spec"]["preemption"] == {
            "reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"},
        }

    def test_each_queue_admits_only_namespaces_of_its_tier(self, cluster: ProgramRun) -> None:
        for tier in ("fixed", "burst", "opportunistic"):
            assert queue(cluster, tier)["spec"]["namespaceSelector"] == {"matchLabels": {"hybridctl.io/tier": tier}}

    def test_a_tier_with_no_usable_flavor_gets_an_empty_queue(self) -> None:
        empty = run(queues={"fixed": QUEUES["fixed"], "burst": QUEUES["burst"]})
        assert queue(empty, "opportunistic")["spec"]["resourceGroups"] == []
        assert empty.one(COHORT, "cohort").inputs["spec"] == {}

    def test_cpu_and_memory_are_covered_when_flavors_give_them(self) -> None:
        flavors = [{**f, "cpuPerGpu": 24, "memoryGiBPerGpu": 256} for f in FLAVORS]
        run_ = run(flavors=flavors)
        group = queue(run_, "fixed")["spec"]["resourceGroups"][0]
        assert group["coveredResources"] == ["nvidia.com/gpu", "cpu", "memory"]
        assert group["flavors"][0]["resources"] == [
            {"name": "nvidia.com/gpu", "nominalQuota": 16, "lendingLimit": 0, "borrowingLimit": 0},
            {"name": "cpu", "nominalQuota": 384, "lendingLimit": 0, "borrowingLimit": 0},
            {"name": "memory", "nominalQuota": "4096Gi", "lendingLimit": 0, "borrowingLimit": 0},
        ]


class TestPrioritiesAndLocalQueues:
    def test_priority_classes_rank_fixed_over_burst_over_opportunistic(self, cluster: ProgramRun) -> None:
        value = {r.name: r.inputs["value"] for r in cluster.of_type(WPC)}
        assert value["wpc-fixed"] > value["wpc-burst"] > value["wpc-opportunistic"] > 0

    def test_a_namespace_and_local_queue_per_workload_point_at_its_tier(self, cluster: ProgramRun) -> None:
        for workload in WORKLOADS:
            ns = cluster.one(NAMESPACE, f"ns-{workload['name']}").inputs["metadata"]
            assert ns["name"] == workload["name"]
            assert ns["labels"]["hybridctl.io/tier"] == workload["tier"]
            lq = cluster.one(LQ, f"lq-{workload['name']}").inputs
            assert lq["metadata"]["namespace"] == workload["name"]
            assert lq["spec"] == {"clusterQueue": f"acme-hybrid-{workload['tier']}"}

    def test_exports_what_a_job_needs_to_be_admitted(self, cluster: ProgramRun) -> None:
        assert cluster.outputs["workloads"]["llm-pretrain"] == {
            "namespace": "llm-pretrain", "localQueue": "llm-pretrain", "priorityClass": "acme-hybrid-burst", "tier": "burst",
        }


class TestMultiKueue:
    def test_absent_when_the_burst_tier_stays_in_one_cluster(self, cluster: ProgramRun) -> None:
        assert not cluster.of_type(MKC) and not cluster.of_type(CHECK)
        assert "admissionChecksStrategy" not in queue(cluster, "burst")["spec"]

    def test_burst_queue_dispatches_through_the_multikueue_check(self, multikueue: ProgramRun) -> None:
        (check,) = multikueue.of_type(CHECK)
        (config,) = multikueue.of_type(MKCONFIG)
        assert check.inputs["spec"] == {
            "controllerName": "kueue.x-k8s.io/multikueue",
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config.inputs["metadata"]["name"]},
        }
        assert config.inputs["spec"] == {"clusters": ["ml-euw1", "ml-usw2"]}
        burst = queue(multikueue, "burst")["spec"]
        assert burst["admissionChecksStrategy"] == {"admissionChecks": [{"name": check.inputs["metadata"]["name"]}]}
        for tier in ("fixed", "opportunistic"):
            assert "admissionChecksStrategy" not in queue(multikueue, tier)["spec"]

    def test_each_worker_cluster_reads_its_kubeconfig_from_a_secret(self, multikueue: ProgramRun) -> None:
        by_name: dict[str, Registered] = {r.inputs["metadata"]["name"]: r for r in multikueue.of_type(MKC)}
        assert by_name["ml-euw1"].inputs["spec"] == {
            "clusterSource": {"kubeConfig": {"location": "ml-euw1-kubeconfig", "locationType": "Secret"}},
        }


class TestConfigChecks:
    @pytest.mark.parametrize(
        ("overrides", "message"),
        [
            ({"queues": {"fixed": [{"flavor": "nope", "gpus": 1}]}}, "not one of hybridctl:flavors"),
            ({"queues": {"fixed": [{"flavor": "use1-p5-spot", "gpus": -1}]}}, "integer >= 0"),
            ({"queues": {"urgent": []}}, "unknown field"),
            ({"workloads": [{"name": "Fraud_Scoring", "tier": "fixed"}]}, "not a valid Kubernetes name"),
            ({"workloads": [{"name": "a", "tier": "premium"}]}, "expected one of"),
            ({"workloads": [{"name": "a", "tier": "fixed"}, {"name": "a", "tier": "burst"}]}, "repeated: a"),
            ({"flavors": [{**FLAVORS[0], "cpuPerGpu": 4}]}, "go together"),
            ({"cohort": "Acme"}, "hybridctl:cohort"),
        ],
    )
    def test_bad_config_fails_before_any_resource(self, overrides: dict[str, Any], message: str) -> None:
        with pytest.raises(queues_config.ConfigError, match=message):
            run(**overrides)
