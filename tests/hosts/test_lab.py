"""The test hosts themselves: reachable over verified SSH, isolated, fake GPUs, link and key faults, cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import psutil
import pytest

from hosts import netns
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab, TestHost

pytestmark = pytest.mark.hosts


def ssh(
    lab: HostLab, host: TestHost, command: str, *, timeout_s: int = 5
) -> subprocess.CompletedProcess[str]:
    argv = ssh_argv(lab, host, command, timeout_s=timeout_s)
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s + 10, check=False)


def ssh_argv(lab: HostLab, host: TestHost, command: str, *, timeout_s: int) -> list[str]:
    return [
        "ssh", "-i", str(lab.client_key_path), "-p", str(host.port),
        "-o", f"UserKnownHostsFile={lab.known_hosts_path}", "-o", "StrictHostKeyChecking=yes",
        "-o", "BatchMode=yes", "-o", f"ConnectTimeout={timeout_s}",
        f"{host.user}@{host.address}", command,
    ]  # fmt: skip


class TestReachability:
    def test_each_host_answers_over_ssh_with_a_verified_host_key(self, host_lab: HostLab) -> None:
        hosts = host_lab.start(3)
        for host in hosts:
            done = ssh(host_lab, host, "hostname; cat /etc/resolv.conf; python3 -c 'print(42)'")
            assert done.returncode == 0, done.stderr
            assert done.stdout.split() == [host.name, "nameserver", "127.0.0.1", "42"]

    def test_known_hosts_lists_exactly_the_running_hosts(self, host_lab: HostLab) -> None:
        first, second = host_lab.start(2, names=["alpha", "beta"])
        keys = host_lab.known_hosts_path.read_text().splitlines()
        assert sorted(line.split()[0] for line in keys) == sorted([first.address, second.address])
        host_lab.stop([first])
        assert [line.split()[0] for line in host_lab.known_hosts_path.read_text().splitlines()] == [
            second.address
        ]

    def test_hosts_have_their_own_pid_uts_and_network_namespaces(self, host_lab: HostLab) -> None:
        host, other = host_lab.start(2)
        processes = host.exec("ps -eo pid=,comm=").stdout.split()
        assert processes[:2] == ["1", "sshd"]
        assert host.exec("hostname").stdout.strip() == host.name
        addresses = host.exec("ip -4 -o addr show dev eth0").stdout
        assert f"{host.address}/24" in addresses and other.address not in addresses
        for namespace in ("pid", "uts", "net", "mnt"):
            assert os.readlink(f"/proc/{host.init_pid}/ns/{namespace}") != os.readlink(
                f"/proc/self/ns/{namespace}"
            )

    def test_controller_argv_reaches_the_hosts_from_outside_the_namespace(
        self, host_lab_session: HostLab
    ) -> None:
        lab = host_lab_session  # this test stays in the machine's own network namespace
        (host,) = lab.start(1)
        try:
            here, controller = (
                os.stat("/proc/thread-self/ns/net"),
                os.stat(netns.netns_path(lab.controller_netns)),
            )
            assert here.st_ino != controller.st_ino
            inside = subprocess.run(
                lab.controller_argv(ssh_argv(lab, host, "hostname", timeout_s=5)),
                capture_output=True,
                text=True,
            )
            assert (inside.returncode, inside.stdout.strip()) == (0, host.name), inside.stderr
        finally:
            lab.stop([host])

    def test_files_written_through_root_are_seen_inside_the_host(self, host_lab: HostLab) -> None:
        (host,) = host_lab.start(1)
        (host.root / "etc/hybridctl-probe").write_text("from the test\n")
        assert ssh(host_lab, host, "cat /etc/hybridctl-probe").stdout == "from the test\n"


class TestFakeGpus:
    def test_query_and_list_answer_like_nvidia_smi(self, host_lab: HostLab) -> None:
        a100 = FakeGpus(count=4, model="NVIDIA A100-SXM4-80GB", driver_version="535.161.08")
        gpu_host, plain = host_lab.start(2, names=["gpu", "plain"], gpus={"gpu": a100})
        query = "nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader,nounits"
        rows = ssh(host_lab, gpu_host, query).stdout.splitlines()
        assert rows == [f"{i}, NVIDIA A100-SXM4-80GB, 81559, 535.161.08" for i in range(4)]
        with_units = ssh(host_lab, gpu_host, "nvidia-smi --query-gpu=name,memory.total --format=csv").stdout
        assert with_units.splitlines()[:2] == ["name, memory.total [MiB]", "NVIDIA A100-SXM4-80GB, 81559 MiB"]
        listed = ssh(host_lab, gpu_host, "nvidia-smi -L").stdout.splitlines()
        assert len(listed) == 4 and listed[0].startswith("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-")
        assert ssh(host_lab, plain, "command -v nvidia-smi").returncode != 0

    def test_gpus_can_be_changed_while_the_host_runs(self, host_lab: HostLab) -> None:
        (host,) = host_lab.start(1, names=["gpu"], gpus={"gpu": 8})
        count = "nvidia-smi --query-gpu=count --format=csv,noheader | head -1"
        assert ssh(host_lab, host, count).stdout.strip() == "8"
        host.set_gpus(FakeGpus(count=2))
        assert ssh(host_lab, host, count).stdout.strip() == "2"
        host.set_gpus(None)
        assert ssh(host_lab, host, "nvidia-smi -L").returncode == 127


class TestFaults:
    def test_link_down_cuts_the_host_off_and_link_up_restores_it(self, host_lab: HostLab) -> None:
        host, other = host_lab.start(2)
        host.link_down()
        cut = ssh(host_lab, host, "true", timeout_s=2)
        assert cut.returncode == 255 and "timed out" in cut.stderr.lower()
        assert ssh(host_lab, other, "true").returncode == 0
        host.link_up()
        assert ssh(host_lab, host, "true").returncode == 0

    def test_a_regenerated_host_key_is_refused_by_strict_checking(self, host_lab: HostLab) -> None:
        host, other = host_lab.start(2)
        new_key = host.regenerate_host_key()
        assert new_key.split()[1] not in host_lab.known_hosts_path.read_text()
        refused = ssh(host_lab, host, "true")
        assert refused.returncode == 255
        assert "REMOTE HOST IDENTIFICATION HAS CHANGED" in refused.stderr
        assert ssh(host_lab, other, "true").returncode == 0


_CRASHING_LAB = textwrap.dedent(
    """
    import os, sys
    sys.path.insert(0, sys.argv[1])
    from hosts.lab import HostLab
    lab = HostLab()
    lab.open()
    lab.start(2)
    print(lab.controller_netns, lab.run_dir, flush=True)
    os.kill(os.getpid(), 9)
    """
)


def _lab_traces(prefix: str, run_dir: Path) -> list[str]:
    names = [p.name for p in Path("/run/netns").iterdir()] if Path("/run/netns").is_dir() else []
    mounts = [m for m in netns.mount_points() if m.startswith(str(run_dir))]
    return [n for n in names if n.startswith(prefix)] + mounts + ([str(run_dir)] if run_dir.exists() else [])


def _running(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


@pytest.mark.usefixtures("lab_prerequisites")
class TestCleanup:
    def test_close_kills_every_host_process_and_removes_namespaces_and_mounts(self) -> None:
        lab = HostLab()
        lab.open()
        hosts = lab.start(2)
        pids = [h.init_pid for h in hosts]
        prefix = lab.controller_netns.removesuffix("ctl")
        assert len(_lab_traces(prefix, lab.run_dir)) == 3 + 2 + 1  # 3 netns, 2 overlays, run dir
        lab.close()
        assert _lab_traces(prefix, lab.run_dir) == []
        assert not any(_running(pid) for pid in pids)

    def test_a_new_lab_removes_what_a_killed_run_left(self) -> None:
        tests_dir = Path(__file__).resolve().parent.parent
        crashed = subprocess.run(
            [sys.executable, "-c", _CRASHING_LAB, str(tests_dir)], capture_output=True, text=True, timeout=120
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        controller, run_dir = crashed.stdout.split()
        prefix = controller.removesuffix("ctl")
        assert len(_lab_traces(prefix, Path(run_dir))) == 6
        lab = HostLab()
        try:
            lab.open()
            assert _lab_traces(prefix, Path(run_dir)) == []
        finally:
            lab.close()
