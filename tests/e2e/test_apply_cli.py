"""`hybridctl apply / status / destroy` as subprocesses, against a real state directory and the
recording cloud double (HYBRIDCTL_CLOUD_DRIVER). The sites here have no hosts: the Ansible side
runs in test_apply_hosts.py against real SSH hosts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest
from hybridctl.core.plan.serialize import content_digest
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from support.apply_cli import StreamTail, cli_env, hybridctl_argv, run_cli, start_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.recording_cloud import RecordingCloud
from support.text import flat
from support.waiting import wait_for

POOLS_STACK, QUEUES_STACK = "loop-aws-euc1", "loop-ml-euc1"


class Lab:
    """A working directory with an inventory, a state dir and the recording cloud's files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.inventory = write_inventory(root / "inventory.yaml", hybrid_document())
        self.state = root / "state"
        self.plan = root / "plan.json"

    @property
    def cloud(self) -> RecordingCloud:
        return RecordingCloud(self.state / "recording-cloud")

    def ups(self) -> list[str]:
        return [c["stack"] for c in self.cloud.calls() if c["operation"] == "up"]  # type: ignore[misc]

    def store(self) -> StateStore:
        return StateStore(self.state)

    def cli(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=cli_env(**env), cwd=self.root)

    def apply(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return self.cli("apply", *args, "--state", self.state, **env)

    def make_plan(self) -> Path:
        done = self.cli("plan", self.inventory, "--out", self.plan)
        assert done.returncode == 0, done.stderr
        return self.plan

    def journal_is_consistent(self) -> None:
        assert journal_problems(self.store().journal.records()) == []


@pytest.fixture
def lab(tmp_path: Path) -> Lab:
    return Lab(tmp_path)


class TestLoop:
    def test_plan_apply_status_destroy(self, lab: Lab) -> None:
        plan = lab.make_plan()
        applied = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert "cloud-pools/aws-euc1" in flat(applied.stdout) and "apply succeeded" in flat(applied.stdout)
        assert sorted(lab.ups()) == [POOLS_STACK, QUEUES_STACK]
        assert "site dc-lab lists no hosts" in flat(applied.stdout)

        status = lab.cli("status", "--state", lab.state, "--format", "json", "--detailed-exitcode")
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert doc["serial"] == 1 and doc["applied"]["inventory"] == "loop" and doc["pending"] is None
        assert doc["last_run"]["status"] == "succeeded"
        sites = {s["site"]: s for s in doc["sites"]}
        assert [p["pool"] for p in sites["aws-euc1"]["pools"]] == ["euc1-p5"]
        assert sites["dc-lab"]["kind"] == "onprem" and sites["dc-lab"]["steps"] == []  # no hosts, nothing made
        assert sites["aws-euc1"]["steps"][0]["drift"]["drifted"] is False
        assert doc["drift"]["found"] is False

        (lab.cloud.root / "drift").mkdir(exist_ok=True)
        (lab.cloud.root / "drift" / POOLS_STACK).touch()  # someone changed the node group by hand
        drifted = lab.cli("status", "--state", lab.state, "--detailed-exitcode")
        assert drifted.returncode == 2, drifted.stdout + drifted.stderr
        assert "drifted" in flat(drifted.stdout) and "drift: found" in flat(drifted.stdout)
        assert lab.cli("status", "--state", lab.state).returncode == 0  # without --detailed-exitcode

        destroyed = lab.cli("destroy", "--state", lab.state, "--auto-approve")
        assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
        destroys = [c["stack"] for c in lab.cloud.calls() if c["operation"] == "destroy"]
        assert destroys == [QUEUES_STACK, POOLS_STACK]  # queues first: reverse dependency order
        doc = json.loads(lab.cli("status", "--state", lab.state, "--format", "json").stdout)
        assert doc["applied"] is None and doc["sites"] == [] and doc["serial"] == 2
        again = lab.cli("destroy", "--state", lab.state, "--auto-approve")
        assert again.returncode == 0 and "nothing to destroy" in flat(again.stdout)
        lab.journal_is_consistent()

    def test_apply_of_an_inventory_plans_first_and_state_env_is_honoured(self, lab: Lab) -> None:
        done = lab.cli("apply", lab.inventory, "--auto-approve", HYBRIDCTL_STATE=str(lab.state))
        assert done.returncode == 0, done.stderr
        assert "total:" in flat(done.stdout)  # the plan was shown before the steps
        assert lab.store().read().applied_plan_digest is not None
        # status reads the same state through the environment variable
        assert lab.cli("status", "--no-drift", HYBRIDCTL_STATE=str(lab.state)).returncode == 0

    def test_status_before_any_apply_refuses(self, lab: Lab) -> None:
        done = lab.cli("status", "--state", lab.state)
        assert done.returncode == 4 and "nothing has been applied" in flat(done.stderr)


class TestRefusals:
    def test_a_plan_file_needs_its_inventory(self, lab: Lab) -> None:
        done = lab.apply(lab.make_plan(), "--auto-approve")
        assert done.returncode == 2 and "needs --inventory" in flat(done.stderr)

    def test_an_edited_inventory_makes_the_plan_stale(self, lab: Lab) -> None:
        plan = lab.make_plan()
        document = hybrid_document()
        document["sites"][0]["pools"][0]["usd_per_gpu_hour"] = 1.3
        write_inventory(lab.inventory, document)
        done = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert done.returncode == 4, done.stdout + done.stderr
        assert "has changed since" in flat(done.stderr) and "hybridctl plan" in flat(done.stderr)
        assert lab.ups() == [] and not lab.store().exists()

    def test_a_plan_made_against_an_older_serial_is_stale(self, lab: Lab) -> None:
        plan = lab.make_plan()
        assert lab.apply(plan, "--inventory", lab.inventory, "--auto-approve").returncode == 0
        again = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert again.returncode == 4, again.stderr
        document = json.loads(plan.read_text())
        document["base_serial"] = 0  # as `plan --out` writes it once wired to the state
        plan.write_text(json.dumps({**document, "content_digest": content_digest(document)}))
        stale = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert stale.returncode == 4 and "state serial 0" in flat(stale.stderr) and "now at serial 1" in flat(stale.stderr)
        document["base_serial"] = 1
        plan.write_text(json.dumps({**document, "content_digest": content_digest(document)}))
        assert lab.apply(plan, "--inventory", lab.inventory, "--auto-approve").returncode == 0

    def test_no_terminal_and_no_auto_approve_refuses_instead_of_waiting(self, lab: Lab) -> None:
        done = lab.apply(lab.inventory)  # stdin is /dev/null
        assert done.returncode == 4 and "needs approval" in flat(done.stderr) and "--auto-approve" in flat(done.stderr)
        assert lab.ups() == [] and lab.store().read().serial == 0

    def test_without_the_pulumi_cli_cloud_steps_fail_up_front_unless_skipped(self, lab: Lab) -> None:
        env = cli_env(recording_cloud=False, PATH=os.path.dirname(os.sys.executable))  # type: ignore[attr-defined]
        done = run_cli("apply", lab.inventory, "--state", lab.state, "--auto-approve", env=env, cwd=lab.root)
        assert done.returncode == 2, done.stdout + done.stderr
        assert "pulumi CLI is not installed" in flat(done.stderr) and "get.pulumi.com" in flat(done.stderr)
        assert "--skip-cloud" in flat(done.stderr) and lab.store().read().serial == 0
        skipped = run_cli("apply", lab.inventory, "--state", lab.state, "--auto-approve", "--skip-cloud",
                          env=env, cwd=lab.root)
        assert skipped.returncode == 0, skipped.stdout + skipped.stderr
        assert "skipping 2 cloud step(s) (--skip-cloud)" in flat(skipped.stderr)
        status = json.loads(run_cli("status", "--state", lab.state, "--format", "json", env=env).stdout)
        assert status["drift"] is None or status["drift"]["items"] == []
        records = lab.store().journal.records()
        assert sum(r.event == JournalEvent.STEP_SKIPPED for r in records) == 2


class TestTerminal:
    def test_on_a_terminal_apply_asks_and_a_no_changes_nothing(self, lab: Lab) -> None:
        import pexpect

        argv = hybridctl_argv("apply", lab.inventory, "--state", lab.state)
        child = pexpect.spawn(argv[0], argv[1:], env=cli_env(), cwd=str(lab.root), encoding="utf-8", timeout=120,
                              dimensions=(50, 160))
        child.expect("Apply these steps")
        child.sendline("n")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 4 and "not approved" in flat(child.before or "")
        assert lab.ups() == [] and lab.store().read().serial == 0

    def test_on_a_terminal_a_yes_applies_with_live_progress(self, lab: Lab) -> None:
        import pexpect

        argv = hybridctl_argv("apply", lab.inventory, "--state", lab.state)
        child = pexpect.spawn(argv[0], argv[1:], env={**cli_env(), "TERM": "xterm"}, cwd=str(lab.root),
                              encoding="utf-8", timeout=120, dimensions=(50, 160))
        child.expect("Apply these steps")
        child.sendline("y")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0, child.before
        assert sorted(lab.ups()) == [POOLS_STACK, QUEUES_STACK]


class TestFailureAndResume:
    def test_a_failed_step_stops_its_dependents_and_a_rerun_resumes(self, lab: Lab) -> None:
        plan = lab.make_plan()
        failed = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve",
                           HYBRIDCTL_RECORDING_CLOUD_FAIL=POOLS_STACK)
        assert failed.returncode == 1, failed.stdout + failed.stderr
        assert "injected failure" in flat(failed.stdout)
        assert "not started: waits on cloud-pools/aws-euc1" in flat(failed.stdout)
        assert "not done: cloud-pools/aws-euc1, cluster-queues/ml-euc1" in flat(failed.stdout)
        state = lab.store().read()
        assert state.pending is not None and state.serial == 0 and state.applied_plan is None
        resumed = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "resuming the unfinished apply" in flat(resumed.stdout)
        assert lab.ups() == [POOLS_STACK, POOLS_STACK, QUEUES_STACK]
        assert lab.store().read().pending is None
        lab.journal_is_consistent()

    def test_ctrl_c_stops_cleanly_and_the_next_apply_resumes(self, lab: Lab) -> None:
        plan = lab.make_plan()
        env = cli_env(HYBRIDCTL_RECORDING_CLOUD_DELAY_S="3")
        process = start_cli("apply", plan, "--inventory", lab.inventory, "--state", lab.state, "--auto-approve",
                            env=env, cwd=lab.root)
        journal = lab.store().journal
        wait_for(lambda: any(r.event == JournalEvent.STEP_STARTED for r in journal.records()), "the first step", timeout_s=60)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=120)
        assert process.returncode == 130, out + err
        assert "interrupted" in out and "run `hybridctl apply` again to resume" in out
        lab.journal_is_consistent()
        records = journal.records()
        assert records[-1].event == JournalEvent.RUN_FINISHED and records[-1].summary == "interrupted"
        finished_first = {r.step for r in records if r.event == JournalEvent.STEP_DONE}
        assert lab.store().lock.holder() is None  # the lock was released
        resumed = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        second_run = lab.store().journal.records()[len(records):]
        started_again = {r.step for r in second_run if r.event == JournalEvent.STEP_STARTED}
        assert not finished_first & started_again
        assert sorted(set(lab.ups())) == [POOLS_STACK, QUEUES_STACK]


class TestConcurrency:
    def test_a_second_apply_fails_cleanly_naming_the_holder(self, lab: Lab) -> None:
        plan = lab.make_plan()
        release = lab.root / "release"  # the first apply's cloud steps wait for it: it holds the lock till then
        env = cli_env(HYBRIDCTL_RECORDING_CLOUD_HOLD=str(release))
        first = start_cli("apply", plan, "--inventory", lab.inventory, "--state", lab.state, "--auto-approve",
                          env=env, cwd=lab.root)
        try:
            wait_for(lambda: lab.store().lock.holder() is not None, "the first apply to hold the lock", timeout_s=60)
            holder = lab.store().lock.holder()
            assert holder is not None
            second = lab.apply(plan, "--inventory", lab.inventory, "--auto-approve")
        finally:
            release.touch()
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"pid {first.pid}" in flat(second.stderr) and holder.host in flat(second.stderr)
        assert holder.started_at in flat(second.stderr) and "--lock-timeout" in flat(second.stderr)
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err
        state = lab.store().read()
        assert state.serial == 1 and state.pending is None
        lab.journal_is_consistent()

    def test_with_lock_timeout_the_second_apply_waits_its_turn(self, lab: Lab) -> None:
        release = lab.root / "release"  # the first apply holds the lock until the second is seen waiting
        first = start_cli("apply", lab.inventory, "--state", lab.state, "--auto-approve",
                          env=cli_env(HYBRIDCTL_RECORDING_CLOUD_HOLD=str(release)), cwd=lab.root)
        try:
            wait_for(lambda: lab.store().lock.holder() is not None, "the first apply to hold the lock", timeout_s=60)
            second = start_cli("apply", lab.inventory, "--state", lab.state, "--auto-approve", "--lock-timeout", "2m",
                               env=cli_env(), cwd=lab.root)
            assert second.stderr is not None
            errors = StreamTail(second.stderr)
            wait_for(lambda: "waiting up to 120s" in flat(errors.text()), "the second apply to wait", timeout_s=60)
        finally:
            release.touch()
        assert first.wait(timeout=120) == 0
        assert second.stdout is not None
        out = second.stdout.read()  # its stderr is the tail's
        assert second.wait(timeout=120) == 0, out + errors.finish()
        state = lab.store().read()
        assert state.serial == 2 and [r.status for r in state.history] == ["succeeded", "succeeded"]
        lab.journal_is_consistent()


class TestPowerCut:
    def test_killed_while_writing_the_state_the_previous_state_stays_readable(self, lab: Lab) -> None:
        assert lab.apply(lab.inventory, "--auto-approve").returncode == 0
        before = lab.store().read()
        killed = lab.apply(lab.inventory, "--auto-approve", HYBRIDCTL_TEST_KILL_BEFORE_RENAME="state.json")
        assert killed.returncode == -signal.SIGKILL
        after = lab.store().read()  # neither torn nor half-new
        assert after == before
        resumed = lab.apply(lab.inventory, "--auto-approve")
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        assert "recovered the state lock" in flat(resumed.stderr) and "no longer running" in flat(resumed.stderr)
        assert lab.store().read().serial == before.serial + 1
        assert not list(lab.state.glob(".*.tmp"))
        lab.journal_is_consistent()
