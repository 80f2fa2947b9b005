"""`hybridctl` with `--state postgresql://…`, as subprocesses, against a private PostgreSQL server
(tests/support/pgserver.py) and the recording cloud double: the same loop as the local backend's
tests, plus what a shared database adds (concurrent clients, a killed holder, a server restart,
credentials, migration)."""

from __future__ import annotations

import json
import signal
import subprocess
import uuid
from pathlib import Path

import pytest
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems, open_state
from support.apply_cli import StreamTail, cli_env, run_cli, start_cli, write_inventory
from support.apply_inventories import hybrid_document
from support.pgserver import PASSWORD, PgServer
from support.recording_cloud import RecordingCloud
from support.text import flat
from support.waiting import wait_for

POOLS_STACK, QUEUES_STACK = "loop-aws-euc1", "loop-ml-euc1"


class Lab:
    """An inventory, a database environment of its own, and this machine's working directory."""

    def __init__(self, root: Path, server: PgServer) -> None:
        self.root = root
        self.server = server
        self.inventory = write_inventory(root / "inventory.yaml", hybrid_document())
        self.environment = f"e{uuid.uuid4().hex[:10]}"
        self.url = server.url(environment=self.environment)
        self.plan = root / "plan.json"
        self.cloud_dir = root / "cloud"

    @property
    def cloud(self) -> RecordingCloud:
        return RecordingCloud(self.cloud_dir)

    def ups(self) -> list[str]:
        return [str(c["stack"]) for c in self.cloud.calls() if c["operation"] == "up"]

    def store(self) -> StateStore:
        return open_state(self.url)

    def env(self, **extra: str) -> dict[str, str]:
        return cli_env(**{"HYBRIDCTL_WORK_DIR": str(self.root / "work"),
                          "HYBRIDCTL_RECORDING_CLOUD_DIR": str(self.cloud_dir), **extra})

    def cli(self, *args: str | Path, **env: str) -> subprocess.CompletedProcess[str]:
        return run_cli(*args, env=self.env(**env), cwd=self.root)

    def start(self, *args: str | Path, **env: str) -> subprocess.Popen[str]:
        return start_cli(*args, env=self.env(**env), cwd=self.root)

    def make_plan(self) -> Path:
        done = self.cli("plan", self.inventory, "--out", self.plan, "--state", self.url)
        assert done.returncode == 0, done.stderr
        return self.plan

    def apply_args(self) -> list[str | Path]:
        return ["apply", self.plan, "--inventory", self.inventory, "--state", self.url, "--auto-approve"]

    def journal_is_consistent(self) -> None:
        assert journal_problems(self.store().journal.records()) == []


@pytest.fixture
def lab(tmp_path: Path, server: PgServer) -> Lab:
    return Lab(tmp_path, server)


class TestLoop:
    def test_plan_apply_status_failover_destroy(self, lab: Lab) -> None:
        lab.make_plan()
        applied = lab.cli(*lab.apply_args())
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert sorted(lab.ups()) == [POOLS_STACK, QUEUES_STACK]
        assert PASSWORD not in applied.stdout + applied.stderr

        status = lab.cli("status", "--state", lab.url, "--format", "json", "--detailed-exitcode")
        assert status.returncode == 0, status.stderr
        doc = json.loads(status.stdout)
        assert doc["serial"] == 1 and doc["pending"] is None and doc["last_run"]["status"] == "succeeded"
        assert doc["state_dir"].startswith("postgresql://postgres@/hybridctl") and lab.environment in doc["state_dir"]
        assert PASSWORD not in status.stdout and doc["lock"] is None
        # the state is in the database: nothing of it on this machine but the working files
        assert not list(lab.root.rglob("state.json")) and not list(lab.root.rglob("journal.jsonl"))

        failover = lab.cli("failover", "site-lost", "aws-euc1", "--execute", "--auto-approve", "--manual-steps-done", "--state", lab.url)
        assert failover.returncode in (0, 1), failover.stdout + failover.stderr
        assert lab.store().read().last_run.operation == "runbook"  # type: ignore[union-attr]
        # another operator, on another machine (another working directory), sees the failover and rolls it back
        elsewhere = str(lab.root / "other-machine")
        shown = lab.cli("runbook", "show", "--state", lab.url, "--format", "json", HYBRIDCTL_WORK_DIR=elsewhere)
        assert shown.returncode == 0, shown.stderr
        assert json.loads(shown.stdout)["events"] == ["site-lost aws-euc1"]
        rolled_back = lab.cli("runbook", "rollback", "--auto-approve", "--state", lab.url,
                              HYBRIDCTL_WORK_DIR=elsewhere)
        assert rolled_back.returncode == 0, rolled_back.stdout + rolled_back.stderr
        assert not list((lab.root / "work").rglob("runbooks"))  # kept in the database, not on a laptop

        destroyed = lab.cli("destroy", "--state", lab.url, "--auto-approve")
        assert destroyed.returncode == 0, destroyed.stdout + destroyed.stderr
        doc = json.loads(lab.cli("status", "--state", lab.url, "--format", "json").stdout)
        assert doc["applied"] is None and doc["sites"] == []
        lab.journal_is_consistent()

    def test_the_state_url_can_come_from_the_environment(self, lab: Lab) -> None:
        done = lab.cli("apply", lab.inventory, "--auto-approve", HYBRIDCTL_STATE=lab.url)
        assert done.returncode == 0, done.stdout + done.stderr
        assert lab.store().read().serial == 1
        assert lab.cli("status", "--no-drift", HYBRIDCTL_STATE=lab.url).returncode == 0


class TestSharing:
    def test_two_applies_one_exits_3_naming_the_holder_and_nothing_is_corrupted(self, lab: Lab) -> None:
        lab.make_plan()
        release = lab.root / "release"  # the first apply's cloud steps wait for it: it holds the lock till then
        first = lab.start(*lab.apply_args(), HYBRIDCTL_RECORDING_CLOUD_HOLD=str(release))
        try:
            wait_for(lambda: lab.store().lock.holder() is not None, "the first apply to hold the lock", timeout_s=60)
            second = lab.cli(*lab.apply_args())
        finally:
            release.touch()
        assert second.returncode == 3, second.stdout + second.stderr
        assert f"pid {first.pid}" in flat(second.stderr) and "--lock-timeout" in flat(second.stderr)
        out, err = first.communicate(timeout=120)
        assert first.returncode == 0, out + err
        state = lab.store().read()
        assert state.serial == 1 and state.pending is None
        lab.journal_is_consistent()

    def test_with_lock_timeout_the_second_waits_its_turn(self, lab: Lab) -> None:
        release = lab.root / "release"  # the first apply holds the lock until the second is seen waiting
        first = lab.start("apply", lab.inventory, "--state", lab.url, "--auto-approve",
                          HYBRIDCTL_RECORDING_CLOUD_HOLD=str(release))
        try:
            wait_for(lambda: lab.store().lock.holder() is not None, "the first apply to hold the lock", timeout_s=60)
            second = lab.start("apply", lab.inventory, "--state", lab.url, "--auto-approve", "--lock-timeout", "2m")
            assert second.stderr is not None and second.stdout is not None
            errors = StreamTail(second.stderr)
            wait_for(lambda: "waiting up to 120s" in flat(errors.text()), "the second apply to wait", timeout_s=60)
        finally:
            release.touch()
        assert first.wait(timeout=120) == 0
        out = second.stdout.read()  # its stderr is the tail's
        assert second.wait(timeout=120) == 0, out + errors.finish()
        assert lab.store().read().serial == 2
        lab.journal_is_consistent()

    def test_a_plan_made_against_an_older_serial_is_refused_with_exit_4(self, lab: Lab) -> None:
        lab.make_plan()
        assert lab.cli(*lab.apply_args()).returncode == 0
        stale = lab.cli(*lab.apply_args())
        assert stale.returncode == 4 and "is stale" in flat(stale.stderr), stale.stderr


class TestCrashes:
    def test_sigkill_of_the_holder_frees_the_lock_and_the_next_run_resumes(self, lab: Lab) -> None:
        lab.make_plan()
        process = lab.start(*lab.apply_args(), HYBRIDCTL_RECORDING_CLOUD_DELAY_S="1")
        journal = lab.store().journal
        wait_for(lambda: any(r.event == JournalEvent.STEP_DONE for r in journal.records()), "a finished step",
                 timeout_s=60)
        process.send_signal(signal.SIGKILL)
        process.wait()
        done_before = {r.step for r in journal.records() if r.event == JournalEvent.STEP_DONE}
        # free once the server saw the connection end (the holder's row stays, for status to explain): nothing
        # else frees it (no lease expires), so the wait's bound is generous for a loaded machine, not a measure
        wait_for(lambda: lab.store().lock.holder_status()[1] is False, "the lock to be released", timeout_s=120)

        status = lab.cli("status", "--state", lab.url, "--no-drift")
        assert status.returncode == 0, status.stderr
        text = flat(status.stdout)
        assert "interrupted" in text and "held by" not in text and "resumable" in text
        # quoted for a shell: the URL holds `&` and `?` (issue 46: every hint is a command that runs)
        assert f"hybridctl apply {lab.plan} --state 'postgresql://" in text
        resumed = lab.cli(*lab.apply_args())
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        second_run = [r for r in journal.records() if r.run == lab.store().read().history[-1].run_id]
        assert not done_before & {r.step for r in second_run if r.event == JournalEvent.STEP_STARTED}
        assert lab.ups().count(POOLS_STACK) == 1
        lab.journal_is_consistent()

    def test_a_server_restart_mid_run_fails_cleanly_and_the_resume_converges(self, lab: Lab) -> None:
        lab.make_plan()
        process = lab.start(*lab.apply_args(), HYBRIDCTL_RECORDING_CLOUD_DELAY_S="2")
        journal = lab.store().journal
        wait_for(lambda: any(r.event == JournalEvent.STEP_STARTED for r in journal.records()), "a started step",
                 timeout_s=60)
        lab.server.restart()
        out, err = process.communicate(timeout=120)
        assert process.returncode == 2, out + err
        assert "lost the state database" in flat(err) and "run the same command again" in flat(err)
        assert "internal error" not in err and PASSWORD not in out + err
        resumed = lab.cli(*lab.apply_args())
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        state = lab.store().read()
        assert state.serial == 1 and state.pending is None
        assert sorted(set(lab.ups())) == [POOLS_STACK, QUEUES_STACK]
        lab.journal_is_consistent()


class TestConnection:
    def test_wrong_credentials_exit_2_without_showing_the_password(self, lab: Lab) -> None:
        done = lab.cli("status", "--state", lab.server.url(password="not-the-password-42"))
        assert done.returncode == 2, done.stdout + done.stderr
        assert "cannot connect to the state database" in flat(done.stderr)
        assert "not-the-password-42" not in done.stdout + done.stderr and "Traceback" not in done.stderr

    def test_an_unreachable_server_exits_2(self, lab: Lab, tmp_path: Path) -> None:
        done = lab.cli("apply", lab.inventory, "--auto-approve", "--state",
                       f"postgresql://postgres@/hybridctl?host={tmp_path}&environment=x")
        assert done.returncode == 2, done.stdout + done.stderr
        assert "cannot connect to the state database" in flat(done.stderr)


class TestMigrate:
    def test_round_trip_directory_database_directory(self, lab: Lab) -> None:
        local = lab.root / "state"
        applied = run_cli("apply", lab.inventory, "--state", local, "--auto-approve",
                          env=cli_env(HYBRIDCTL_RECORDING_CLOUD_DIR=str(lab.cloud_dir)), cwd=lab.root)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        there = lab.cli("state", "migrate", "--from", local, "--to", lab.url)
        assert there.returncode == 0, there.stdout + there.stderr
        assert "verified: source sha256:" in flat(there.stdout) and PASSWORD not in there.stdout
        digests = flat(there.stdout).split("verified: source ")[1].split(", target ")
        assert digests[0] == digests[1].split()[0]
        status = json.loads(lab.cli("status", "--state", lab.url, "--format", "json", "--no-drift").stdout)
        assert status["serial"] == 1 and status["last_run"]["status"] == "succeeded"
        again = lab.cli("apply", lab.inventory, "--state", lab.url, "--auto-approve")
        assert again.returncode == 0, again.stdout + again.stderr
        back = lab.cli("state", "migrate", "--from", lab.url, "--to", lab.root / "back")
        assert back.returncode == 0, back.stdout + back.stderr
        assert StateStore(lab.root / "back").read() == lab.store().read()
        assert StateStore(lab.root / "back").journal.records() == lab.store().journal.records()
        refused = lab.cli("state", "migrate", "--from", local, "--to", lab.url)
        assert refused.returncode == 4 and "already holds a state" in flat(refused.stderr)

    def test_a_document_named_outside_the_state_is_refused(self, lab: Lab) -> None:
        """Issue 45, item 3: a database row named `../x.json` (any name can be inserted) exited 70; now exit 1
        naming it, before anything is written."""
        local = lab.root / "state"
        applied = run_cli("apply", lab.inventory, "--state", local, "--auto-approve",
                          env=cli_env(HYBRIDCTL_RECORDING_CLOUD_DIR=str(lab.cloud_dir)), cwd=lab.root)
        assert applied.returncode == 0, applied.stdout + applied.stderr
        assert lab.cli("state", "migrate", "--from", local, "--to", lab.url).returncode == 0
        store = lab.store()
        store.backend.session.execute(  # type: ignore[attr-defined]
            "INSERT INTO hybridctl_document (environment, name, body) VALUES (%(env)s, '../x.json', '{}')",
            store.backend.session.key_params, doing="planting a document")  # type: ignore[attr-defined]
        target = lab.root / "back" / "state"
        done = lab.cli("state", "migrate", "--from", lab.url, "--to", target)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "Traceback" not in done.stderr and "a document named '../x.json'" in flat(done.stderr)
        assert not (lab.root / "back" / "x.json").exists() and not (target / "state.json").exists()
