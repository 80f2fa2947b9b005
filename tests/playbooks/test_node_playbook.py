"""node.yml against local host roots: files, labels, runtime config, idempotence, bad variables."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hybridctl.core.deploy.bundle import key_id
from hybridctl.drivers.ansible import HostState, PlaybookResult
from hybridctl.drivers.bundle import load_public_key

from .support import Bundles, RunPlaybook, describe

pytestmark = pytest.mark.slow

# Local hosts must not find a containerd the machine running the tests may have.
NO_CONTAINERD = {"node_baseline_containerd_binary": "containerd-not-installed-here"}
NODE_VARS: dict[str, dict[str, object]] = {
    "fra1": {"hybridctl_site": "dc-frankfurt", "hybridctl_site_kind": "onprem", "hybridctl_pool": "h100-reserved",
             "hybridctl_gpu": "H100", "hybridctl_tiers": ["fixed", "burst"], "hybridctl_expected_gpus": 8,
             "hybridctl_failure_domain": "fra", "hybridctl_jurisdiction": "EU", **NO_CONTAINERD},
    "edge1": {"hybridctl_site": "edge-store-17", "hybridctl_site_kind": "edge", "hybridctl_pool": "l4-edge",
              "hybridctl_gpu": "L4", "hybridctl_tier": "opportunistic", **NO_CONTAINERD},
    # containerd configured already (but not installed): node.yml leaves its config alone.
    "legacy": {"hybridctl_site": "dc-frankfurt", "hybridctl_site_kind": "onprem", "hybridctl_pool": "a100",
               "hybridctl_gpu": "A100-80GB", "hybridctl_tiers": ["burst"], **NO_CONTAINERD},
}
KUBELET_ENV = "# site settings\nKUBELET_EXTRA_ARGS=--cgroup-driver=systemd --node-labels=stale=yes\n"
LEGACY_CONFIG = 'version = 2\n\n[plugins."io.containerd.grpc.v1.cri"]\n  sandbox_image = "pause:3.9"\n'


@dataclass(frozen=True)
class NodeRuns:
    roots: dict[str, Path]
    first: PlaybookResult
    second: PlaybookResult
    checked: PlaybookResult


@pytest.fixture(scope="module")
def node_runs(tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook, bundles: Bundles) -> NodeRuns:
    base = tmp_path_factory.mktemp("nodes")
    roots = {name: base / name for name in NODE_VARS}
    # fra1 runs kubelet, with flags of its own in kubelet's environment file.
    (roots["fra1"] / "usr/bin").mkdir(parents=True)
    (roots["fra1"] / "usr/bin/kubelet").write_text("#!/bin/sh\n")
    (roots["fra1"] / "etc/default").mkdir(parents=True)
    (roots["fra1"] / "etc/default/kubelet").write_text(KUBELET_ENV)
    (roots["legacy"] / "etc/containerd").mkdir(parents=True)
    (roots["legacy"] / "etc/containerd/config.toml").write_text(LEGACY_CONFIG)
    first = run_local("node.yml", roots, host_vars=NODE_VARS,
                      hybridctl_bundle_public_key_file=str(bundles.public_key))
    second = run_local("node.yml", roots, host_vars=NODE_VARS,
                       hybridctl_bundle_public_key_file=str(bundles.public_key))
    # Drift on one node, then a check-mode run (how `hybridctl status` looks for drift).
    (roots["legacy"] / "etc/hybridctl/node.yaml").write_text("edited: by hand\n")
    checked = run_local("node.yml", roots, host_vars=NODE_VARS, check=True,
                        hybridctl_bundle_public_key_file=str(bundles.public_key))
    return NodeRuns(roots, first, second, checked)


class TestNodeBaseline:
    def test_first_run_changes_and_second_run_changes_nothing(self, node_runs: NodeRuns) -> None:
        assert node_runs.first.succeeded, describe(node_runs.first)
        assert all(h.state is HostState.CHANGED for h in node_runs.first.hosts)
        assert node_runs.second.succeeded, describe(node_runs.second)
        assert [(h.host, h.changed) for h in node_runs.second.hosts] == [(h, 0) for h in sorted(NODE_VARS)]

    def test_node_config_carries_site_pool_and_tier_labels(self, node_runs: NodeRuns) -> None:
        config = yaml.safe_load((node_runs.roots["fra1"] / "etc/hybridctl/node.yaml").read_text())
        assert config["labels"] == {
            "hybridctl.io/site": "dc-frankfurt", "hybridctl.io/site-kind": "onprem",
            "hybridctl.io/pool": "h100-reserved", "hybridctl.io/gpu": "H100", "hybridctl.io/capacity-type": "owned",
            "hybridctl.io/failure-domain": "fra", "hybridctl.io/jurisdiction": "EU",
            "hybridctl.io/tier-burst": "true", "hybridctl.io/tier-fixed": "true",
        }
        assert config["tiers"] == ["burst", "fixed"] and config["gpu"] == {"type": "H100", "count": 8}
        assert config["paths"] == {"config": "/etc/hybridctl", "models": "/var/lib/hybridctl/models"}
        labels = dict(item.split("=") for item in config["kubelet_node_labels"].split(","))
        assert labels == config["labels"]
        edge = yaml.safe_load((node_runs.roots["edge1"] / "etc/hybridctl/node.yaml").read_text())
        assert edge["tiers"] == ["opportunistic"] and edge["site"] == {"name": "edge-store-17", "kind": "edge"}

    def test_kubelet_registers_with_the_cloud_nodes_labels_and_taint_keeping_its_other_flags(
        self, node_runs: NodeRuns
    ) -> None:
        lines = (node_runs.roots["fra1"] / "etc/default/kubelet").read_text().splitlines()
        assert lines[0] == "# site settings" and len(lines) == 2
        flags = lines[1].removeprefix("KUBELET_EXTRA_ARGS=").split()
        assert flags[0] == "--cgroup-driver=systemd" and len(flags) == 3
        labels = dict(pair.split("=") for pair in flags[1].removeprefix("--node-labels=").split(","))
        config = yaml.safe_load((node_runs.roots["fra1"] / "etc/hybridctl/node.yaml").read_text())
        assert labels == config["labels"] and "stale" not in labels
        # The keys the cloud node groups carry (stacks/aws-gpu-pools), and their taint.
        assert {"hybridctl.io/site", "hybridctl.io/pool", "hybridctl.io/capacity-type", "hybridctl.io/gpu"} <= set(labels)
        assert flags[2] == "--register-with-taints=nvidia.com/gpu=true:NoSchedule"
        fra1 = node_runs.first.host("fra1").data["kubelet"]
        assert fra1 == {"env_file": "/etc/default/kubelet", "labels": labels,
                        "taints": ["nvidia.com/gpu=true:NoSchedule"]}
        # No kubelet: nothing written, and the result says so.
        assert node_runs.first.host("edge1").data["kubelet"] is None
        assert not (node_runs.roots["edge1"] / "etc/default/kubelet").exists()

    def test_directories_and_trusted_key_exist(self, node_runs: NodeRuns, bundles: Bundles) -> None:
        root = node_runs.roots["edge1"]
        assert (root / "var/lib/hybridctl/models").is_dir()
        # Pinned under its key ID (the host's first key; later ones only with `bundle trust`).
        trusted = root / f"etc/hybridctl/trust/keys/{key_id(load_public_key(bundles.public_key))}.pem"
        assert trusted.read_bytes() == bundles.public_key.read_bytes()

    def test_without_containerd_nothing_is_configured_and_a_warning_says_so(self, node_runs: NodeRuns) -> None:
        # The merge itself needs a real containerd: tests/playbooks/test_playbooks_on_hosts.py.
        assert (node_runs.roots["legacy"] / "etc/containerd/config.toml").read_text() == LEGACY_CONFIG
        for host in node_runs.first.hosts:
            assert host.data["containerd"] is None
            assert host.data["warnings"] == [
                "chrony is not installed: the clock is not kept in sync (signature checks and journals need it);"
                " install chrony", "containerd is not installed: no container runtime configured"]
            assert host.data["time_sync"] == {"chrony": False, "servers": []}
            # Nothing written, so nothing to restart (and no service manager to do it).
            assert (host.data["containerd_restarted"], host.data["containerd_restart_pending"]) == (False, False)

    def test_check_mode_reports_drift_only_where_it_is_and_fixes_nothing(self, node_runs: NodeRuns) -> None:
        checked = node_runs.checked
        assert checked.succeeded, describe(checked)
        assert [(h.host, h.changed > 0) for h in checked.hosts] == [("edge1", False), ("fra1", False),
                                                                   ("legacy", True)]
        assert (node_runs.roots["legacy"] / "etc/hybridctl/node.yaml").read_text() == "edited: by hand\n"


class TestNodeVariables:
    def test_missing_or_invalid_variables_fail_with_the_names(self, tmp_path: Path, run_local: RunPlaybook) -> None:
        bad = {"nopool": {**NODE_VARS["fra1"], "hybridctl_pool": None},
               "badtier": {**NODE_VARS["fra1"], "hybridctl_tiers": ["gold"]}}
        del bad["nopool"]["hybridctl_pool"]
        result = run_local("node.yml", {name: tmp_path / name for name in bad}, host_vars=bad)
        for name in bad:
            host = result.host(name)
            assert host.state is HostState.FAILED, describe(result)
            assert host.message is not None and "needs hybridctl_site" in host.message
            assert not (tmp_path / name / "etc/hybridctl/node.yaml").exists()
        assert "tiers=['gold']" in (result.host("badtier").message or "")
