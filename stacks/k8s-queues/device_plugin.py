"""The device plugins the GPU nodes need to offer their devices to pods.

- NVIDIA's, which the AL2023 NVIDIA nodes need to advertise `nvidia.com/gpu`: without it the GPU
  nodes join but offer no GPUs, and no job is ever admitted onto them;
- AWS's EFA plugin, where a pool's nodes have EFA interfaces, so pods can request
  `vpc.amazonaws.com/efa` (NCCL over EFA for work whose replicas span machines).

Both manifests are vendored unchanged and pinned (vendor/, each with its licence and README). This
module adds only what hybridctl needs and what hardens them, the same for both: the node affinity
to hybridctl's GPU node groups, a toleration of their GPU taint, requests and limits, the runtime
default seccomp profile, no service-account token, a read-only root filesystem, and, on the object,
the checkov checks it skips with the reason for each (`checkov.io/skip<n>` annotations: checkov
reads them there).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

VENDOR = Path(__file__).parent / "vendor"
MANIFEST = VENDOR / "nvidia-device-plugin" / "nvidia-device-plugin.yml"
EFA_MANIFEST = VENDOR / "aws-efa-k8s-device-plugin" / "aws-efa-k8s-device-plugin.yml"
GPU_NODE_LABEL = "hybridctl.io/gpu"  # set by stacks/aws-gpu-pools on every GPU node group
GPU_TAINT = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}

# What a device plugin uses: a gRPC server on a socket and a watch of the devices; upstream's EFA
# chart requests 10m/20Mi. Limits leave room for a node with 8 GPUs or 32 EFA devices.
RESOURCES = {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"cpu": "200m", "memory": "256Mi"}}

# Checks that cannot pass for a device plugin, and why; the reasons travel with the object.
SKIPS_COMMON = {
    "CKV_K8S_8": "upstream's plugin serves no health endpoint to probe (liveness): kubelet re-registers it",
    "CKV_K8S_9": "upstream's plugin serves no health endpoint to probe (readiness)",
    "CKV_K8S_43": "upstream publishes a tag, no digest, for this image: pinned to its release tag (vendor README)",
    "CKV_K8S_23": "a device plugin runs as root: it opens the kubelet's device-plugin socket directory and /dev",
    "CKV_K8S_40": "a device plugin runs as root (UID 0): see CKV_K8S_23",
}
SKIPS_EFA = {
    **SKIPS_COMMON,
    "CKV_K8S_16": "upstream's EFA plugin runs privileged to open /dev/infiniband (AWS's chart default)",
    "CKV_K8S_19": "upstream's EFA plugin uses the host network, as AWS's chart does",
    "CKV_K8S_20": "privileged (CKV_K8S_16) implies privilege escalation; AWS's chart sets it",
    # containerd (EKS's runtime) gives a privileged container every capability and applies a container's
    # `capabilities` only when it is not privileged: a drop list here would satisfy checkov and change nothing.
    "CKV_K8S_28": "privileged (CKV_K8S_16): the runtime grants every capability, NET_RAW included, and "
                  "ignores a drop list",
    "CKV_K8S_37": "privileged (CKV_K8S_16): the runtime grants every capability and ignores a drop list",
}


def _skips(skips: dict[str, str]) -> dict[str, str]:
    return {f"checkov.io/skip{i}": f"{check}={reason}" for i, (check, reason) in enumerate(sorted(skips.items()), 1)}


def _harden(daemonset: dict[str, Any], skips: dict[str, str], privileged: bool) -> dict[str, Any]:
    ds = copy.deepcopy(daemonset)
    meta = ds["metadata"]
    meta.setdefault("labels", {})["app.kubernetes.io/managed-by"] = "hybridctl"
    meta.setdefault("annotations", {}).update(_skips(skips))
    pod = ds["spec"]["template"]["spec"]
    pod["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_NODE_LABEL, "operator": "Exists"}]}]}}}
    tolerations = pod.setdefault("tolerations", [])
    if GPU_TAINT not in tolerations:
        tolerations.append(dict(GPU_TAINT))
    pod["automountServiceAccountToken"] = False  # neither plugin calls the Kubernetes API
    pod["securityContext"] = {"seccompProfile": {"type": "RuntimeDefault"}}
    for container in pod["containers"]:
        container["resources"] = copy.deepcopy(RESOURCES)
        container["imagePullPolicy"] = "Always"  # a tag, not a digest: the registry decides what it names
        security = container.setdefault("securityContext", {})
        security.update({"readOnlyRootFilesystem": True, "seccompProfile": {"type": "RuntimeDefault"}})
        if not privileged:
            security.update({"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}})
    return ds


def manifest() -> dict[str, Any]:
    """NVIDIA's DaemonSet as applied: the vendored manifest, hardened, on hybridctl's GPU nodes."""
    return _harden(yaml.safe_load(MANIFEST.read_text()), SKIPS_COMMON, privileged=False)


# AWS's EKS images are in each region's own ECR registry, of account 602401143452 but in the regions
# AWS lists apart (EKS User Guide, "View Amazon container image registries for Amazon EKS add-ons").
EKS_IMAGE_ACCOUNT = "602401143452"
EKS_IMAGE_ACCOUNTS = {
    "af-south-1": "877085696533", "ap-east-1": "800184023465", "ap-south-2": "900889452093",
    "ap-southeast-3": "296578399912", "ap-southeast-4": "491585149902", "ca-west-1": "761377655185",
    "cn-north-1": "918309763551", "cn-northwest-1": "961992271922", "eu-central-2": "900612956339",
    "eu-south-1": "590381155156", "eu-south-2": "455263428931", "il-central-1": "066635153087",
    "me-central-1": "759879836304", "me-south-1": "558608220178", "us-gov-east-1": "151742754352",
    "us-gov-west-1": "013241004608",
}
_ECR = re.compile(r"^\d{12}\.dkr\.ecr\.[a-z0-9-]+\.amazonaws\.com(\.cn)?/")


def regional_image(image: str, region: str) -> str:
    """An EKS image from the cluster's own region's registry: no cross-region pull (its latency, its
    charges, and a node that cannot pull when another region's ECR is unreachable)."""
    if not region or not _ECR.match(image):
        return image
    suffix = ".amazonaws.com.cn" if region.startswith("cn-") else ".amazonaws.com"
    registry = f"{EKS_IMAGE_ACCOUNTS.get(region, EKS_IMAGE_ACCOUNT)}.dkr.ecr.{region}{suffix}/"
    return _ECR.sub(registry, image)


def efa_manifest(region: str = "") -> dict[str, Any]:
    """AWS's EFA DaemonSet as applied: the vendored manifest (EFA instance types only), hardened as far
    as a privileged plugin can be, on hybridctl's GPU nodes, its image from `region`'s registry."""
    ds = _harden(yaml.safe_load(EFA_MANIFEST.read_text()), SKIPS_EFA, privileged=True)
    for container in ds["spec"]["template"]["spec"]["containers"]:
        container["image"] = regional_image(container["image"], region)
    # upstream's own affinity (EFA instance types, not EKS Auto Mode) AND hybridctl's GPU nodes
    upstream = yaml.safe_load(EFA_MANIFEST.read_text())["spec"]["template"]["spec"]["affinity"]
    terms = upstream["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    for term in terms:
        term["matchExpressions"].append({"key": GPU_NODE_LABEL, "operator": "Exists"})
    ds["spec"]["template"]["spec"]["affinity"] = upstream
    return ds


def network_policy(ds: dict[str, Any]) -> dict[str, Any]:
    """No traffic in or out of the plugin's pods: a device plugin speaks to the kubelet over a Unix
    socket only, and neither plugin calls the API server."""
    return {
        "metadata": {"name": f"{ds['metadata']['name']}-deny-all", "namespace": ds["metadata"]["namespace"],
                     "labels": {"app.kubernetes.io/managed-by": "hybridctl"}},
        "spec": {"podSelector": {"matchLabels": dict(ds["spec"]["selector"]["matchLabels"])},
                 "policyTypes": ["Ingress", "Egress"]},
    }


def _daemonset(name: str, ds: dict[str, Any], provider: pulumi.ProviderResource) -> k8s.apps.v1.DaemonSet:
    policy = network_policy(ds)
    k8s.networking.v1.NetworkPolicy(f"{name}-deny-all", metadata=policy["metadata"], spec=policy["spec"],
                                    opts=pulumi.ResourceOptions(provider=provider))
    return k8s.apps.v1.DaemonSet(name, metadata=ds["metadata"], spec=ds["spec"],
                                 opts=pulumi.ResourceOptions(provider=provider))


def device_plugin(provider: pulumi.ProviderResource) -> k8s.apps.v1.DaemonSet:
    return _daemonset("nvidia-device-plugin", manifest(), provider)


def efa_device_plugin(provider: pulumi.ProviderResource, region: str) -> k8s.apps.v1.DaemonSet:
    return _daemonset("aws-efa-k8s-device-plugin", efa_manifest(region), provider)
