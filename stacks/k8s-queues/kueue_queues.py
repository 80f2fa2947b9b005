"""Kueue objects that make one cluster enforce the plan's tiers at run time.

- a ResourceFlavor per GPU pool, selecting the pool's nodes by the labels the aws-gpu-pools
  stack puts on them, and tolerating their `nvidia.com/gpu` taint;
- ClusterQueues, all in one cohort named after the inventory, one per tier and reach (the GPU
  types a workload accepts, and spot only for preemptible work), so a workload's LocalQueue
  reaches only flavors it may run on. On each flavor the cohort's nominal quotas add up to at most
  the pool's GPUs (hybridctl caps them: stackqueues.within_capacity), so what Kueue admits fits on
  the machines, and the plan's time-sharing between tiers is Kueue's priorities and preemption:
  fixed holds its planned GPUs as nominal quota and neither lends nor borrows, so it never waits
  for, nor is preempted by, anyone else; burst holds its share, lends what it does not use,
  reclaims it by preempting lower-priority borrowers, and borrows idle quota, preempting
  opportunistic work for it (borrowWithinCohort, up to the opportunistic priority), when its window
  opens; opportunistic has no quota of its own and only borrows: idle quota and the cohort's own
  (cohortGpus), and is preempted when a higher tier needs it;
- Kueue counts GPUs only: cpu, memory, ephemeral storage, hugepages and EFA interfaces are left out
  of its quota (Configuration `resources.excludeResourcePrefixes`, kueue_configuration): the plan
  allocates GPUs, and a machine's CPUs, memory and EFA interfaces come with its GPUs;
- a WorkloadPriorityClass per tier (fixed highest);
- a Namespace (retained on delete) and LocalQueue per workload, pointing at its ClusterQueue;
  each ClusterQueue admits only its own workloads' namespaces;
- the NVIDIA device plugin, which the AL2023 NVIDIA nodes need to advertise `nvidia.com/gpu`;
- MultiKueue objects when a burst workload spans several clusters.

Every object goes through one explicit Kubernetes provider (cluster_target.py).

Kueue API version: the v0.19 CRDs serve v1beta1 (deprecated) and v1beta2 (storage); we write
v1beta2. This module must not import hybridctl.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s
from cluster_checks import prerequisites
from cluster_target import cluster_provider
from device_plugin import device_plugin, efa_device_plugin
from pulumi_kubernetes.apiextensions import CustomResource
from queues_config import TIERS, ClusterQueue, FlavorQuota, QueuesConfig

KUEUE_API_VERSION = "kueue.x-k8s.io/v1beta2"
GPU_RESOURCE = "nvidia.com/gpu"
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
PROVISIONING_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
# Cluster Autoscaler scales the node groups up for the whole workload, or not at all: a two-node gang
# is never admitted onto one node and a promise (autoscaler flag --enable-provisioning-requests).
PROVISIONING_CLASS = "best-effort-atomic-scale-up.autoscaling.x-k8s.io"
# Kueue (LocalQueueDefaulting, GA in v0.19) gives a job without the queue-name label its namespace's
# LocalQueue of this name: every job in a managed namespace carries its queue.
DEFAULT_LOCAL_QUEUE = "default"
INCREMENTAL_DISPATCHER = "kueue.x-k8s.io/multikueue-dispatcher-incremental"
# How long an admitted workload may take to have all its pods ready (a p5's image pull included)
# before Kueue evicts it and requeues it: all-or-nothing for gangs (waitForPodsReady).
PODS_READY_TIMEOUT = "20m"
TIER_LABEL = "hybridctl.io/tier"
WORKLOAD_LABEL = "hybridctl.io/workload"
TEAM_LABEL = "hybridctl.io/team"

# Resources Kueue leaves out of quota and admission (Configuration resources.excludeResourcePrefixes): a
# queue covers GPUs only, so a pod asking cpu, memory, ephemeral storage, hugepages or EFA interfaces
# besides them is admitted on its GPUs, and a CPU-only sidecar without using any GPU flavor.
EXCLUDED_RESOURCE_PREFIXES = ("cpu", "memory", "ephemeral-storage", "hugepages-", "vpc.amazonaws.com/efa")
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


# Kueue preempts only in queues that use more than their nominal quota (reclaim and borrow alike), and a
# fixed queue never does (lendingLimit and borrowingLimit 0): fixed is never preempted, and needs to
# preempt no one. Burst reclaims its lent quota from lower priorities and, borrowing, preempts
# opportunistic work only: never another burst run. Opportunistic never preempts.
PREEMPTION: dict[str, dict[str, Any]] = {
    "fixed": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"}},
    "burst": {"reclaimWithinCohort": "LowerPriority", "withinClusterQueue": "Never",
              "borrowWithinCohort": {"policy": "LowerPriority", "maxPriorityThreshold": TIER_PRIORITY["opportunistic"]}},
    "opportunistic": {"reclaimWithinCohort": "Never", "withinClusterQueue": "Never", "borrowWithinCohort": {"policy": "Never"}},
}


def priority_class_name(cfg: QueuesConfig, tier: str) -> str:
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


def _kueue(name: str, kind: str, metadata: dict[str, Any], spec: pulumi.Input[dict[str, Any]],
           opts: pulumi.ResourceOptions) -> CustomResource:
    return CustomResource(name, api_version=KUEUE_API_VERSION, kind=kind, metadata=metadata, spec=spec, opts=opts)


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


def cluster_queue_spec(cfg: QueuesConfig, queue: ClusterQueue, admission_check: str | None,
                       provisioning_check: str | None = None) -> dict[str, Any]:
    tier = queue.tier
    # Opportunistic owns nothing: its planned GPUs sit in the cohort's shared pool.
    flavors = [_flavor_resources(cfg, q, 0 if tier == "opportunistic" else q.gpus, tier) for q in queue.flavors]
    preemption = PREEMPTION[tier]
    members = sorted(w.name for w in cfg.workloads if queue.name in (w.cluster_queue, w.local_cluster_queue))
    spec: dict[str, Any] = {
        # Only its own workloads' namespaces: a LocalQueue elsewhere cannot reach other GPU types.
        "namespaceSelector": {"matchExpressions": [{"key": WORKLOAD_LABEL, "operator": "In", "values": members}]},
        "preemption": preemption,
        "resourceGroups": [{"coveredResources": covered_resources(cfg), "flavors": flavors}] if flavors else [],
    }
    if not queue.dispatched:
        # A dispatching queue stays out of the cohort: its quota is the workers' GPUs, which no local
        # queue may borrow.
        spec = {"cohortName": cfg.cohort, **spec}
    checks = [c for c in (admission_check, provisioning_check) if c is not None]
    if checks:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": c} for c in checks]}
    return spec


def cohort_spec(cfg: QueuesConfig) -> dict[str, Any]:
    """The cohort's own quota, per flavor (cohortGpus): the opportunistic tier's planned GPUs and those
    paid whatever runs that no queue holds (e.g. the 6 GPUs of a p5 kept on for 2 GPUs of fixed work),
    within what the pool's machines have left after the queues' quotas; burst and opportunistic queues
    reaching the flavor borrow it."""
    pool = [_flavor_resources(cfg, FlavorQuota(f.name, f.cohort_gpus), f.cohort_gpus, "opportunistic")
            for f in cfg.flavors if f.cohort_gpus > 0]
    return {"resourceGroups": [{"coveredResources": covered_resources(cfg), "flavors": pool}]} if pool else {}


def _multikueue(cfg: QueuesConfig, opts: pulumi.ResourceOptions) -> tuple[str, list[pulumi.Resource]]:
    """Worker clusters, their MultiKueueConfig and the AdmissionCheck the dispatching queues use."""
    remotes: list[pulumi.Resource] = [
        _kueue(
            f"mkc-{remote.name}", "MultiKueueCluster", _metadata(cfg, remote.name),
            {"clusterSource": {"kubeConfig": {"location": remote.kubeconfig_secret, "locationType": "Secret"}}},
            opts,
        )
        for remote in cfg.multikueue_clusters
    ]
    config_name = f"{cfg.cohort}-burst"
    mk_config = _kueue(
        "mkconfig-burst", "MultiKueueConfig", _metadata(cfg, config_name),
        {"clusters": [r.name for r in cfg.multikueue_clusters]}, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=remotes)),
    )
    check_name = f"{cfg.cohort}-multikueue"
    check = _kueue(
        "admissioncheck-multikueue", "AdmissionCheck", _metadata(cfg, check_name),
        {
            "controllerName": MULTIKUEUE_CONTROLLER,
            "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": config_name},
        },
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[mk_config])),
    )
    return check_name, [*remotes, mk_config, check]


def _provisioning(cfg: QueuesConfig, opts: pulumi.ResourceOptions) -> tuple[str, list[pulumi.Resource]]:
    """The ProvisioningRequest admission check: a burst or opportunistic workload is admitted only once
    Cluster Autoscaler has the nodes for all of its pods."""
    name = f"{cfg.cohort}-provisioning"
    config = _kueue("prc-provisioning", "ProvisioningRequestConfig", _metadata(cfg, name), {
        "provisioningClassName": PROVISIONING_CLASS,
        "managedResources": [GPU_RESOURCE],
        "retryStrategy": {"backoffLimitCount": 3, "backoffBaseSeconds": 60, "backoffMaxSeconds": 1800},
    }, opts)
    check = _kueue("admissioncheck-provisioning", "AdmissionCheck", _metadata(cfg, name), {
        "controllerName": PROVISIONING_CONTROLLER,
        "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ProvisioningRequestConfig", "name": name},
    }, pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=[config])))
    return name, [config, check]


def kueue_configuration(cfg: QueuesConfig) -> dict[str, Any]:
    """What Kueue's own Configuration (its manager ConfigMap, which the Kueue install owns) must hold for
    these queues to behave as planned: read and checked on each deployment (cluster_checks.py), exported,
    and documented in stacks/README.md."""
    conf: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
        "resources": {"excludeResourcePrefixes": list(EXCLUDED_RESOURCE_PREFIXES)},
        # all-or-nothing: a gang whose pods are not all ready in time is evicted and requeued
        "waitForPodsReady": {"timeout": PODS_READY_TIMEOUT, "blockAdmission": False,
                             "requeuingStrategy": {"timestamp": "Eviction", "backoffLimitCount": 5}},
    }
    if cfg.multikueue_clusters:
        # one worker at a time, in the MultiKueueConfig's order (feature gate
        # MultiKueueIncrementalDispatcherRespectConfigOrder, beta and on in v0.19): on premises first
        conf["multiKueue"] = {"dispatcherName": INCREMENTAL_DISPATCHER, "incrementalDispatcherConfig": {"stepSize": 1}}
    return conf


def program(cfg: QueuesConfig, provider: pulumi.ProviderResource | None = None) -> dict[str, pulumi.Output[Any]]:
    """Declare the cluster's Kueue objects; returns (and exports) the stack outputs."""
    provider = provider or cluster_provider(cfg)
    opts = pulumi.ResourceOptions(provider=provider)

    def after(*deps: pulumi.Resource, **more: Any) -> pulumi.ResourceOptions:
        return pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=list(deps), **more))

    # the ClusterQueues wait for what the cluster must hold: none is created or changed where it differs
    checked = prerequisites(cfg, provider, kueue_configuration(cfg))
    if cfg.install_device_plugin:
        device_plugin(provider)
    if cfg.install_efa_device_plugin:
        efa_device_plugin(provider, cfg.region)
    flavors = [
        _kueue(
            f"rf-{flavor.name}", "ResourceFlavor", _metadata(cfg, flavor.name, **{"hybridctl.io/gpu": flavor.gpu_type}),
            {
                "nodeLabels": dict(flavor.node_labels),
                # Kueue adds these to admitted pods so they land on the tainted GPU nodes.
                "tolerations": [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}],
            },
            opts,
        )
        for flavor in cfg.flavors
    ]
    cohort = _kueue("cohort", "Cohort", _metadata(cfg, cfg.cohort), cohort_spec(cfg), after(*flavors))

    check_name: str | None = None
    multikueue: list[pulumi.Resource] = []
    if cfg.multikueue_clusters:
        check_name, multikueue = _multikueue(cfg, opts)
    provisioning_name: str | None = None
    provisioning: list[pulumi.Resource] = []
    if cfg.provisioning_request:
        provisioning_name, provisioning = _provisioning(cfg, opts)

    for tier in TIERS:
        CustomResourceWithFields(
            f"wpc-{tier}", KUEUE_API_VERSION, "WorkloadPriorityClass",
            _metadata(cfg, priority_class_name(cfg, tier), **{TIER_LABEL: tier}),
            {"value": TIER_PRIORITY[tier], "description": TIER_DESCRIPTION[tier]}, opts,
        )
    queues: dict[str, pulumi.Resource] = {}
    for queue in cfg.cluster_queues:
        dispatched = queue.dispatched and check_name is not None
        # capacity is checked where the work runs: the workers', not the manager's dispatching queue
        provisioned = provisioning_name is not None and queue.tier != "fixed" and not queue.dispatched
        spec = cluster_queue_spec(cfg, queue, check_name if dispatched else None, provisioning_name if provisioned else None)
        queues[queue.name] = _kueue(
            f"cq-{queue.name}", "ClusterQueue", _metadata(cfg, queue.name, **{TIER_LABEL: queue.tier}),
            checked.apply(lambda _, spec=spec: spec),
            after(*flavors, cohort, *(multikueue if dispatched else []), *(provisioning if provisioned else [])),
        )

    local_queues: dict[str, Any] = {}
    for workload in cfg.workloads:
        team = {TEAM_LABEL: workload.team} if workload.team else {}
        ns_meta = _metadata(cfg, workload.name, **{TIER_LABEL: workload.tier, WORKLOAD_LABEL: workload.name, **team})
        # Retained on delete: a workload leaving the cluster must not take its pods, secrets and
        # volumes with it; hybridctl stops managing the namespace and the operator deletes it.
        namespace = k8s.core.v1.Namespace(f"ns-{workload.name}", metadata=k8s.meta.v1.ObjectMetaArgs(**ns_meta),
                                          opts=after(retain_on_delete=True))
        local_queues_of = [(f"lq-{workload.name}", workload.name, workload.cluster_queue),
                           # a job without the queue-name label gets this one (Kueue's LocalQueue defaulting)
                           (f"lq-{workload.name}-default", DEFAULT_LOCAL_QUEUE, workload.cluster_queue)]
        if workload.local_cluster_queue:
            local_queues_of.append((f"lq-{workload.name}-local", f"{workload.name}-local", workload.local_cluster_queue))
        for resource_name, name, cluster_queue in local_queues_of:
            _kueue(
                resource_name, "LocalQueue",
                _metadata(cfg, name, namespace.metadata.name, **{TIER_LABEL: workload.tier}),
                {"clusterQueue": cluster_queue},
                # spec.clusterQueue is immutable (`self == oldSelf` in the CRD): a new queue is a new object.
                after(queues[cluster_queue], replace_on_changes=["spec.clusterQueue"], delete_before_replace=True),
            )
        # What a job needs to be admitted: its namespace, queue-name label and priority-class label.
        local_queues[workload.name] = {
            "namespace": workload.name,
            "localQueue": workload.name,
            "clusterQueue": workload.cluster_queue,
            "priorityClass": priority_class_name(cfg, workload.tier),
            "tier": workload.tier,
            **({"ownShareLocalQueue": f"{workload.name}-local"} if workload.local_cluster_queue else {}),
        }

    outputs: dict[str, pulumi.Output[Any]] = {
        "cohort": pulumi.Output.from_input(cfg.cohort),
        "clusterQueues": pulumi.Output.from_input({q.name: q.tier for q in cfg.cluster_queues}),
        "workloads": pulumi.Output.from_input(local_queues),
        "kueueConfiguration": pulumi.Output.from_input(kueue_configuration(cfg)),
    }
    for key, value in outputs.items():
        pulumi.export(key, value)
    return outputs
