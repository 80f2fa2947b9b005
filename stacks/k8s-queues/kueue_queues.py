"""Kueue objects that make one cluster enforce the plan's tiers at run time.

- a ResourceFlavor per GPU pool, selecting the pool's nodes by the labels the aws-gpu-pools
  stack puts on them, and tolerating their `nvidia.com/gpu` taint;
- a ClusterQueue per tier, all in one cohort named after the inventory:
  fixed holds its planned GPUs as nominal quota and neither lends nor borrows (a realtime
  service never waits for, nor is preempted by, anyone else); burst holds its planned GPUs,
  lends what it does not use and reclaims it by preemption; opportunistic has no quota of its
  own and only borrows: idle burst quota and the cohort's shared pool (its planned GPUs, held
  by the Cohort object), and is preempted when the lenders reclaim;
- a WorkloadPriorityClass per tier (fixed highest);
- a Namespace and LocalQueue per workload, pointing at its tier's ClusterQueue; each
  ClusterQueue admits only namespaces labelled with its tier;
- MultiKueue objects when the burst tier spans several clusters.

Kueue API version: the v0.19 CRDs serve v1beta1 (deprecated) and v1beta2 (storage); we write
v1beta2. This module must not import hybridctl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from pulumi_kubernetes.apiextensions import CustomResource
from queues_config import TIERS, FlavorQuota, QueuesConfig

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
GPU_RESOURCE = "nvidia.com/gpu"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
TIER_LABEL = "hybridctl.io/tier"

# Spaced so a user can slot their own classes between the tiers.
TIER_PRIORITY = {"fixed": 100_000, "burst": 10_000, "opportunistic": 1_000}
TIER_DESCRIPTION = {
    "fixed": "hybridctl fixed tier: guaranteed quota, never lent, never preempted by other tiers",
    "burst": "hybridctl burst tier: planned quota, lent when idle and reclaimed by preemption",
    "opportunistic": "hybridctl opportunistic tier: borrows idle quota, preempted when it is reclaimed",
}


class CustomResourceWithFields(CustomResource):
    """A CustomResource with top-level fields besides `spec` (e.g. WorkloadPriorityClass.value).

    pulumi-kubernetes' Python CustomResource only carries apiVersion/kind/metadata/spec
    (pulumi/pulumi-kubernetes#2363); this registers the same resource type with extra fields.
    """

    def __init__(
        self,
        resource_name: str,
        api_version: str,
        kind: str,
        metadata: dict[str, Any],
        fields: dict[str, Any],
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        self._extra_fields = dict(fields)
        super().__init__(resource_name, api_version, kind, metadata=metadata, opts=opts)

    def _internal_init(
        self,
        resource_name: str,
        api_version: str,
        kind: str,
        opts: pulumi.ResourceOptions | None = None,
        metadata: Any = None,
        spec: Any = None,
        __props__: Any = None,
    ) -> None:
        props = {"apiVersion": api_version, "kind": kind, "metadata": metadata, **self._extra_fields}
        pulumi.CustomResource.__init__(self, f"kubernetes:{api_version}:{kind}", resource_name, props, opts)


def cluster_queue_name(cfg: QueuesConfig, tier: str) -> str:
    return f"{cfg.cohort}-{tier}"


def _metadata(cfg: QueuesConfig, name: str, namespace: pulumi.Input[str] | None = None, **labels: str) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "labels": {"app.kubernetes.io/managed-by": "hybridctl", "hybridctl.io/inventory": cfg.inventory_name, **labels},
        # A digest is not a valid label value (it has a colon); annotations take any string.
        "annotations": {"hybridctl.io/plan-digest": cfg.plan_digest},
    }
    if namespace is not None:
        meta["namespace"] = namespace
    return meta


def _kueue(
    name: str, kind: str, metadata: dict[str, Any], spec: dict[str, Any], depends_on: Sequence[pulumi.Resource]
) -> CustomResource:
    return CustomResource(
        name, api_version=KUEUE_API_VERSION, kind=kind, metadata=metadata, spec=spec,
        opts=pulumi.ResourceOptions(depends_on=list(depends_on)),
    )


def covered_resources(cfg: QueuesConfig) -> list[str]:
    with_cpu = bool(cfg.flavors) and cfg.flavors[0].cpu_per_gpu is not None
    return [GPU_RESOURCE, "cpu", "memory"] if with_cpu else [GPU_RESOURCE]


def _flavor_resources(cfg: QueuesConfig, quota: FlavorQuota, gpus: int, tier: str) -> dict[str, Any]:
    """One ResourceGroup flavor entry; resources in the same order as coveredResources."""
    flavor = cfg.flavor(quota.flavor)
    limits: dict[str, Any] = {}
    if tier == "fixed":
        limits = {"lendingLimit": 0, "borrowingLimit": 0}
    resources = [{"name": GPU_RESOURCE, "nominalQuota": gpus, **limits}]
    if flavor.cpu_per_gpu is not None and flavor.memory_gib_per_gpu is not None:
        resources.append({"name": "cpu", "nominalQuota": gpus * flavor.cpu_per_gpu, **limits})
        resources.append({"name": "memory", "nominalQuota": f"{gpus * flavor.memory_gib_per_gpu}Gi", **limits})
    return {"name": flavor.name, "resources": resources}


def cluster_queue_spec(cfg: QueuesConfig, tier: str, admission_check: str | None) -> dict[str, Any]:
    quotas = cfg.queues.get(tier, ())
    # Opportunistic owns nothing: its planned GPUs sit in the cohort's shared pool.
    flavors = [_flavor_resources(cfg, q, 0 if tier == "opportunistic" else q.gpus, tier) for q in quotas]
    if tier == "opportunistic":
        preemption = {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"}}
    else:
        preemption = {"reclaimWithinCohort": "Any", "withinClusterQueue": "LowerPriority"}
    spec: dict[str, Any] = {
        "cohortName": cfg.cohort,
        "namespaceSelector": {"matchLabels": {TIER_LABEL: tier}},
        "preemption": preemption,
        "resourceGroups": [{"coveredResources": covered_resources(cfg), "flavors": flavors}] if flavors else [],
    }
    if admission_check is not None:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": admission_check}]}
    return spec


def cohort_spec(cfg: QueuesConfig) -> dict[str, Any]:
    pool = [_flavor_resources(cfg, q, q.gpus, "opportunistic") for q in cfg.queues.get("opportunistic", ()) if q.gpus > 0]
    return {"resourceGroups": [{"coveredResources": covered_resources(cfg), "flavors": pool}]} if pool else {}


def _multikueue(cfg: QueuesConfig) -> tuple[str, list[pulumi.Resource]]:
    """Worker clusters, their MultiKueueConfig and the AdmissionCheck the burst queue uses."""
    remotes: list[pulumi.Resource] = [
        _kueue(
            f"mkc-{remote.name}", "MultiKueueCluster", _metadata(cfg, remote.name),
            {"clusterSource": {"kubeConfig": {"location": remote.kubeconfig_secret, "locationType": "Secret"}}},
            [],
        )
        for remote in cfg.multikueue_clusters
    ]
    config_name = f"{cfg.cohort}-burst"
    mk_config = _kueue(
        "mkconfig-burst", "MultiKueueConfig", _metadata(cfg, config_name),
        {"clusters": [r.name for r in cfg.multikueue_clusters]}, remotes,
    )
    check_name = f"{cfg.cohort}-multikueue"
    check = _kueue(
        "admissioncheck-multikueue", "AdmissionCheck", _metadata(cfg, check_name),
        {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config_name},
        },
        [mk_config],
    )
    return check_name, [*remotes, mk_config, check]


def program(cfg: QueuesConfig) -> dict[str, pulumi.Output[Any]]:
    """Declare the cluster's Kueue objects; returns (and exports) the stack outputs."""
    flavors = [
        _kueue(
            f"rf-{flavor.name}", "ResourceFlavor", _metadata(cfg, flavor.name, **{"hybridctl.io/gpu": flavor.gpu_type}),
            {
                "nodeLabels": dict(flavor.node_labels),
                # Kueue adds these to admitted pods so they land on the tainted GPU nodes.
                "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
            },
            [],
        )
        for flavor in cfg.flavors
    ]
    cohort = _kueue("cohort", "Cohort", _metadata(cfg, cfg.cohort), cohort_spec(cfg), flavors)

    check_name: str | None = None
    multikueue: list[pulumi.Resource] = []
    if cfg.multikueue_clusters:
        check_name, multikueue = _multikueue(cfg)

    queues: dict[str, pulumi.Resource] = {}
    for tier in TIERS:
        pulumi_deps = [*flavors, cohort, *(multikueue if tier == "burst" else [])]
        CustomResourceWithFields(
            f"wpc-{tier}", KUEUE_API_VERSION, "WorkloadPriorityClass",
            _metadata(cfg, cluster_queue_name(cfg, tier), **{TIER_LABEL: tier}),
            {"value": TIER_PRIORITY[tier], "description": TIER_DESCRIPTION[tier]},
        )
        queues[tier] = _kueue(
            f"cq-{tier}", "ClusterQueue", _metadata(cfg, cluster_queue_name(cfg, tier), **{TIER_LABEL: tier}),
            cluster_queue_spec(cfg, tier, check_name if tier == "burst" else None),
            pulumi_deps,
        )

    local_queues: dict[str, Any] = {}
    for workload in cfg.workloads:
        ns_meta = _metadata(cfg, workload.name, **{TIER_LABEL: workload.tier, "hybridctl.io/workload": workload.name})
        namespace = k8s.core.v1.Namespace(f"ns-{workload.name}", metadata=k8s.meta.v1.ObjectMetaArgs(**ns_meta))
        _kueue(
            f"lq-{workload.name}", "LocalQueue",
            _metadata(cfg, workload.name, namespace.metadata.name, **{TIER_LABEL: workload.tier}),
            {"clusterQueue": cluster_queue_name(cfg, workload.tier)},
            [queues[workload.tier]],
        )
        # What a job needs to be admitted: its namespace, queue-name label and priority-class label.
        local_queues[workload.name] = {
            "namespace": workload.name,
            "localQueue": workload.name,
            "priorityClass": cluster_queue_name(cfg, workload.tier),
            "tier": workload.tier,
        }

    outputs: dict[str, pulumi.Output[Any]] = {
        "cohort": pulumi.Output.from_input(cfg.cohort),
        "clusterQueues": pulumi.Output.from_input({t: cluster_queue_name(cfg, t) for t in TIERS}),
        "workloads": pulumi.Output.from_input(local_queues),
    }
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
