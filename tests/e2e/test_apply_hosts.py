"""`hybridctl apply / status / destroy` end to end against real SSH test hosts (tests/hosts):
an on-prem site of two hosts and an edge site of one, plus a cloud site through the recording
cloud double. Includes the crash test: SIGKILL during the Ansible step, then apply again."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import psutil
import pytest
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab, TestHost
from hybridctl.drivers.bundle import create_bundle, generate_keypair, sign_bundle
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from support.apply_cli import cli_env, run_cli, start_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.processes import command_line
from support.recording_cloud import RecordingCloud
from support.text import flat
from support.waiting import wait_for

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


class Loop:
    """Three test hosts, an inventory naming them, a state dir, SSH settings from the lab."""

    def __init__(self, lab: HostLab, root: Path) -> None:
        self.lab = lab
        self.root = root
        self.onprem = lab.start(2, names=["lab-gpu-01", "lab-gpu-02"], gpus={"lab-gpu-01": 4, "lab-gpu-02": 4})
        self.edge = lab.start(1, names=["shop-01"], gpus={"shop-01": FakeGpus(1)})
        document = hybrid_document([{"name": h.name, "address": h.address} for h in self.onprem],
                                   [{"name": h.name, "address": h.address} for h in self.edge])
        self.inventory = write_inventory(root / "inventory.yaml", document)
        self.state = root / "state"
        self.ssh = ["--known-hosts", str(lab.known_hosts_path), "--ssh-key", str(lab.client_key_path)]

    @property
    def hosts(self) -> list[TestHost]:
        return [*self.onprem, *self.edge]

    def cli(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, "--state", self.state, *self.ssh, env=cli_env(**env), cwd=self.root)

    def plan(self) -> Path:
        done = run_cli("plan", self.inventory, "--out", self.root / "plan.json", env=cli_env(), cwd=self.root)
        assert done.returncode == 0, done.stderr
        return self.root / "plan.json"

    def store(self) -> StateStore:
        return StateStore(self.state)

    def cloud_ups(self) -> list[str]:
        return [str(c["stack"]) for c in RecordingCloud(self.state / "recording-cloud").calls() if c["operation"] == "up"]

    def make_bundles(self) -> tuple[Path, Path]:
        keys = self.root / "keys"
        generate_keypair(keys / "signing.pem", keys / "signing.pub.pem")
        bundles = self.root / "bundles"
        for workload in ("chat", "shop-vision"):
            target = bundles / workload
            target.mkdir(parents=True)
            (target / "weights.bin").write_bytes(workload.encode() * 1000)
            create_bundle(target, model=workload, version="2026.05.1", source_commit="abc123")
            sign_bundle(target, keys / "signing.pem")
        return bundles, keys / "signing.pub.pem"


@pytest.fixture
def loop(host_lab: HostLab, tmp_path: Path) -> Loop:
    return Loop(host_lab, tmp_path)


def node_config(host: TestHost) -> Path:
    return host.root / "etc/hybridctl/node.yaml"




class TestLoopAgainstHosts:
    def test_apply_status_drift_reapply_destroy(self, loop: Loop) -> None:
        bundles, public_key = loop.make_bundles()
        plan = loop.plan()
        applied = loop.cli("apply", plan, "--inventory", loop.inventory, "--auto-approve",
                           "--bundles", bundles, "--bundle-public-key", public_key)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        for step in ("preflight/dc-lab", "node-baseline/dc-lab", "preflight/edge-shop", "node-baseline/edge-shop",
                     "model-sync/dc-lab/chat", "model-sync/edge-shop/shop-vision", "cloud-pools/aws-euc1"):
            assert step in applied.stdout
        for host in loop.hosts:
            assert "hybridctl.io/site" in node_config(host).read_text()
        assert (loop.onprem[0].root / "var/lib/hybridctl/models/chat/current").is_symlink()
        assert (loop.edge[0].root / "var/lib/hybridctl/models/shop-vision/current").is_symlink()
        assert not (loop.edge[0].root / "var/lib/hybridctl/models/chat").exists()  # only where it is placed
        inventory_file = (loop.state / "ansible" / "inventory.yml").read_text()
        assert "site_dc_lab" in inventory_file and loop.edge[0].address in inventory_file

        tampered = node_config(loop.onprem[1])
        tampered.write_text(tampered.read_text().replace("lab-h100", "hand-edited"))
        drifted = loop.cli("status", "--detailed-exitcode", "--format", "json")
        assert drifted.returncode == 2, drifted.stdout + drifted.stderr
        drift = {i["step"]: i for i in json.loads(drifted.stdout)["drift"]["items"]}
        assert drift["node-baseline/dc-lab"]["drifted"] is True
        assert list(drift["node-baseline/dc-lab"]["hosts"]) == ["lab-gpu-02"]  # only the edited host
        assert drift["node-baseline/edge-shop"]["drifted"] is False
        assert drift["cloud-pools/aws-euc1"]["drifted"] is False

        reapplied = loop.cli("apply", loop.inventory, "--auto-approve")  # a fresh apply converges again
        assert reapplied.returncode == 0, reapplied.stdout + reapplied.stderr
        assert "hand-edited" not in tampered.read_text()  # (the crash test checks a clean status exits 0)

        one_site = loop.cli("destroy", "--site", "edge-shop", "--auto-approve")
        assert one_site.returncode == 0, one_site.stdout + one_site.stderr
        state = loop.store().read()
        assert {d.site for d in state.deployed.values()} == {"dc-lab", "aws-euc1", None}
        assert state.applied_plan is not None  # the rest of the plan is still applied

        destroyed = loop.cli("destroy", "--auto-approve")
        assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
        assert "release/dc-lab" in destroyed.stdout and "keep their node configuration" in flat(destroyed.stdout)
        state = loop.store().read()
        assert state.deployed == {} and state.applied_plan is None
        assert sorted(c["stack"] for c in RecordingCloud(loop.state / "recording-cloud").calls()
                      if c["operation"] == "destroy") == ["loop-aws-euc1", "loop-ml-euc1"]
        assert journal_problems(loop.store().journal.records()) == []


class TestHostKeys:
    def test_an_unknown_host_key_is_refused_with_a_hint_never_accepted(self, loop: Loop) -> None:
        done = run_cli("apply", loop.inventory, "--auto-approve", "--skip-cloud", "--state", loop.state,
                       "--ssh-key", loop.lab.client_key_path, env=cli_env(), cwd=loop.root)
        assert done.returncode == 1, done.stdout + done.stderr
        text = flat(done.stdout)
        assert "unreachable" in text and "known_hosts" in text and "ssh-keyscan" in text
        assert (loop.state / "known_hosts").read_text() == ""  # the tool's own file, never filled in by itself
        assert not node_config(loop.onprem[0]).exists()


class TestCrash:
    def test_sigkill_during_the_ansible_step_then_apply_converges_without_redoing_finished_steps(
            self, loop: Loop) -> None:
        plan = loop.plan()
        args = ["apply", plan, "--inventory", loop.inventory, "--auto-approve", "--state", loop.state, *loop.ssh]
        apply = start_cli(*args, env=cli_env(), cwd=loop.root)
        journal = loop.store().journal

        def baseline_running() -> bool:
            started = any(r.event == JournalEvent.STEP_STARTED and r.step == "node-baseline/dc-lab"
                          for r in journal.records())
            return started and any("node.yml" in command_line(p) for p in psutil.Process(apply.pid).children(recursive=True))

        wait_for(baseline_running, "node.yml to run against the on-prem hosts")
        apply.send_signal(signal.SIGKILL)
        apply.communicate(timeout=60)
        assert apply.returncode == -signal.SIGKILL
        first = journal.records()
        done_before = {r.step for r in first if r.event == JournalEvent.STEP_DONE}
        assert "cloud-pools/aws-euc1" in done_before and "preflight/dc-lab" in done_before
        assert "node-baseline/dc-lab" not in done_before

        again = run_cli(*args, env=cli_env(), cwd=loop.root)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "recovered the state lock" in flat(again.stderr)
        assert "resuming the unfinished apply" in flat(again.stdout)
        second = journal.records()[len(first):]
        started_again = {r.step for r in second if r.event == JournalEvent.STEP_STARTED}
        assert "node-baseline/dc-lab" in started_again
        assert not done_before & started_again, f"finished steps ran again: {done_before & started_again}"
        assert sorted(loop.cloud_ups()) == ["loop-aws-euc1", "loop-ml-euc1"]  # each stack brought up once
        # The journal reads consistently: every record parses, numbers follow on, and every ended
        # step had started; the killed run's baseline shows started and never ended.
        assert journal_problems(journal.records()) == []
        killed_run = first[0].run
        assert [r.event for r in first if r.step == "node-baseline/dc-lab" and r.run == killed_run] == [
            JournalEvent.STEP_STARTED]
        state = loop.store().read()
        assert state.pending is None and state.serial == 1
        assert [r.status for r in state.history] == ["interrupted", "succeeded"]
        for host in loop.hosts:
            assert node_config(host).exists()
        assert loop.cli("status", "--detailed-exitcode").returncode == 0
