"""The k8s-queues program under Pulumi's mocks: the Kueue objects that enforce the tiers."""

from __future__ import annotations

import json
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
    {"name": "use1-p5-spot", "gpuType": "H100", "cohortGpus": 24,
     "nodeLabels": {"hybridctl.io/site": "aws-us-east-1", "hybridctl.io/pool": "p5-spot"}},
]
QUEUES: list[dict[str, Any]] = [
    {"name": "acme-hybrid-fixed", "tier": "fixed", "flavors": [{"flavor": "use1-p5-on-demand", "gpus": 16}]},
    {"name": "acme-hybrid-burst", "tier": "burst", "flavors": [{"flavor": "use1-p5-on-demand", "gpus": 32}]},
    {"name": "acme-hybrid-opportunistic", "tier": "opportunistic",
     "flavors": [{"flavor": "use1-p5-spot", "gpus": 24}, {"flavor": "use1-p5-on-demand", "gpus": 0}]},
]
WORKLOADS = [
    {"name": "fraud-scoring", "tier": "fixed", "clusterQueue": "acme-hybrid-fixed", "team": "fraud-ml"},
    {"name": "llm-pretrain", "tier": "burst", "clusterQueue": "acme-hybrid-burst"},
    {"name": "embedding-backfill", "tier": "opportunistic", "clusterQueue": "acme-hybrid-opportunistic"},
    {"name": "nightly-eval", "tier": "burst", "clusterQueue": "acme-hybrid-burst"},
]
DISPATCHING = [{**q, "dispatched": True} if q["tier"] == "burst" else q for q in QUEUES]
PROVIDER, DAEMONSET = "pulumi:providers:kubernetes", "kubernetes:apps/v1:DaemonSet"
NETPOL = "kubernetes:networking.k8s.io/v1:NetworkPolicy"  # the device plugin's deny-all
REMOTES = [
    {"name": "ml-euw1", "kubeconfigSecret": "ml-euw1-kubeconfig"},
    {"name": "ml-usw2", "kubeconfigSecret": "ml-usw2-kubeconfig"},
]


def stack_config(**overrides: Any) -> dict[str, str]:
    values: dict[str, Any] = {
        "aws:region": "us-east-1",
        "clusterName": "ml-use1",
        "inventoryName": "acme-hybrid",
        "planDigest": "sha256:5f2c0e",
        "cohort": "acme-hybrid",
        "flavors": FLAVORS,
        "clusterQueues": QUEUES,
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
    return run(multiKueueClusters=REMOTES, clusterQueues=DISPATCHING)


def queue(run_: ProgramRun, tier: str) -> dict[str, Any]:
    return run_.one(CQ, f"cq-acme-hybrid-{tier}").inputs


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
        # a LocalQueue per workload, and its namespace's `default` one
        assert cluster.type_counts() == {PROVIDER: 1, DAEMONSET: 1, NETPOL: 1, RF: 2, COHORT: 1, WPC: 3, CQ: 3, NAMESPACE: 4, LQ: 8}

    def test_multikueue_adds_clusters_a_config_and_an_admission_check(self, multikueue: ProgramRun) -> None:
        assert multikueue.type_counts() == {PROVIDER: 1, DAEMONSET: 1, NETPOL: 1, RF: 2, COHORT: 1, WPC: 3, CQ: 3, NAMESPACE: 4, LQ: 8,
                                            MKC: 2, MKCONFIG: 1, CHECK: 1}

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
        pool = gpu_pools.NodePool("p5-spot", ("p5.48xlarge",), "spot", "H100", 8, 0, 1, 8)
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

    def test_opportunistic_owns_nothing_and_the_cohort_holds_the_flavors_cohort_gpus(self, cluster: ProgramRun) -> None:
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

    def test_fixed_needs_to_preempt_no_one(self, cluster: ProgramRun) -> None:
        """It neither lends nor borrows: its quota is always there."""
        assert queue(cluster, "fixed")["spec"]["preemption"] == {
            "reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"}}

    def test_burst_preempts_lower_priorities_only_and_borrowing_only_opportunistic_work(self, cluster: ProgramRun) -> None:
        assert queue(cluster, "burst")["spec"]["preemption"] == {
            "reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never",
            "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": 1000}}

    def test_opportunistic_never_preempts(self, cluster: ProgramRun) -> None:
        assert queue(cluster, "opportunistic")["spec"]["preemption"] == {
            "reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"},
        }

    def test_each_queue_admits_only_its_own_workloads_namespaces(self, cluster: ProgramRun) -> None:
        assert queue(cluster, "burst")["spec"]["namespaceSelector"] == {"matchExpressions": [
            {"key": "hybridctl.io/workload", "operator": "In", "values": ["llm-pretrain", "nightly-eval"]}]}

    def test_a_queue_with_no_usable_flavor_is_empty(self) -> None:
        empty = run(flavors=[{k: v for k, v in f.items() if k != "cohortGpus"} for f in FLAVORS],
                    clusterQueues=[*QUEUES[:2], {**QUEUES[2], "flavors": []}])
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
            assert lq["spec"] == {"clusterQueue": workload["clusterQueue"]}

    def test_exports_what_a_job_needs_to_be_admitted(self, cluster: ProgramRun) -> None:
        assert cluster.outputs["workloads"]["llm-pretrain"] == {
            "namespace": "llm-pretrain", "localQueue": "llm-pretrain", "clusterQueue": "acme-hybrid-burst",
            "priorityClass": "acme-hybrid-burst", "tier": "burst",
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
            ({"clusterQueues": [{**QUEUES[0], "flavors": [{"flavor": "nope", "gpus": 1}]}]}, "not one of hybridctl:flavors"),
            ({"clusterQueues": [{**QUEUES[0], "flavors": [{"flavor": "use1-p5-spot", "gpus": -1}]}]}, "integer >= 0"),
            ({"clusterQueues": [{**QUEUES[0], "urgent": True}]}, "unknown field"),
            ({"workloads": [{**WORKLOADS[0], "name": "Fraud_Scoring"}]}, "not a valid Kubernetes name"),
            ({"workloads": [{**WORKLOADS[0], "tier": "premium"}]}, "expected one of"),
            ({"workloads": [{**WORKLOADS[0], "clusterQueue": "acme-hybrid-burst"}]}, "is not a fixed queue"),
            ({"workloads": [WORKLOADS[0], WORKLOADS[0]]}, "repeated: fraud-scoring"),
            ({"flavors": [{**FLAVORS[0], "cpuPerGpu": 4}]}, "go together"),
            ({"cohort": "Acme"}, "hybridctl:cohort"),
        ],
    )
    def test_bad_config_fails_before_any_resource(self, overrides: dict[str, Any], message: str) -> None:
        with pytest.raises(queues_config.ConfigError, match=message):
            run(**overrides)


class TestClusterTarget:
    def test_one_explicit_provider_built_from_the_named_eks_cluster(self, cluster: ProgramRun) -> None:
        (provider,) = cluster.of_type(PROVIDER)
        kubeconfig = json.loads(provider.inputs["kubeconfig"])
        assert kubeconfig["users"][0]["user"]["exec"]["args"] == [
            "eks", "get-token", "--cluster-name", "ml-use1", "--region", "us-east-1", "--output", "json"]
        assert kubeconfig["clusters"][0]["cluster"]["server"] == "<unknown: endpoint of EKS cluster ml-use1>"
        assert provider.inputs["clusterIdentifier"] == "<unknown: arn of EKS cluster ml-use1>"
        assert ("aws:eks/getCluster:getCluster", {"name": "ml-use1"}) in [(i.token, i.args) for i in cluster.invokes]

    def test_every_object_goes_through_that_provider(self, cluster: ProgramRun) -> None:
        (provider,) = cluster.of_type(PROVIDER)
        objects = [r for r in cluster.resources if r.type.startswith("kubernetes:")]
        assert objects and {r.options.get("provider") for r in objects} == {provider.name}

    def test_a_named_context_must_point_at_the_cluster(self) -> None:
        cluster_target = import_stack_module("k8s-queues", "cluster_target")
        cfg = queues_config.parse({"clusterName": "ml-use1", "inventoryName": "i", "planDigest": "d", "cohort": "c",
                                   "flavors": [], "clusterQueues": [], "workloads": [], "kubeContext": "prod"})
        kubeconfig = {"contexts": [{"name": "prod", "context": {"cluster": "other"}}],
                      "clusters": [{"name": "other", "cluster": {"server": "https://OTHER.gr7.us-east-1.eks.amazonaws.com"}}]}
        with pytest.raises(queues_config.ConfigError, match="refusing"):
            cluster_target.check_context(cfg, "https://ML-USE1.gr7.us-east-1.eks.amazonaws.com", kubeconfig)
        cluster_target.check_context(cfg, "https://other.gr7.us-east-1.eks.amazonaws.com/", kubeconfig)
        with pytest.raises(queues_config.ConfigError, match="no context"):
            cluster_target.check_context(cfg, "https://x", {"contexts": [], "clusters": []})


class TestTeams:
    def test_the_owning_team_labels_the_namespace(self, cluster: ProgramRun) -> None:
        labels = {ns.name: ns.inputs["metadata"]["labels"] for ns in cluster.of_type(NAMESPACE)}
        assert labels["ns-fraud-scoring"]["hybridctl.io/team"] == "fraud-ml"
        assert "hybridctl.io/team" not in labels["ns-llm-pretrain"]

    def test_a_team_must_be_a_dns_label(self) -> None:
        with pytest.raises(queues_config.ConfigError, match="team"):
            run(workloads=[{**WORKLOADS[0], "team": "Fraud ML"}])


class TestLifecycle:
    def test_namespaces_are_retained_when_a_workload_leaves(self, cluster: ProgramRun) -> None:
        assert all(ns.options.get("retainOnDelete") for ns in cluster.of_type(NAMESPACE))

    def test_a_new_cluster_queue_replaces_the_local_queue(self, cluster: ProgramRun) -> None:
        for lq in cluster.of_type(LQ):
            assert lq.options["replaceOnChanges"] == ["spec.clusterQueue"]
            assert lq.options["deleteBeforeReplace"] is True


class TestDevicePlugin:
    def test_the_vendored_pinned_daemonset_runs_on_gpu_nodes_only(self, cluster: ProgramRun) -> None:
        (ds,) = cluster.of_type(DAEMONSET)
        template = ds.inputs["spec"]["template"]["spec"]
        assert template["containers"][0]["image"] == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
        assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in template["tolerations"]
        terms = template["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
        assert terms == [{"matchExpressions": [{"key": "hybridctl.io/gpu", "operator": "Exists"}]}]
        assert ds.inputs["metadata"]["namespace"] == "kube-system"

    def test_it_can_be_left_to_an_existing_gpu_operator(self) -> None:
        assert not run(installDevicePlugin="false").of_type(DAEMONSET)
