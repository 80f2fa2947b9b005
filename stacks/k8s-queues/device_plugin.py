"""The NVIDIA device plugin, which the AL2023 NVIDIA nodes need to advertise `nvidia.com/gpu`.

Without it the GPU nodes join but offer no GPUs, and no job is ever admitted onto them. The
manifest is vendored and pinned (vendor/nvidia-device-plugin/, with its licence); this module
adds only a node affinity to hybridctl's GPU node groups and the managed-by label.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import yaml

MANIFEST = Path(__file__).parent / "vendor" / "nvidia-device-plugin" / "nvidia-device-plugin.yml"
GPU_NODE_LABEL = "hybridctl.io/gpu"  # set by stacks/aws-gpu-pools on every GPU node group


def manifest() -> dict[str, Any]:
    """The DaemonSet as applied: the vendored manifest plus the GPU-node affinity."""
    loaded = yaml.safe_load(MANIFEST.read_text())
    daemonset: dict[str, Any] = copy.deepcopy(loaded)
    daemonset["metadata"].setdefault("labels", {})["app.kubernetes.io/managed-by"] = "hybridctl"
    daemonset["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": GPU_NODE_LABEL, "operator": "Exists"}]}]}}}
    return daemonset


def device_plugin(provider: pulumi.ProviderResource) -> k8s.apps.v1.DaemonSet:
    ds = manifest()
    return k8s.apps.v1.DaemonSet(
        "nvidia-device-plugin",
        metadata=ds["metadata"],
        spec=ds["spec"],
        opts=pulumi.ResourceOptions(provider=provider),
    )
