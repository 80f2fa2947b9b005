"""What the queues rely on in the cluster but do not own (issue 47, item 7), read live on each deployment:
Kueue's Configuration must hold what the queues need (GPUs counted alone, the pods-ready timeout, the
incremental dispatcher on a manager), and Cluster Autoscaler must run with --enable-provisioning-requests
(or the operator attests it). A difference fails the deployment, naming it, and no ClusterQueue is
created. Before: the configuration was only exported and the flag never looked at."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from pulumi_stack_harness import import_stack_module, run_program
from test_k8s_queues_stack import CQ, REMOTES, stack_config

kueue_queues = import_stack_module("k8s-queues", "kueue_queues")
queues_config = import_stack_module("k8s-queues", "queues_config")
cluster_checks = import_stack_module("k8s-queues", "cluster_checks")
CONFIG_MAP, DEPLOYMENT = "kubernetes:core/v1:ConfigMap", "kubernetes:apps/v1:Deployment"
GOOD = {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob"]},  # the install's own settings
        "resources": {"excludeResourcePrefixes": ["cpu", "memory", "ephemeral-storage", "hugepages-",
                                                  "vpc.amazonaws.com/efa", "nvidia.com/mig-"]},
        "waitForPodsReady": {"timeout": "1200s", "blockAdmission": False,
                             "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5}},
        "multiKueue": {"dispatcherName": "kueue.x-k8s.io/multikueue-dispatcher-incremental",
                       "incrementalDispatcherConfig": {"stepSize": 1}}}


def autoscaler(*args: str) -> dict[str, Any]:
    return {"spec": {"template": {"spec": {"containers": [{"name": "cluster-autoscaler", "command": [
        "./cluster-autoscaler", "--cloud-provider=aws", *args]}]}}}}


def live(configuration: dict[str, Any], ca: dict[str, Any] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    objects = {(CONFIG_MAP, "kueue-system/kueue-manager-config"): {
        "data": {"controller_manager_config.yaml": yaml.safe_dump(configuration)}}}
    if ca is not None:
        objects[(DEPLOYMENT, "kube-system/cluster-autoscaler")] = ca
    return objects


def deploy(objects: dict[tuple[str, str], dict[str, Any]], **overrides: Any) -> Any:
    return run_program(lambda: kueue_queues.program(queues_config.load_config()), stack_config(**overrides),
                       live_objects=objects)


def test_a_cluster_that_holds_what_the_queues_need_gets_them() -> None:
    run_ = deploy(live(GOOD, autoscaler("--enable-provisioning-requests=true")), provisioningRequest="true")
    assert run_.of_type(CQ)
    assert {i.token for i in run_.invokes} >= {f"read {CONFIG_MAP}", f"read {DEPLOYMENT}"}


def test_kueue_counting_cpu_and_memory_is_refused_naming_the_setting() -> None:
    without = {k: v for k, v in GOOD.items() if k != "resources"}
    with pytest.raises(Exception, match=r"resources.excludeResourcePrefixes lacks cpu, memory, ephemeral-storage"):
        deploy(live(without))


def test_a_shorter_pods_ready_timeout_and_the_default_dispatcher_are_refused() -> None:
    other = {**GOOD, "waitForPodsReady": {**GOOD["waitForPodsReady"], "timeout": "5m"}, "multiKueue": {}}
    with pytest.raises(Exception, match=r"waitForPodsReady.timeout is '5m', these queues need '20m'.*"
                                        r"multiKueue.dispatcherName is None"):
        deploy(live(other), multiKueueClusters=REMOTES)


def test_an_autoscaler_without_provisioning_requests_is_refused_unless_attested() -> None:
    with pytest.raises(Exception, match="runs without --enable-provisioning-requests"):
        deploy(live(GOOD, autoscaler("--expander=least-waste")), provisioningRequest="true")
    attested = deploy(live(GOOD), provisioningRequest="true", clusterAutoscaler="attested")
    assert f"read {DEPLOYMENT}" not in {i.token for i in attested.invokes} and attested.of_type(CQ)


def test_an_on_prem_or_fixed_only_cluster_does_not_read_the_autoscaler() -> None:
    assert f"read {DEPLOYMENT}" not in {i.token for i in deploy(live(GOOD)).invokes}


def test_synth_reads_no_cluster_and_checks_nothing() -> None:
    run_ = deploy({}, provisioningRequest="true")
    assert run_.of_type(CQ) and f"read {CONFIG_MAP}" in {i.token for i in run_.invokes}


def test_durations_compare_as_lengths_of_time() -> None:
    assert cluster_checks.differences({"t": "1h0m0s"}, {"t": "60m"}) == []
    assert cluster_checks.differences({"t": "59m"}, {"t": "1h"}) == ["t is '59m', these queues need '1h'"]


@pytest.mark.parametrize("value", ["kube-system", "kube-system/", "Kube/x", "a/b/c"])
def test_a_bad_object_reference_is_refused(value: str) -> None:
    with pytest.raises(queues_config.ConfigError, match="expected namespace/name"):
        queues_config._object_ref(value, "hybridctl:kueueConfigMap", "")
