"""node.yml's containerd work on the real SSH test hosts: the merge, checked with `containerd config
dump` (Debian's containerd 1.6 is in the hosts' root filesystem; dump needs no running daemon),
and the rolling restart."""

from __future__ import annotations

import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hosts import fake_gpu
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab, TestHost
from hybridctl.drivers.ansible import HostState

from .support import describe
from .test_playbooks_on_hosts import NODE_VARS, run

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

CRI = "io.containerd.grpc.v1.cri"
# A site's own containerd config: what an import-based drop-in used to wipe on containerd 1.x.
SITE_CONFIG = f"""version = 2

[plugins."{CRI}"]
  sandbox_image = "registry.site.example/pause:3.9"

[plugins."{CRI}".containerd.runtimes.runc.options]
  SystemdCgroup = true

[plugins."{CRI}".registry.mirrors."docker.io"]
  endpoint = ["https://mirror.site.example"]
"""
# systemd cannot run in the test hosts: a stand-in answers node.yml's systemctl calls and logs restarts.
FAKE_SYSTEMCTL = """#!/bin/sh
case "$1" in
  show) echo loaded ;;
  restart) date +%s.%N >> /var/log/containerd-restarts ;;
  is-active) [ ! -e /etc/containerd-unhealthy ] ;;
  *) exit 1 ;;
esac
"""


def loaded_config(host: TestHost) -> dict[str, Any]:
    return tomllib.loads(host.exec("containerd config dump").stdout)


def give_runtime(host: TestHost) -> None:
    fake_gpu.install_runtime(host.root)


class TestContainerdMerge:
    def test_the_nvidia_runtime_is_merged_and_the_sites_settings_survive(self, host_lab: HostLab) -> None:
        gpu, bare = host_lab.start(2, names=["gpu-01", "bare-01"])
        for host in (gpu, bare):
            (host.root / "etc/containerd/config.toml").write_text(SITE_CONFIG)
        give_runtime(gpu)
        first = run(host_lab, "node.yml", [gpu, bare], {h.name: NODE_VARS for h in (gpu, bare)},
                    node_baseline_ntp_servers=["ntp1.site.example", "10.0.0.5"])
        assert first.succeeded, describe(first)
        # chrony loads the site's time servers (chronyd -p: the configuration as chronyd reads it).
        chrony = gpu.exec("chronyd -p").stdout.splitlines()
        assert {"server ntp1.site.example iburst", "server 10.0.0.5 iburst"} <= set(chrony)
        assert first.host(gpu.name).data["time_sync"] == {"chrony": True, "servers": ["ntp1.site.example", "10.0.0.5"]}

        loaded = loaded_config(gpu)
        cri = loaded["plugins"][CRI]
        assert cri["sandbox_image"] == "registry.site.example/pause:3.9"
        assert cri["registry"]["mirrors"]["docker.io"]["endpoint"] == ["https://mirror.site.example"]
        assert cri["containerd"]["runtimes"]["runc"]["options"]["SystemdCgroup"] is True
        nvidia = cri["containerd"]["runtimes"]["nvidia"]
        assert cri["containerd"]["default_runtime_name"] == "nvidia"
        assert nvidia["options"]["BinaryName"] == "/usr/bin/nvidia-container-runtime"
        assert nvidia["options"]["SystemdCgroup"] is True and nvidia["runtime_type"] == "io.containerd.runc.v2"
        assert first.host(gpu.name).data["containerd"] == {
            "method": "merged", "config": "/etc/containerd/config.toml", "default_runtime": "nvidia",
            "nvidia_runtime": True}
        assert first.host(gpu.name).data["warnings"] == []
        # The site's original config is kept beside it; a restart is pending (no systemd here).
        assert any(p.name.startswith("config.toml.") for p in (gpu.root / "etc/containerd").iterdir())
        assert (gpu.root / "etc/hybridctl/containerd-restart-pending").exists()

        # No runtime binary: the default runtime is left alone, with a warning.
        assert (bare.root / "etc/containerd/config.toml").read_text() == SITE_CONFIG
        assert loaded_config(bare)["plugins"][CRI]["containerd"]["default_runtime_name"] == "runc"
        assert first.host(bare.name).data["warnings"] == [
            "the NVIDIA container runtime /usr/bin/nvidia-container-runtime is missing: containerd left as it was"
            " (its default runtime unchanged); install nvidia-container-toolkit"]
        assert first.host(bare.name).state is HostState.CHANGED  # the node files, not containerd

        again = run(host_lab, "node.yml", [gpu], {gpu.name: NODE_VARS},
                    node_baseline_ntp_servers=["ntp1.site.example", "10.0.0.5"])
        assert again.succeeded and again.host(gpu.name).changed == 0, describe(again)


class TestRollingRestart:
    def test_the_restart_stops_at_the_first_batch_with_a_failing_host(self, host_lab: HostLab) -> None:
        hosts = host_lab.start(3, names=["n1", "n2", "n3"])
        for host in hosts:
            give_runtime(host)
            (host.root / "usr/local/bin/systemctl").write_text(FAKE_SYSTEMCTL)
            (host.root / "usr/local/bin/systemctl").chmod(0o755)
            (host.root / "run/systemd/system").mkdir(parents=True)
        n1, n2, n3 = hosts
        (n2.root / "etc/containerd-unhealthy").touch()
        # Batches [n1, n2] and [n3]: a batch where only some hosts fail must stop the run too.
        result = run(host_lab, "node.yml", hosts, {h.name: NODE_VARS for h in hosts}, node_baseline_restart_batch=2,
                     node_baseline_manage_services=True, node_baseline_containerd_health_argv=["systemctl", "is-active",
                     "containerd"], node_baseline_containerd_health_retries=1, node_baseline_containerd_health_delay_s=0)  # fmt: skip

        def restarted(host: TestHost) -> bool:
            return (host.root / "var/log/containerd-restarts").exists()

        assert not result.succeeded
        assert (restarted(n1), restarted(n2), restarted(n3)) == (True, True, False)
        assert result.host(n1.name).data["containerd_restarted"] is True
        assert result.host(n1.name).data["containerd_healthy"] is True
        assert not (n1.root / "etc/hybridctl/containerd-restart-pending").exists()
        failed = result.host(n2.name)
        assert (failed.state, failed.failed_task) == (HostState.FAILED,
                                                        "Stop the rollout where containerd is unhealthy after its restart")
        assert failed.data["containerd_healthy"] is False
        # n2 stays pending (the next run restarts it again); n3's batch never started.
        assert (n2.root / "etc/hybridctl/containerd-restart-pending").exists()
        assert (n3.root / "etc/hybridctl/containerd-restart-pending").exists()
        assert "containerd_restarted" not in result.host(n3.name).data


def toolkit_repository(host: TestHost, tmp: Path) -> str:
    """A flat apt repository inside the host with a stand-in nvidia-container-toolkit package."""
    package = tmp / "pkg"
    (package / "DEBIAN").mkdir(parents=True)
    (package / "DEBIAN/control").write_text(
        "Package: nvidia-container-toolkit\nVersion: 1.17.0-1\nArchitecture: all\n"
        "Maintainer: hybridctl tests <tests@example.invalid>\nDescription: stand-in for the NVIDIA toolkit\n")
    (package / "usr/bin").mkdir(parents=True)
    (package / fake_gpu.RUNTIME_PATH).write_text('#!/bin/sh\nexec runc "$@"\n')
    (package / fake_gpu.RUNTIME_PATH).chmod(0o755)
    repository = host.root / "srv/nvidia-repo"
    repository.mkdir(parents=True)
    subprocess.run(["dpkg-deb", "--root-owner-group", "-b", str(package), str(repository / "toolkit.deb")],
                   check=True, capture_output=True)  # fmt: skip
    index = subprocess.run(["dpkg-scanpackages", "."], cwd=repository, check=True, capture_output=True, text=True)
    (repository / "Packages").write_text(index.stdout)
    return "deb [trusted=yes] file:/srv/nvidia-repo ./"


@pytest.mark.skipif(shutil.which("dpkg-scanpackages") is None, reason="needs dpkg-dev to build the test repository")
class TestNvidiaPackages:
    def test_the_toolkit_comes_from_the_sites_repository_where_allowed(
        self, host_lab: HostLab, tmp_path: Path
    ) -> None:
        (host,) = host_lab.start(1, names=["gpu-apt"], gpus={"gpu-apt": FakeGpus(2, container_toolkit=False)})
        settings = {"hybridctl_common_nvidia_apt_install": True, "hybridctl_common_nvidia_apt_repository":
                    toolkit_repository(host, tmp_path)}  # fmt: skip
        host_vars = {host.name: {**NODE_VARS, "hybridctl_expected_gpus": 2}}
        # Refused where the site does not allow installing, and named.
        refused = run(host_lab, "preflight.yml", [host], host_vars)
        assert refused.host(host.name).data["problems"] == [
            "NVIDIA container toolkit missing: /usr/bin/nvidia-container-runtime not found; install"
            " nvidia-container-toolkit"]
        # Allowed: preflight passes and says what node.yml will install; node.yml installs it.
        checked = run(host_lab, "preflight.yml", [host], host_vars, **settings)
        assert checked.succeeded, describe(checked)
        assert checked.host(host.name).data["to_install"] == ["nvidia-container-toolkit"]
        node = run(host_lab, "node.yml", [host], host_vars, **settings)
        assert node.succeeded, describe(node)
        assert "install ok installed" in host.exec("dpkg-query -W -f='${Status}' nvidia-container-toolkit").stdout
        # ...and containerd then gets the runtime the package brought.
        loaded = loaded_config(host)["plugins"][CRI]["containerd"]
        assert loaded["default_runtime_name"] == "nvidia"
        again = run(host_lab, "node.yml", [host], host_vars, **settings)
        assert again.succeeded and again.host(host.name).changed == 0, describe(again)
