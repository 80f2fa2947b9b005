"""The vendored device plugins: pinned upstream files, hardened as applied, the EFA one where pools use EFA."""

from __future__ import annotations

import hashlib

import pytest
from hybridctl.paths import stacks_dir
from pulumi_stack_harness import ProgramRun
from test_k8s_queues_stack import DAEMONSET, run

VENDOR = stacks_dir() / "k8s-queues" / "vendor"
NETWORK_POLICY = "kubernetes:networking.k8s.io/v1:NetworkPolicy"
# upstream NVIDIA/k8s-device-plugin v0.20.0, deployments/static/nvidia-device-plugin.yml (vendor README)
NVIDIA_SHA256 = "325835e0b0d9263ae673e41d878f849e880642142e9f9b15d1a3400da6a2260d"


@pytest.fixture(scope="module")
def with_efa() -> ProgramRun:
    return run(installEfaDevicePlugin="true")


def daemonsets(run_: ProgramRun) -> dict[str, dict]:
    return {d.inputs["metadata"]["name"]: d.inputs for d in run_.of_type(DAEMONSET)}


def test_the_vendored_files_are_upstreams_with_their_licences() -> None:
    manifest = VENDOR / "nvidia-device-plugin" / "nvidia-device-plugin.yml"
    assert hashlib.sha256(manifest.read_bytes()).hexdigest() == NVIDIA_SHA256
    assert "image: nvcr.io/nvidia/k8s-device-plugin:v0.20.0" in manifest.read_text()
    for plugin in ("nvidia-device-plugin", "aws-efa-k8s-device-plugin"):
        assert "Apache License" in (VENDOR / plugin / "LICENSE").read_text()
    assert "aws-efa-k8s-device-plugin:v0.5.20" in (VENDOR / "aws-efa-k8s-device-plugin" / "aws-efa-k8s-device-plugin.yml").read_text()


def test_the_efa_plugin_is_installed_only_where_asked(with_efa: ProgramRun) -> None:
    assert set(daemonsets(run())) == {"nvidia-device-plugin-daemonset"}
    assert set(daemonsets(with_efa)) == {"nvidia-device-plugin-daemonset", "aws-efa-k8s-device-plugin"}
    efa = daemonsets(with_efa)["aws-efa-k8s-device-plugin"]["spec"]["template"]["spec"]
    terms = efa["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    for term in terms:  # upstream's EFA instance types AND hybridctl's GPU nodes
        keys = [e["key"] for e in term["matchExpressions"]]
        assert "node.kubernetes.io/instance-type" in keys and "hybridctl.io/gpu" in keys
        assert "p5.48xlarge" in term["matchExpressions"][0]["values"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in efa["tolerations"]


@pytest.mark.parametrize("name", ["nvidia-device-plugin-daemonset", "aws-efa-k8s-device-plugin"])
def test_each_plugin_is_hardened_and_says_why_for_what_it_skips(with_efa: ProgramRun, name: str) -> None:
    ds = daemonsets(with_efa)[name]
    pod = ds["spec"]["template"]["spec"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for container in pod["containers"]:
        assert set(container["resources"]) == {"requests", "limits"}
        assert set(container["resources"]["limits"]) == {"cpu", "memory"}
        assert container["securityContext"]["readOnlyRootFilesystem"] is True
    skips = {k: v for k, v in ds["metadata"]["annotations"].items() if k.startswith("checkov.io/skip")}
    assert skips and all("=" in v and v.split("=", 1)[1].strip() for v in skips.values())
    policies = {p.inputs["metadata"]["name"]: p.inputs for p in with_efa.of_type(NETWORK_POLICY)}
    policy = policies[f"{name}-deny-all"]
    assert policy["spec"]["podSelector"]["matchLabels"] == ds["spec"]["selector"]["matchLabels"]
    assert policy["spec"]["policyTypes"] == ["Ingress", "Egress"] and "ingress" not in policy["spec"]


def test_the_efa_plugin_is_pulled_from_the_cluster_s_own_region() -> None:
    """Before: upstream's manifest names us-west-2's registry, for a cluster in any region."""
    from device_plugin import efa_manifest, regional_image

    images = [c["image"] for c in efa_manifest("eu-central-1")["spec"]["template"]["spec"]["containers"]]
    assert images == ["602401143452.dkr.ecr.eu-central-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"]
    assert regional_image(images[0], "me-south-1") == \
        "558608220178.dkr.ecr.me-south-1.amazonaws.com/eks/aws-efa-k8s-device-plugin:v0.5.20"
    assert regional_image(images[0], "cn-north-1").startswith("918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn/")
    assert regional_image("nvcr.io/nvidia/k8s-device-plugin:v0.20.0", "eu-central-1") == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"


def test_the_stack_s_efa_plugin_is_its_region_s(with_efa: ProgramRun) -> None:
    (efa,) = [d for name, d in daemonsets(with_efa).items() if "efa" in name]
    assert efa["spec"]["template"]["spec"]["containers"][0]["image"].startswith("602401143452.dkr.ecr.us-east-1.")
