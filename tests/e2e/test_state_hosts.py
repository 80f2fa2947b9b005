"""The shared PostgreSQL state against real SSH test hosts: SIGKILL during the Ansible step, then
`status` explains, the next apply cleans up what the dead run left (ssh ControlPersist masters
and their /tmp/hctl-cp-* directories) and resumes without redoing finished steps."""

from __future__ import annotations

import signal
import tempfile
import uuid
from pathlib import Path

import psutil
import pytest
from hosts.fake_gpu import FakeGpus
from hosts.lab import HostLab
from hybridctl.drivers.lockholder import CONTROL_DIR_PREFIX, CONTROL_TOKEN_CHARS
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems, open_state
from support.apply_cli import cli_env, run_cli, start_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.pgserver import PgServer
from support.processes import command_line
from support.text import flat
from support.waiting import wait_for

pytestmark = [pytest.mark.hosts, pytest.mark.slow]




def _control_dirs(token: str) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"{CONTROL_DIR_PREFIX}{token[:CONTROL_TOKEN_CHARS]}-*"))


def test_sigkill_mid_ansible_on_the_shared_state_then_status_cleanup_and_resume(
        server: PgServer, host_lab: HostLab, tmp_path: Path) -> None:
    onprem = host_lab.start(2, names=["lab-gpu-01", "lab-gpu-02"], gpus={"lab-gpu-01": 4, "lab-gpu-02": 4})
    edge = host_lab.start(1, names=["shop-01"], gpus={"shop-01": FakeGpus(1)})
    inventory = write_inventory(tmp_path / "inventory.yaml", hybrid_document(
        [{"name": h.name, "address": h.address} for h in onprem], [{"name": h.name, "address": h.address} for h in edge]))
    url = server.url(environment=f"h{uuid.uuid4().hex[:10]}")
    env = cli_env(HYBRIDCTL_WORK_DIR=str(tmp_path / "work"), HYBRIDCTL_RECORDING_CLOUD_DIR=str(tmp_path / "cloud"))
    args = ["apply", inventory, "--auto-approve", "--state", url, "--known-hosts", str(host_lab.known_hosts_path),
            "--ssh-key", str(host_lab.client_key_path)]
    store: StateStore = open_state(url)
    apply = start_cli(*args, env=env, cwd=tmp_path)

    def baseline_running() -> bool:
        started = any(r.event == JournalEvent.STEP_STARTED and r.step == "node-baseline/dc-lab"
                      for r in store.journal.records())
        return started and any("node.yml" in command_line(p) for p in psutil.Process(apply.pid).children(recursive=True))

    wait_for(baseline_running, "node.yml to run against the on-prem hosts")
    holder = store.lock.holder()
    assert holder is not None and holder.pid == apply.pid
    wait_for(lambda: bool(_control_dirs(holder.token)), "the run's ssh control directory")
    apply.send_signal(signal.SIGKILL)
    apply.communicate(timeout=60)
    dead_dirs = _control_dirs(holder.token)
    assert dead_dirs  # the killed run's ssh control directories are still there
    first = store.journal.records()
    done_before = {r.step for r in first if r.event == JournalEvent.STEP_DONE}

    shown = run_cli("status", "--state", url, "--no-drift", env=env, cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "interrupted" in flat(shown.stdout) and "held by" not in flat(shown.stdout)
    # a complete command: the URL quoted for the shell (its `&` would end the command)
    assert f"hybridctl apply {inventory} --state 'postgresql://" in flat(shown.stdout)

    again = run_cli(*args, env=env, cwd=tmp_path)
    assert again.returncode == 0, again.stdout + again.stderr
    assert "recovered the state lock" in flat(again.stderr)
    assert not any(d.exists() for d in dead_dirs), "the dead run's ssh control directories are left behind"
    leftover = [p for p in psutil.process_iter() if any(str(d) in command_line(p) for d in dead_dirs)]
    assert leftover == [], "the dead run's ssh ControlPersist masters still run"
    second = store.journal.records()[len(first):]
    assert not done_before & {r.step for r in second if r.event == JournalEvent.STEP_STARTED}
    assert journal_problems(store.journal.records()) == []
    state = store.read()
    assert state.pending is None and state.serial == 1
    assert [r.status for r in state.history] == ["interrupted", "succeeded"]
