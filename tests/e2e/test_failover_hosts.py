"""A real failover against the SSH test hosts (tests/hosts): an on-prem site of two hosts and an edge
site of one. The edge's link is cut; `failover link-down --execute` moves what needs the link to the
on-prem hosts and syncs its model bundle there; the rollback returns; a killed runbook resumes."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import psutil
import pytest
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab, TestHost
from hybridctl.drivers.bundle import create_bundle, generate_keypair, sign_bundle
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from support.apply_cli import cli_env, write_inventory
from support.processes import command_line
from support.text import flat
from support.waiting import wait_for

pytestmark = [pytest.mark.hosts, pytest.mark.slow]

_BOOT = ("import sys; import hybridctl.commands.apply_cmds, hybridctl.commands.failover_cmds; "
         "from hybridctl.commands.app import run; sys.argv[0] = 'hybridctl'; run()")
MODELS = "var/lib/hybridctl/models"
L4 = "NVIDIA L4"  # what nvidia-smi reports: the catalog's product name


def argv(*args: str | Path) -> list[str]:
    import sys

    return [sys.executable, "-c", _BOOT, *map(str, args)]


def document(onprem: list[TestHost], edge: list[TestHost]) -> dict[str, Any]:
    """`recs` serves from the edge (cheapest) but reads the catalog from dc-lab: it needs the link.
    `shelf` is local to the edge: it keeps serving without one. `chat` runs on-prem."""
    def hosts(items: list[TestHost], pool: str) -> list[dict[str, str]]:
        return [{"name": h.name, "address": h.address, "pool": pool} for h in items]

    def serve(name: str, **extra: Any) -> dict[str, Any]:
        return {"name": name, "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1}, "model_gb": 0.001,
                **extra}

    return {
        "version": 1, "name": "shop", "regions": ["eu-users"],
        "sites": [
            {"name": "dc-lab", "kind": "onprem", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 10}, "uplink_mbps": 10000, "hosts": hosts(onprem, "lab-l4"),
             "pools": [{"name": "lab-l4", "gpu": "L4", "gpus": 4, "capacity_type": "reserved", "usd_per_gpu_hour": 1.0}]},
            {"name": "edge-shop", "kind": "edge", "jurisdiction": "EU", "egress_usd_per_gb": 0.0,
             "latency_ms": {"eu-users": 3}, "uplink_mbps": 100, "hosts": hosts(edge, "shop-l4"),
             "pools": [{"name": "shop-l4", "gpu": "L4", "gpus": 2, "capacity_type": "reserved", "usd_per_gpu_hour": 0.5}]},
        ],
        "datasets": [{"name": "catalog", "site": "dc-lab", "size_gb": 1, "sensitivity": "internal"}],
        "workloads": [serve("chat", replicas=2, sites=["dc-lab"]), serve("shelf", sites=["edge-shop"]),
                      serve("recs", datasets=["catalog"], rto_minutes=15)],
    }


class Shop:
    def __init__(self, lab: HostLab, root: Path) -> None:
        self.lab = lab
        self.root = root
        self.onprem = lab.start(2, names=["lab-01", "lab-02"], gpus={"lab-01": FakeGpus(2, model=L4),
                                                                     "lab-02": FakeGpus(2, model=L4)})
        self.edge = lab.start(1, names=["shop-01"], gpus={"shop-01": FakeGpus(2, model=L4)})
        self.inventory = write_inventory(root / "inventory.yaml", document(self.onprem, self.edge))
        self.state = root / "state"
        self.ssh = ["--known-hosts", str(lab.known_hosts_path), "--ssh-key", str(lab.client_key_path)]
        self.bundles, self.public_key = self._bundles()
        self.with_bundles = ["--bundles", str(self.bundles), "--bundle-public-key", str(self.public_key)]

    def _bundles(self) -> tuple[Path, Path]:
        keys = self.root / "keys"
        generate_keypair(keys / "signing.pem", keys / "signing.pub.pem")
        for workload in ("chat", "shelf", "recs"):
            target = self.root / "bundles" / workload
            target.mkdir(parents=True)
            (target / "weights.bin").write_bytes(workload.encode() * 1000)
            create_bundle(target, model=workload, version="2026.05.1", source_commit="abc123")
            sign_bundle(target, keys / "signing.pem")
        return self.root / "bundles", keys / "signing.pub.pem"

    def cli(self, *args: str | Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv(*args, "--state", self.state, *self.ssh), env=cli_env(), cwd=self.root,
                              capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, check=False)

    def start(self, *args: str | Path) -> subprocess.Popen[str]:
        return subprocess.Popen(argv(*args, "--state", self.state, *self.ssh), env=cli_env(), cwd=self.root,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)

    def store(self) -> StateStore:
        return StateStore(self.state)

    def applied(self) -> dict[tuple[str, str], int]:
        plan = self.store().read().applied_plan
        assert plan is not None
        return {(p["workload"], p["pool"]): p["replicas"] for p in plan["placements"]}

    def apply(self) -> None:
        done = self.cli("apply", self.inventory, "--auto-approve", *self.with_bundles)
        assert done.returncode == 0, done.stdout + done.stderr


def model(host: TestHost, workload: str) -> Path:
    return host.root / MODELS / workload / "current"


def snapshot(hosts: list[TestHost]) -> dict[str, bytes]:
    """Every file hybridctl manages on these hosts, with its bytes (symlinks by target)."""
    files: dict[str, bytes] = {}
    for host in hosts:
        for base in ("etc/hybridctl", MODELS):
            root = host.root / base
            for path in sorted(root.rglob("*")) if root.exists() else []:
                key = f"{host.name}:{path.relative_to(host.root)}"
                if path.is_symlink():
                    files[key] = str(path.readlink()).encode()
                elif path.is_file():
                    files[key] = path.read_bytes()
    return files


@pytest.fixture
def shop(host_lab: HostLab, tmp_path: Path) -> Shop:
    shop = Shop(host_lab, tmp_path)
    shop.apply()
    assert shop.applied() == {("chat", "lab-l4"): 2, ("recs", "shop-l4"): 1, ("shelf", "shop-l4"): 1}
    assert model(shop.edge[0], "recs").is_symlink() and not model(shop.onprem[0], "recs").exists()
    return shop


class TestLinkDownFailover:
    def test_failover_moves_what_needs_the_link_then_rollback_returns(self, shop: Shop) -> None:
        edge_before = snapshot(shop.edge)
        chat_before = {h.name: model(h, "chat").readlink() for h in shop.onprem}
        shop.edge[0].link_down()

        done = shop.cli("failover", "link-down", "edge-shop", "--execute", "--auto-approve", "--manual-steps-done", *shop.with_bundles)
        assert done.returncode == 0, done.stdout + done.stderr
        out = flat(done.stdout)
        # the dead host is reported: its site's steps are deferred, naming it
        assert "link-down edge-shop: nothing can be shipped to it (hosts: shop-01)" in out
        assert "model-sync/dc-lab/recs" in out and "runbook succeeded" in out
        assert shop.applied() == {("chat", "lab-l4"): 2, ("recs", "lab-l4"): 1, ("shelf", "shop-l4"): 1}
        for host in shop.onprem:  # recs's bundle went to the receiving hosts, verified and activated
            assert model(host, "recs").is_symlink()
            assert (model(host, "recs") / "weights.bin").read_bytes() == b"recs" * 1000
        # nothing else changed: the edge still serves shelf (and keeps recs's files), chat is untouched
        assert snapshot(shop.edge) == edge_before
        assert {h.name: model(h, "chat").readlink() for h in shop.onprem} == chat_before
        records = shop.store().journal.records()
        runbook_runs = {r.run for r in records if r.event == JournalEvent.RUN_STARTED and r.summary == "runbook"}
        ran = [r.step or "" for r in records if r.run in runbook_runs and r.event == JournalEvent.STEP_STARTED]
        assert not [s for s in ran if s.split("/")[0] in ("preflight", "node-baseline", "model-sync")
                    and s.split("/")[1] == "edge-shop"], ran

        shop.edge[0].link_up()
        back = shop.cli("runbook", "rollback", "--auto-approve", *shop.with_bundles)
        assert back.returncode == 0, back.stdout + back.stderr
        assert "preflight/edge-shop" in back.stdout  # the site is checked before anything goes back
        assert shop.applied() == {("chat", "lab-l4"): 2, ("recs", "shop-l4"): 1, ("shelf", "shop-l4"): 1}
        assert model(shop.edge[0], "recs").is_symlink()
        state = shop.store().read()
        assert state.pending is None and [r.operation for r in state.history] == ["apply", "runbook", "runbook"]
        assert journal_problems(shop.store().journal.records()) == []

    def test_a_runbook_killed_halfway_resumes(self, shop: Shop) -> None:
        shop.edge[0].link_down()
        runbook = shop.start("failover", "link-down", "edge-shop", "--execute", "--auto-approve", "--manual-steps-done", *shop.with_bundles)
        journal = shop.store().journal
        wait_for(lambda: _model_sync_running(shop, runbook), "the runbook to reach its model sync")
        runbook.send_signal(signal.SIGKILL)
        runbook.communicate(timeout=60)
        first = journal.records()
        killed = {r.run for r in first if r.event == JournalEvent.RUN_STARTED and r.summary == "runbook"}
        done_before = {r.step for r in first if r.event == JournalEvent.STEP_DONE and r.run in killed}
        assert {"confirm/contain", "manual/link-down/edge-shop", "node-baseline/dc-lab"} <= done_before
        assert shop.store().read().pending is not None

        resumed = shop.cli("runbook", "resume", "--auto-approve", *shop.with_bundles)  # its model sync: verified again
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        second = journal.records()[len(first):]
        started_again = {r.step for r in second if r.event == JournalEvent.STEP_STARTED}
        assert "model-sync/dc-lab/recs" in started_again
        assert not done_before & started_again, f"finished steps ran again: {done_before & started_again}"
        assert shop.applied() == {("chat", "lab-l4"): 2, ("recs", "lab-l4"): 1, ("shelf", "shop-l4"): 1}
        assert all(model(h, "recs").is_symlink() for h in shop.onprem)
        assert journal_problems(journal.records()) == []
        shown = subprocess.run(argv("runbook", "show", "--format", "json", "--state", shop.state), env=cli_env(),
                               capture_output=True, text=True, timeout=60, check=False)
        assert json.loads(shown.stdout)["events"] == ["link-down edge-shop"], shown.stderr


class TestSiteLostDuringModelSync:
    def test_the_receiving_site_is_lost_while_its_model_sync_runs_then_resume_then_rollback(self, shop: Shop) -> None:
        original = shop.applied()
        shop.edge[0].link_down()
        runbook = shop.start("failover", "link-down", "edge-shop", "--execute", "--auto-approve", "--manual-steps-done", *shop.with_bundles)
        journal = shop.store().journal
        wait_for(lambda: _model_sync_running(shop, runbook), "the runbook to reach its model sync")
        for host in shop.onprem:  # dc-lab, the site receiving recs, goes dark in the middle of the sync
            host.link_down()
        runbook.send_signal(signal.SIGTERM)  # the operator stops the runbook: its running step is asked to stop
        runbook.communicate(timeout=300)
        assert runbook.returncode in (1, 130), runbook.returncode
        first = journal.records()
        done_before = {r.step for r in first if r.event == JournalEvent.STEP_DONE}
        assert "model-sync/dc-lab/recs" not in done_before and "node-baseline/dc-lab" in done_before
        pending = shop.store().read().pending
        assert pending is not None and pending.operation == "runbook"
        assert shop.applied() == original  # an unfinished runbook changes nothing the state calls applied

        for host in shop.onprem:
            host.link_up()
        resumed = shop.cli("runbook", "resume", "--auto-approve", *shop.with_bundles)  # its model sync: verified again
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        second = journal.records()[len(first):]
        started_again = {r.step for r in second if r.event == JournalEvent.STEP_STARTED}
        assert "model-sync/dc-lab/recs" in started_again
        assert not {s for s in done_before if s and s.startswith(("preflight/", "node-baseline/"))} & started_again
        assert shop.applied() == {("chat", "lab-l4"): 2, ("recs", "lab-l4"): 1, ("shelf", "shop-l4"): 1}
        for host in shop.onprem:
            assert (model(host, "recs") / "weights.bin").read_bytes() == b"recs" * 1000

        shop.edge[0].link_up()
        back = shop.cli("runbook", "rollback", "--auto-approve", *shop.with_bundles)
        assert back.returncode == 0, back.stdout + back.stderr
        assert shop.applied() == original
        assert shop.store().read().pending is None
        assert journal_problems(journal.records()) == []


def _model_sync_running(shop: Shop, runbook: subprocess.Popen[str]) -> bool:
    """The runbook has started model-sync/dc-lab/recs and its ansible-playbook is running."""
    started = any(r.event == JournalEvent.STEP_STARTED and r.step == "model-sync/dc-lab/recs"
                  for r in shop.store().journal.records())
    try:
        children = psutil.Process(runbook.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    return started and any("model-sync.yml" in command_line(p) for p in children)


