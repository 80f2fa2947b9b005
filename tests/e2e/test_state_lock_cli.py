"""The local state lock through the CLI: a deleted lock file under a running apply, the token kept
out of `status`, and what `status` says after the holder was killed."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from support.apply_cli import cli_env, run_cli, start_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.recording_cloud import RecordingCloud
from support.text import flat
from support.waiting import wait_for


class Lab:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.inventory = write_inventory(root / "inventory.yaml", hybrid_document())
        self.state = root / "state"

    def store(self) -> StateStore:
        return StateStore(self.state)

    def ups(self) -> list[str]:
        return [str(c["stack"]) for c in RecordingCloud(self.state / "recording-cloud").calls()
                if c["operation"] == "up"]

    def cli(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=cli_env(**env), cwd=self.root)

    def start_apply(self, **knobs: str) -> subprocess.Popen[str]:
        return start_cli("apply", self.inventory, "--state", self.state, "--auto-approve",
                         env=cli_env(**knobs), cwd=self.root)


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


def test_deleting_the_lock_file_under_a_running_apply_does_not_let_a_second_one_in(lab: Lab) -> None:
    release = lab.root / "release"  # the first apply's cloud steps wait for it: it runs until then
    first = lab.start_apply(HYBRIDCTL_RECORDING_CLOUD_HOLD=str(release))
    wait_for(lambda: lab.store().lock.holder() is not None, "the first apply to hold the lock", timeout_s=60)
    holder = lab.store().lock.holder()
    assert holder is not None
    status = lab.cli("status", "--state", lab.state, "--format", "json", "--no-drift")
    assert holder.token not in status.stdout  # the token would let a reader pose as the holder
    lock = json.loads(status.stdout)["lock"]
    assert lock["pid"] == first.pid and lock["alive"] is True and "token" not in lock

    (lab.state / "lock").unlink()
    second = lab.cli("apply", lab.inventory, "--state", lab.state, "--auto-approve")
    release.touch()
    assert second.returncode == 3, second.stdout + second.stderr
    # Refused either way: the holder may already have taken the new lock file back (at its next
    # journal record), or the second run finds the live holder's record. Never "recovered".
    assert f"pid {first.pid}" in flat(second.stderr) and "no longer running" not in flat(second.stderr)
    out, err = first.communicate(timeout=120)
    assert first.returncode == 0, out + err
    assert journal_problems(lab.store().journal.records()) == []
    state = lab.store().read()
    assert state.serial == 1 and [r.status for r in state.history] == ["succeeded"]
    assert sorted(lab.ups()) == ["loop-aws-euc1", "loop-ml-euc1"]  # applied once, not twice


def test_after_sigkill_status_says_interrupted_and_how_to_resume(lab: Lab) -> None:
    process = lab.start_apply(HYBRIDCTL_RECORDING_CLOUD_DELAY_S="1")
    journal = lab.store().journal
    wait_for(lambda: any(r.event == JournalEvent.STEP_STARTED for r in journal.records()), "a started step",
             timeout_s=60)
    process.send_signal(signal.SIGKILL)
    process.wait()
    shown = lab.cli("status", "--state", lab.state, "--no-drift")
    assert shown.returncode == 0, shown.stderr
    text = flat(shown.stdout)
    assert "held by" not in text and " running " not in text
    assert "interrupted" in text and f"pid {process.pid}" in text and "ended before the run did" in text
    assert f"hybridctl apply {lab.inventory} --state {lab.state}" in text
    doc = json.loads(lab.cli("status", "--state", lab.state, "--format", "json", "--no-drift").stdout)
    assert doc["lock"] is None and doc["last_run"]["status"] == "interrupted"
    assert doc["pending"]["resume"] == f"hybridctl apply {lab.inventory} --state {lab.state}"
    resumed = lab.cli("apply", lab.inventory, "--state", lab.state, "--auto-approve")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "recovered the state lock" in flat(resumed.stderr)
