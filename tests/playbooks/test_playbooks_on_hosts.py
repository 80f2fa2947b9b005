"""The playbooks against the real SSH test hosts (tests/hosts), through the Ansible driver.

Hosts use the default hybridctl_common_root (/): files land where they would on a real node, and
the test reads them through each host's root filesystem from outside.
"""

from __future__ import annotations

import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab, TestHost
from hybridctl.drivers.ansible import HostState, PlaybookResult, SshOptions, run_playbook
from hybridctl.paths import playbooks_dir

from .support import MODEL, Bundles, current_version, describe, model_dir, payload, versions

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

NODE_VARS = {"hybridctl_site": "dc-frankfurt", "hybridctl_site_kind": "onprem", "hybridctl_pool": "h100-reserved",
             "hybridctl_gpu": "H100", "hybridctl_tiers": ["fixed", "burst"], "hybridctl_expected_gpus": 8}


def run(lab: HostLab, playbook: str, hosts: Sequence[TestHost],
        host_vars: Mapping[str, Mapping[str, object]] | None = None, **extravars: object) -> PlaybookResult:
    inventory: dict[str, Any] = lab.inventory(hosts)
    for name, members in inventory["all"]["children"]["lab"]["hosts"].items():
        members.update((host_vars or {}).get(name, {}))
    ssh = SshOptions(known_hosts=lab.known_hosts_path, private_key=lab.client_key_path)
    return run_playbook(playbooks_dir() / playbook, inventory, ssh=ssh, extravars=extravars)


def module_processes_left(host: TestHost, wait_s: float = 3.0) -> list[str]:
    """Command lines of the python3 processes still running on the host, once they had wait_s to end."""
    deadline = time.monotonic() + wait_s
    while True:
        listing = host.exec("for p in /proc/[0-9]*; do tr '\\000' ' ' < $p/cmdline 2>/dev/null; echo; done").stdout
        left = [line for line in listing.splitlines() if "python3" in line]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


class TestPreflightOnHosts:
    def test_fake_gpus_are_found_and_a_host_without_nvidia_smi_has_none(self, host_lab: HostLab) -> None:
        gpu, plain = host_lab.start(2, names=["fra-gpu-01", "fra-cpu-01"],
                                    gpus={"fra-gpu-01": FakeGpus(8, model="NVIDIA H100 80GB HBM3")})
        result = run(host_lab, "preflight.yml", [gpu, plain],
                     {gpu.name: {"hybridctl_gpu": "H100", "hybridctl_expected_gpus": 8}},
                     preflight_model_cache_required_gb=0.01)
        assert result.succeeded, describe(result)
        found: dict[str, Any] = dict(result.host(gpu.name).data)
        assert (found["nvidia_smi"], found["gpu_count"], found["driver_version"]) == ("ok", 8, "550.54.15")
        assert found["gpus"][7]["name"] == "NVIDIA H100 80GB HBM3" and found["os"]["distribution"] == "Debian"
        assert found["disk"]["path"] == "/var/lib/hybridctl/models" and found["disk"]["available_bytes"] > 0
        assert found["container_toolkit"] == {"runtime": "present", "nvidia_ctk": None}
        none = result.host(plain.name).data
        assert (none["nvidia_smi"], none["gpu_count"], none["gpus"]) == ("absent", 0, [])
        assert none["container_toolkit"]["runtime"] == "absent"

    def test_a_host_with_fewer_gpus_than_planned_fails_with_the_count(self, host_lab: HostLab) -> None:
        (host,) = host_lab.start(1, names=["short-01"], gpus={"short-01": 4})
        result = run(host_lab, "preflight.yml", [host], {host.name: {"hybridctl_expected_gpus": 8}})
        outcome = result.host(host.name)
        assert outcome.state is HostState.FAILED, describe(result)
        assert outcome.data["problems"] == ["found 4 GPUs, expected 8"]


class TestNodeOnHosts:
    def test_baseline_twice_second_run_changes_nothing(self, host_lab: HostLab, bundles: Bundles) -> None:
        hosts = host_lab.start(2)
        first = run(host_lab, "node.yml", hosts, {h.name: NODE_VARS for h in hosts},
                    hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert first.succeeded and first.hosts_in(HostState.CHANGED) == tuple(h.name for h in hosts), \
            describe(first)
        second = run(host_lab, "node.yml", hosts, {h.name: NODE_VARS for h in hosts},
                     hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert second.succeeded, describe(second)
        assert [h.changed for h in second.hosts] == [0, 0]
        for host in hosts:
            config = yaml.safe_load((host.root / "etc/hybridctl/node.yaml").read_text())
            assert config["node"] == host.name and config["labels"]["hybridctl.io/pool"] == "h100-reserved"
            # No nvidia-container-runtime on these hosts: containerd keeps runc as its default.
            loaded = tomllib.loads(host.exec("containerd config dump").stdout)
            assert loaded["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["default_runtime_name"] == "runc"
            assert "nvidia" not in loaded["plugins"]["io.containerd.grpc.v1.cri"]["containerd"]["runtimes"]
            assert any("nvidia-container-runtime is missing" in w for w in second.host(host.name).data["warnings"])


class TestModelSyncOnHosts:
    def test_sync_refuse_and_rollback(self, host_lab: HostLab, bundles: Bundles) -> None:
        good, tampered, unsigned = hosts = host_lab.start(3, names=["edge-01", "edge-02", "edge-03"])
        roots = {h.name: h.root for h in hosts}
        key = str(bundles.public_key)
        for version in ("v1", "v2"):
            synced = run(host_lab, "model-sync.yml", hosts, hybridctl_bundle_dir=str(bundles.good[version]),
                         hybridctl_bundle_public_key_file=key)
            assert synced.succeeded, describe(synced)
            assert all(h.data["status"] == "activated" for h in synced.hosts)
        assert {current_version(root) for root in roots.values()} == {"v2"}
        served = model_dir(good.root) / "current/weights/model.safetensors"
        assert served.read_bytes() == payload("v2")["weights/model.safetensors"]

        mixed = run(host_lab, "model-sync.yml", hosts, {
            good.name: {"hybridctl_bundle_dir": str(bundles.good["v3"])},
            tampered.name: {"hybridctl_bundle_dir": str(bundles.broken["tampered"])},
            unsigned.name: {"hybridctl_bundle_dir": str(bundles.broken["unsigned"])},
        })
        assert mixed.host(good.name).data["status"] == "activated", describe(mixed)
        assert "sha256 mismatch in weights/model.safetensors" in (mixed.host(tampered.name).message or "")
        assert "bundle is not signed" in (mixed.host(unsigned.name).message or "")
        for refused in (tampered, unsigned):
            assert mixed.host(refused.name).state is HostState.FAILED
            assert current_version(refused.root) == "v2" and versions(refused.root) == ["v1", "v2"]
        assert current_version(good.root) == "v3"
        # The probe's module run stays on the host for the install (hybridctl_model_hold.py): it
        # ends with it, installed or refused, and its private dir is removed.
        for host in hosts:
            assert not module_processes_left(host), host.name
            assert not list((host.root / "tmp").glob("hybridctl-hold-*")), host.name

        back = run(host_lab, "rollback.yml", [good], hybridctl_model=MODEL)
        assert back.host(good.name).data["status"] == "rolled_back", describe(back)
        assert current_version(good.root) == "v2"
        # `previous` moved back with the rollback: a second one goes on to v1 (issue 10: it used to do nothing).
        again = run(host_lab, "rollback.yml", [good], hybridctl_model=MODEL)
        assert again.host(good.name).data["status"] == "rolled_back", describe(again)
        assert Path(good.root / "var/lib/hybridctl/models" / MODEL / "current").readlink() == Path("versions/v1")
        same = run(host_lab, "rollback.yml", [good], hybridctl_model=MODEL, hybridctl_rollback_version="v1")
        assert same.host(good.name).changed == 0 and same.host(good.name).data["status"] == "unchanged"
