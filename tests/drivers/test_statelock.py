"""The local lock's identity: a deleted or replaced lock file, pid reuse, a writer without the lock,
and what a dead holder left behind (processes, ssh control directories)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hybridctl.drivers.journal import JournalEvent
from hybridctl.drivers.lockholder import (
    CONTROL_DIR_PREFIX,
    HOLDER_ENV,
    LockHolder,
    holder_alive,
    process_start,
)
from hybridctl.drivers.state import LockLostError, State, StateLock, StateStore
from hybridctl.errors import ExitCode, StateLockedError
from support.waiting import wait_for


@pytest.fixture(autouse=True)
def _no_token_left() -> Iterator[None]:
    yield
    os.environ.pop(HOLDER_ENV, None)


class TestLiveness:
    def test_a_holder_is_alive_only_with_its_own_start_time(self) -> None:
        me = LockHolder.for_this_process("x")
        assert me.process_start == process_start(os.getpid()) and holder_alive(me) is True
        reused = replace(me, process_start=me.process_start.rsplit(":", 1)[0] + ":1")  # same pid, other process
        assert holder_alive(reused) is False
        assert holder_alive(replace(me, host="elsewhere.example")) is None

    def test_the_token_is_not_in_the_public_view(self) -> None:
        me = LockHolder.for_this_process("apply")
        assert "token" not in me.public() and me.token not in json.dumps(me.public())


class TestDeletedLockFile:
    """Issue: delete `state/lock` while an apply holds it, and a second apply ran at the same time."""

    def test_a_second_run_refuses_while_the_holder_lives(self, tmp_path: Path) -> None:
        first = StateStore(tmp_path)
        first.lock.acquire(command="apply plan.json")
        (tmp_path / "lock").unlink()
        second = StateStore(tmp_path)
        with pytest.raises(StateLockedError) as caught:
            second.lock.acquire(command="apply plan.json")
        assert caught.value.exit_code == ExitCode.LOCKED
        assert "still running" in caught.value.message and "removed or replaced" in caught.value.message
        assert not second.lock.held
        # the holder goes on: it takes the new lock file back and its journal stays in sequence
        first.journal.append("r1", JournalEvent.RUN_STARTED)
        first.write(State(serial=1))
        assert [r.seq for r in first.journal.records()] == [1]
        first.lock.release()

    def test_deleting_both_lock_files_does_not_let_a_second_run_in(self, tmp_path: Path) -> None:
        """Issue 34, finding 11: with `lock` and `lock.holder.json` both deleted nothing on disk showed the
        holder, and a second apply ran beside it. The holder's flock on the state directory still does."""
        code = textwrap.dedent(f"""
            import time
            from pathlib import Path
            from hybridctl.drivers.state import StateStore
            store = StateStore(Path({str(tmp_path)!r}))
            store.lock.acquire(command="apply first")
            print("locked", flush=True)
            time.sleep(60)
        """)
        first = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            assert first.stdout is not None and first.stdout.readline().strip() == "locked"
            (tmp_path / "lock").unlink()
            (tmp_path / "lock.holder.json").unlink()
            second = StateStore(tmp_path)
            with pytest.raises(StateLockedError) as caught:
                second.lock.acquire(command="apply second")
            assert caught.value.exit_code == ExitCode.LOCKED and not second.lock.held
            assert "still running" in caught.value.message and "removed or replaced" in caught.value.message
            assert "its holder record was removed too" in caught.value.message
            with pytest.raises(StateLockedError):  # waiting does not help while the first one runs
                second.lock.acquire(command="apply second", timeout_s=0.5)
        finally:
            first.kill()
            first.wait()
        recovered = StateStore(tmp_path)
        recovered.lock.acquire(command="apply second")  # the first is gone: its flocks went with it
        recovered.lock.release()

    def test_the_holder_stops_writing_when_another_process_holds_the_new_lock_file(self, tmp_path: Path) -> None:
        first = StateStore(tmp_path)
        first.lock.acquire(command="apply")
        first.journal.append("r1", JournalEvent.RUN_STARTED)
        (tmp_path / "lock").unlink()
        code = textwrap.dedent(f"""
            import fcntl, os, time
            fd = os.open({str(tmp_path / "lock")!r}, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print("locked", flush=True)
            time.sleep(60)
        """)
        other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        try:
            assert other.stdout is not None and other.stdout.readline().strip() == "locked"
            with pytest.raises(LockLostError, match="another process holds the new one"):
                first.journal.append("r1", JournalEvent.STEP_STARTED, step="a", key="a@1")
            with pytest.raises(LockLostError):
                first.write(State(serial=1))
        finally:
            other.kill()
            other.wait()
        assert [r.seq for r in first.journal.records()] == [1]
        first.lock.release()

    def test_a_holder_record_that_names_another_run_stops_the_writer(self, tmp_path: Path) -> None:
        store = StateStore(tmp_path)
        store.lock.acquire(command="apply")
        forged = replace(LockHolder.for_this_process("someone else"), token=uuid.uuid4().hex)
        (tmp_path / "lock.holder.json").write_text(json.dumps(forged.to_dict()))
        with pytest.raises(LockLostError, match="no longer names this run"):
            store.journal.append("r1", JournalEvent.RUN_STARTED)
        store.lock.release()
        assert (tmp_path / "lock.holder.json").exists()  # not ours: left alone

    def test_a_removed_holder_record_stops_the_writer(self, tmp_path: Path) -> None:
        """Issue 34, item 12(a): the lock file is still ours but its record is gone (one journal record
        written before, none after): a second run could not see this one, so this one stops writing."""
        store = StateStore(tmp_path)
        store.lock.acquire(command="apply")
        store.journal.append("r1", JournalEvent.RUN_STARTED)
        (tmp_path / "lock.holder.json").unlink()
        with pytest.raises(LockLostError, match=r"no longer names this run \(it was removed\)"):
            store.journal.append("r1", JournalEvent.STEP_STARTED, step="a", key="a@1")
        with pytest.raises(LockLostError):
            store.write(State(serial=1))
        assert [r.seq for r in store.journal.records()] == [1]
        store.lock.release()


class TestRecovery:
    def test_a_dead_holders_ssh_control_dirs_and_masters_are_cleaned_up(self, tmp_path: Path) -> None:
        token = uuid.uuid4().hex
        control = Path(tempfile.mkdtemp(prefix=f"{CONTROL_DIR_PREFIX}{token[:12]}-"))
        (control / "socket").touch()
        # stands in for an ssh ControlPersist master: its command line names the control directory
        master = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", str(control / "abc")])
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        record = replace(LockHolder.for_this_process("apply killed"), pid=dead.pid, token=token,
                         process_start="gone:1")
        (tmp_path / "lock.holder.json").write_text(json.dumps(record.to_dict()))
        recovered = StateLock(tmp_path).acquire(command="apply resume")
        try:
            assert recovered is not None and recovered.command == "apply killed"
            assert recovered.leftovers_stopped >= 1
            wait_for(lambda: master.poll() is not None, "the leftover ssh master to be stopped", timeout_s=60)
            assert not control.exists()
        finally:
            master.kill()
            master.wait()
            os.environ.pop(HOLDER_ENV, None)

    def test_a_leftover_that_takes_a_while_to_die_is_counted_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Issue 34, finding 13: on a loaded machine a SIGKILLed process can still be there 50 ms later, in the
        next round, and was counted (and signalled) again: "2 leftovers stopped" for one."""
        import signal

        import hybridctl.drivers.lockholder as lockholder

        token = uuid.uuid4().hex
        leftover = subprocess.Popen(["sleep", "600"], env={**os.environ, HOLDER_ENV: token})
        signalled: list[int] = []
        real_kill = os.kill

        def slow_to_die(pid: int, signum: int) -> None:
            if pid == leftover.pid and signum == signal.SIGKILL:
                signalled.append(pid)  # the signal is "delivered" but the process lives on for now
                return
            real_kill(pid, signum)

        monkeypatch.setattr(lockholder.os, "kill", slow_to_die)
        try:
            assert lockholder.stop_leftover_processes(token) == 1
            assert signalled == [leftover.pid]
        finally:
            monkeypatch.undo()
            leftover.kill()
            leftover.wait()

    def test_control_dirs_of_a_run_carry_its_token(self) -> None:
        from hybridctl.drivers.lockholder import control_dir_prefix

        os.environ[HOLDER_ENV] = "0123456789abcdef0123"
        assert control_dir_prefix() == f"{CONTROL_DIR_PREFIX}0123456789ab-"
        os.environ.pop(HOLDER_ENV)
        assert control_dir_prefix() == CONTROL_DIR_PREFIX



class TestStatusView:
    def test_a_holder_on_another_host_is_shown_as_unchecked_not_as_dead(self, tmp_path: Path) -> None:
        from hybridctl.drivers.state import RunRecord
        from hybridctl.operations.status import status_document

        elsewhere = replace(LockHolder.for_this_process("apply plan.json"), host="other.example", pid=4242)
        (tmp_path / "lock.holder.json").write_text(json.dumps(elsewhere.to_dict()))
        store = StateStore(tmp_path)
        running = RunRecord("r1", "apply", "running", "2026-01-01T00:00:00+00:00", 4242, "other.example")
        doc = status_document(store, State(serial=1, history=(running,)), None)
        assert doc["lock"] == {**elsewhere.public(), "alive": None}
        assert doc["last_run"]["status"] == "running"  # type: ignore[index]
        (tmp_path / "lock.holder.json").unlink()
        doc = status_document(store, State(serial=1, history=(running,)), None)
        assert doc["lock"] is None and doc["last_run"]["status"] == "interrupted"  # type: ignore[index]
