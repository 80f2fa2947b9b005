"""The k8s-queues stack configuration: parsed and checked before any resource is declared.

Schema (namespace ``hybridctl``) is documented in stacks/README.md. This module must not import
hybridctl: a user may run the stack from its own virtualenv.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pulumi

CONFIG_NAMESPACE = "hybridctl"
TIERS = ("fixed", "burst", "opportunistic")

# Kubernetes object names: DNS-1123 subdomain (cluster-scoped Kueue objects) and label
# (namespaces). Checked here so a bad name fails before anything is sent to the cluster.
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class ConfigError(ValueError):
    """The stack configuration does not match the schema in stacks/README.md."""


@dataclass(frozen=True)
class Flavor:
    name: str
    gpu_type: str
    node_labels: tuple[tuple[str, str], ...]
    cpu_per_gpu: int | None = None  # cores; with memory, makes the queues cover cpu and memory too
    memory_gib_per_gpu: int | None = None
    cohort_gpus: int = 0  # the cohort's own quota on the flavor: lent to every queue of the cohort that borrows


@dataclass(frozen=True)
class FlavorQuota:
    flavor: str
    gpus: int


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    tier: str
    flavors: tuple[FlavorQuota, ...]  # the flavors it reaches, in the order Kueue tries them
    dispatched: bool = False  # requires the MultiKueue admission check: its work runs on worker clusters


@dataclass(frozen=True)
class Workload:
    name: str
    tier: str
    cluster_queue: str
    team: str | None = None  # labelled on the namespace (hybridctl.io/team) for showback
    local_cluster_queue: str | None = None  # a MultiKueue manager's own share: LocalQueue `<name>-local`


@dataclass(frozen=True)
class RemoteCluster:
    name: str
    kubeconfig_secret: str  # a Secret in Kueue's namespace holding the worker cluster's kubeconfig


@dataclass(frozen=True)
class QueuesConfig:
    cluster_name: str
    inventory_name: str
    plan_digest: str
    cohort: str
    flavors: tuple[Flavor, ...]
    cluster_queues: tuple[ClusterQueue, ...]
    workloads: tuple[Workload, ...]
    multikueue_clusters: tuple[RemoteCluster, ...] = ()
    region: str = ""  # the EKS cluster's region (aws:region)
    kube_context: str | None = None  # a kubeconfig context to use instead; checked against the cluster
    install_device_plugin: bool = True
    on_premises: bool = False  # not EKS: reached through `kube_context` alone
    provisioning_request: bool = False  # burst and opportunistic queues wait for capacity (cloud)
    install_efa_device_plugin: bool = False
    # what the queues rely on in the cluster, read and checked on each deployment (cluster_checks.py)
    kueue_config_map: str = "kueue-system/kueue-manager-config"
    cluster_autoscaler: str = "kube-system/cluster-autoscaler"  # or "attested"

    def flavor(self, name: str) -> Flavor:
        return next(f for f in self.flavors if f.name == name)


def _obj(raw: object, where: str, required: set[str], optional: frozenset[str] = frozenset()) -> Mapping[str, Any]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: expected an object, got {raw!r}")
    missing = sorted(required - set(raw))
    if missing:
        raise ConfigError(f"{where}: missing field(s) {', '.join(missing)}")
    unknown = sorted(set(raw) - required - optional)
    if unknown:
        raise ConfigError(f"{where}: unknown field(s) {', '.join(unknown)}")
    return raw


def _int(raw: Mapping[str, Any], key: str, where: str, minimum: int) -> int:
    value = raw[key]
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise ConfigError(f"{where}.{key}: expected an integer >= {minimum}, got {value!r}")
    return value


def _name(value: object, where: str, pattern: re.Pattern[str] = _DNS_SUBDOMAIN, max_len: int = 253) -> str:
    if not isinstance(value, str) or not pattern.match(value) or len(value) > max_len:
        raise ConfigError(f"{where}: {value!r} is not a valid Kubernetes name (lower-case [a-z0-9-], <= {max_len})")
    return value


def _list(raw: object, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where}: expected a list, got {raw!r}")
    return raw


def _unique(names: list[str], where: str) -> None:
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"{where}: names must be unique, repeated: {', '.join(repeated)}")


def parse_flavor(raw: object, where: str) -> Flavor:
    obj = _obj(raw, where, {"name", "gpuType", "nodeLabels"}, frozenset({"cpuPerGpu", "memoryGiBPerGpu", "cohortGpus"}))
    labels = obj["nodeLabels"]
    if not isinstance(labels, Mapping) or not labels or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in labels.items()
    ):
        raise ConfigError(f"{where}.nodeLabels: expected a non-empty map of strings")
    if len(labels) > 8:  # Kueue's ResourceFlavor schema allows at most 8 node labels
        raise ConfigError(f"{where}.nodeLabels: at most 8 labels, got {len(labels)}")
    if ("cpuPerGpu" in obj) != ("memoryGiBPerGpu" in obj):
        raise ConfigError(f"{where}: cpuPerGpu and memoryGiBPerGpu go together")
    return Flavor(
        name=_name(obj["name"], f"{where}.name"),
        gpu_type=str(obj["gpuType"]),
        node_labels=tuple(sorted(labels.items())),
        cpu_per_gpu=_int(obj, "cpuPerGpu", where, 1) if "cpuPerGpu" in obj else None,
        memory_gib_per_gpu=_int(obj, "memoryGiBPerGpu", where, 1) if "memoryGiBPerGpu" in obj else None,
        cohort_gpus=_int(obj, "cohortGpus", where, 0) if "cohortGpus" in obj else 0,
    )


def parse_cluster_queues(raw: object, flavors: tuple[Flavor, ...]) -> tuple[ClusterQueue, ...]:
    known = {f.name for f in flavors}
    queues = []
    for i, item in enumerate(_list(raw, "hybridctl:clusterQueues")):
        where = f"hybridctl:clusterQueues[{i}]"
        obj = _obj(item, where, {"name", "tier", "flavors"}, frozenset({"dispatched"}))
        if obj["tier"] not in TIERS:
            raise ConfigError(f"{where}.tier: expected one of {', '.join(TIERS)}, got {obj['tier']!r}")
        entries = []
        for j, flavor in enumerate(_list(obj["flavors"], f"{where}.flavors")):
            at = f"{where}.flavors[{j}]"
            entry = _obj(flavor, at, {"flavor", "gpus"})
            if entry["flavor"] not in known:
                raise ConfigError(f"{at}.flavor: {entry['flavor']!r} is not one of hybridctl:flavors")
            entries.append(FlavorQuota(flavor=entry["flavor"], gpus=_int(entry, "gpus", at, 0)))
        _unique([e.flavor for e in entries], f"{where}.flavors")
        if len(entries) > 64:  # ClusterQueue resourceGroups[].flavors maxItems
            raise ConfigError(f"{where}.flavors: at most 64 flavors")
        dispatched = obj.get("dispatched", False)
        if not isinstance(dispatched, bool):
            raise ConfigError(f"{where}.dispatched: expected true or false")
        queues.append(ClusterQueue(_name(obj["name"], f"{where}.name"), obj["tier"], tuple(entries), dispatched))
    _unique([q.name for q in queues], "hybridctl:clusterQueues")
    return tuple(queues)


def _object_ref(value: object, where: str, default: str) -> str:
    """`namespace/name` of an object the stack reads (or `attested`, for the autoscaler)."""
    if value is None or value == "":
        return default
    if value == "attested" and where == "hybridctl:clusterAutoscaler":
        return "attested"
    namespace, _, name = str(value).partition("/")
    if not _DNS_LABEL.match(namespace) or not _DNS_SUBDOMAIN.match(name):
        raise ConfigError(f"{where}: expected namespace/name, got {value!r}")
    return f"{namespace}/{name}"


def parse(values: Mapping[str, Any]) -> QueuesConfig:
    """Build the configuration from already-decoded values (keys without the namespace)."""
    flavors = tuple(parse_flavor(f, f"hybridctl:flavors[{i}]") for i, f in enumerate(_list(values["flavors"], "hybridctl:flavors")))
    _unique([f.name for f in flavors], "hybridctl:flavors")
    # Kueue requires every flavor of a resource group to cover the same resources.
    if len({f.cpu_per_gpu is None for f in flavors}) > 1:
        raise ConfigError("hybridctl:flavors: cpuPerGpu/memoryGiBPerGpu must be set on all flavors or none")
    cluster_queues = parse_cluster_queues(values["clusterQueues"], flavors)
    workloads = []
    for i, item in enumerate(_list(values["workloads"], "hybridctl:workloads")):
        at = f"hybridctl:workloads[{i}]"
        obj = _obj(item, at, {"name", "tier", "clusterQueue"}, frozenset({"team", "localClusterQueue"}))
        if obj["tier"] not in TIERS:
            raise ConfigError(f"{at}.tier: expected one of {', '.join(TIERS)}, got {obj['tier']!r}")
        queue = next((q for q in cluster_queues if q.name == obj["clusterQueue"]), None)
        if queue is None or queue.tier != obj["tier"]:
            raise ConfigError(f"{at}.clusterQueue: {obj['clusterQueue']!r} is not a {obj['tier']} queue of hybridctl:clusterQueues")
        # The workload's namespace carries its name: a DNS label.
        team = _name(obj["team"], f"{at}.team", _DNS_LABEL, 63) if "team" in obj else None
        local = obj.get("localClusterQueue")
        if local is not None and not any(q.name == local and q.tier == obj["tier"] and not q.dispatched for q in cluster_queues):
            raise ConfigError(f"{at}.localClusterQueue: {local!r} is not a local {obj['tier']} queue of hybridctl:clusterQueues")
        # `<name>-local` must be a DNS subdomain too
        name = _name(obj["name"], f"{at}.name", _DNS_LABEL, 63 - (len("-local") if local else 0))
        workloads.append(Workload(name, obj["tier"], queue.name, team, local))
    _unique([w.name for w in workloads], "hybridctl:workloads")
    remotes = []
    for i, item in enumerate(_list(values.get("multiKueueClusters") or [], "hybridctl:multiKueueClusters")):
        at = f"hybridctl:multiKueueClusters[{i}]"
        obj = _obj(item, at, {"name", "kubeconfigSecret"})
        remotes.append(RemoteCluster(name=_name(obj["name"], f"{at}.name"), kubeconfig_secret=_name(obj["kubeconfigSecret"], f"{at}.kubeconfigSecret")))
    _unique([r.name for r in remotes], "hybridctl:multiKueueClusters")
    if len(remotes) > 20:  # MultiKueueConfig.spec.clusters maxItems
        raise ConfigError("hybridctl:multiKueueClusters: at most 20 worker clusters")
    # Priority class names are derived from the cohort (`<cohort>-opportunistic`), so it must
    # leave room for the longest suffix.
    cohort = _name(values["cohort"], "hybridctl:cohort", max_len=253 - len("-opportunistic"))
    if values.get("onPremises") is True and not values.get("kubeContext"):
        raise ConfigError("hybridctl:kubeContext: an on-prem cluster (hybridctl:onPremises) is reached through a "
                          "kubeconfig context: set it")
    refs = {key: _object_ref(values.get(key), f"hybridctl:{key}", default)
            for key, default in (("kueueConfigMap", QueuesConfig.kueue_config_map),
                                 ("clusterAutoscaler", QueuesConfig.cluster_autoscaler))}
    return QueuesConfig(
        kueue_config_map=refs["kueueConfigMap"], cluster_autoscaler=refs["clusterAutoscaler"],
        cluster_name=str(values["clusterName"]),
        inventory_name=str(values["inventoryName"]),
        plan_digest=str(values["planDigest"]),
        cohort=cohort,
        flavors=flavors,
        cluster_queues=cluster_queues,
        workloads=tuple(workloads),
        multikueue_clusters=tuple(remotes),
        region=str(values.get("region") or ""),
        kube_context=str(values["kubeContext"]) if values.get("kubeContext") else None,
        install_device_plugin=values.get("installDevicePlugin") is not False,
        on_premises=values.get("onPremises") is True,
        provisioning_request=values.get("provisioningRequest") is True,
        install_efa_device_plugin=values.get("installEfaDevicePlugin") is True,
    )


def load_config() -> QueuesConfig:
    cfg = pulumi.Config(CONFIG_NAMESPACE)
    values: dict[str, Any] = {
        "clusterName": cfg.require("clusterName"),
        "inventoryName": cfg.require("inventoryName"),
        "planDigest": cfg.require("planDigest"),
        "cohort": cfg.require("cohort"),
        "flavors": cfg.require_object("flavors"),
        "clusterQueues": cfg.require_object("clusterQueues"),
        "workloads": cfg.require_object("workloads"),
        "multiKueueClusters": cfg.get_object("multiKueueClusters"),
        # an on-prem cluster has no AWS region
        "region": pulumi.Config("aws").get("region") if cfg.get_bool("onPremises") else pulumi.Config("aws").require("region"),
        "kubeContext": cfg.get("kubeContext"),
        "installDevicePlugin": cfg.get_bool("installDevicePlugin"),
        "onPremises": cfg.get_bool("onPremises"),
        "provisioningRequest": cfg.get_bool("provisioningRequest"),
        "installEfaDevicePlugin": cfg.get_bool("installEfaDevicePlugin"),
        "kueueConfigMap": cfg.get("kueueConfigMap"),
        "clusterAutoscaler": cfg.get("clusterAutoscaler"),
    }
    return parse(values)
