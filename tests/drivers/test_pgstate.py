"""The PostgreSQL state backend against a real, private PostgreSQL server (tests/support/pgserver.py)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import psycopg
import pytest
from hybridctl.drivers.journal import JournalEvent
from hybridctl.drivers.lockholder import HOLDER_ENV, LockHolder
from hybridctl.drivers.pgschema import SCHEMA_VERSION, StateDatabaseError
from hybridctl.drivers.pgstate import AdvisoryLock, StaleStateError
from hybridctl.drivers.pgurl import StateUrl
from hybridctl.drivers.state import LockLostError, State, StateStore, open_state
from hybridctl.drivers.statemigrate import migrate, state_digest
from hybridctl.errors import ExitCode, StateLockedError
from support.pgserver import PASSWORD, PgServer
from support.waiting import wait_for


@pytest.fixture
def url(server: PgServer) -> str:
    """A fresh environment in the shared test database, so tests do not see each other's state."""
    return server.url(environment=f"t{uuid.uuid4().hex[:10]}")


@pytest.fixture(autouse=True)
def _no_token_left() -> Iterator[None]:
    yield
    os.environ.pop(HOLDER_ENV, None)


class TestUrl:
    def test_the_password_is_never_in_what_is_shown(self) -> None:
        url = StateUrl.parse("postgresql://ops:hunter2@db.example.com:5433/hctl?sslmode=require&environment=prod")
        assert url.environment == "prod" and "hunter2" not in url.display + url.option
        assert url.display == "postgresql://ops@db.example.com:5433/hctl?sslmode=require (environment prod)"
        assert url.option == "postgresql://ops@db.example.com:5433/hctl?sslmode=require&environment=prod"
        assert "environment" not in url.conninfo and "sslmode=require" in url.conninfo
        assert url.redact("FATAL: password hunter2 rejected") == "FATAL: password ******** rejected"

    def test_a_bad_environment_name_is_a_usage_error(self) -> None:
        from hybridctl.errors import UsageError

        with pytest.raises(UsageError, match="not a valid name"):
            StateUrl.parse("postgresql://h/db?environment=../x")


class TestSchema:
    def test_migrations_are_applied_once_on_first_use_and_said(self, server: PgServer) -> None:
        server.create_database("fresh")
        said: list[str] = []
        store = open_state(server.url("fresh"), notify=said.append)
        assert not store.exists()
        assert [m.split("applying schema migration ")[1].split()[0] for m in said] == \
            [str(v) for v in range(1, SCHEMA_VERSION + 1)]
        assert all(PASSWORD not in m for m in said)
        again: list[str] = []
        assert not open_state(server.url("fresh"), notify=again.append).exists()
        assert again == []

    def test_an_older_schema_gets_only_the_migrations_it_lacks(self, server: PgServer) -> None:
        server.create_database("older")
        assert not open_state(server.url("older")).exists()
        with psycopg.connect(server.url("older").split("?")[0] + f"?host={server.socket_dir}",
                             autocommit=True) as connection:  # as a hybridctl that knew only migration 1 left it
            connection.execute("DROP TABLE hybridctl_document")
            connection.execute("DELETE FROM hybridctl_schema_version WHERE version > 1")
        said: list[str] = []
        assert not open_state(server.url("older"), notify=said.append).exists()
        assert len(said) == SCHEMA_VERSION - 1 and "applying schema migration 2" in said[0]

    def test_a_schema_newer_than_this_hybridctl_is_refused(self, server: PgServer) -> None:
        server.create_database("future")
        assert not open_state(server.url("future")).exists()
        with psycopg.connect(server.url("future").split("?")[0] + f"?host={server.socket_dir}",
                             autocommit=True) as connection:
            connection.execute("INSERT INTO hybridctl_schema_version VALUES (%s, 'from the future')",
                               (SCHEMA_VERSION + 1,))
        with pytest.raises(StateDatabaseError, match="newer than this hybridctl") as caught:
            open_state(server.url("future")).exists()
        assert caught.value.exit_code == ExitCode.USAGE


class TestDocument:
    def test_round_trip_and_environments_do_not_mix(self, server: PgServer, url: str) -> None:
        store = open_state(url)
        other = open_state(server.url(environment=f"o{uuid.uuid4().hex[:8]}"))
        with store.locked(command="test"):
            written = store.write(State(serial=3, applied_plan={"inventory": "x", "ratio": 0.1}))
        assert store.read() == written and store.read().revision == 1
        assert not other.exists() and other.read().serial == 0

    def test_a_write_against_an_old_revision_is_refused_like_a_stale_plan(self, url: str) -> None:
        first, second = open_state(url), open_state(url)
        with first.locked(command="first"):
            first.write(State(serial=1))
        seen = second.read()
        with first.locked(command="first again"):
            first.update(lambda s: replace(s, serial=2))
        with second.locked(command="second"), pytest.raises(StaleStateError) as caught:
            second.write(replace(seen, serial=9))
        assert caught.value.exit_code == ExitCode.REFUSED == 4
        assert "changed since this run read it" in caught.value.message
        assert open_state(url).read().serial == 2

    def test_writing_without_the_lock_is_refused(self, url: str) -> None:
        with pytest.raises(RuntimeError, match="lock"):
            open_state(url).write(State())


class TestDocuments:
    def test_documents_are_shared_and_written_only_under_the_lock(self, url: str) -> None:
        writer = open_state(url)
        with writer.locked(command="failover"):
            writer.write_document("runbooks/a.json", "{}")
            assert open_state(url).read_document("runbooks/a.json") == "{}"  # visible to the team at once
            with pytest.raises(LockLostError):
                open_state(url).write_document("runbooks/b.json", "{}")
            writer.remove_document("runbooks/a.json")
        assert open_state(url).read_document("runbooks/a.json") is None
        with pytest.raises(ValueError, match="not a state document name"):
            writer.read_document("../etc/passwd")


class TestJournal:
    def test_records_are_committed_in_order_and_cannot_be_changed(self, url: str) -> None:
        store = open_state(url)
        with store.locked(command="test"):
            store.journal.append("r1", JournalEvent.RUN_STARTED)
            store.journal.append("r1", JournalEvent.STEP_STARTED, step="a", key="a@1", detail={"n": 1})
            # committed at once: another connection sees them while this one still holds the lock
            assert [r.seq for r in open_state(url).journal.records()] == [1, 2]
        records = open_state(url).journal.records()
        assert records[1].step == "a" and records[1].detail == {"n": 1}
        session = store.backend.session  # type: ignore[attr-defined]
        with pytest.raises(StateDatabaseError, match="append-only"):
            session.execute("DELETE FROM hybridctl_journal WHERE environment = %(env)s", session.key_params,
                            doing="deleting")

    def test_a_writer_that_does_not_hold_the_lock_is_refused(self, url: str) -> None:
        holder, intruder = open_state(url), open_state(url)
        with holder.locked(command="holder"):
            with pytest.raises(LockLostError, match="not locked by this run"):
                intruder.journal.append("r9", JournalEvent.RUN_STARTED)
            holder.journal.append("r1", JournalEvent.RUN_STARTED)
        assert [r.run for r in holder.journal.records()] == ["r1"]


def _holder_process(url: str, command: str) -> subprocess.Popen[str]:
    code = textwrap.dedent(f"""
        import subprocess, time
        from hybridctl.drivers.state import open_state
        store = open_state({url!r})
        store.lock.acquire(command={command!r})
        child = subprocess.Popen(["sleep", "600"])  # inherits the lock token, like ansible-playbook
        print(child.pid, flush=True)
        time.sleep(600)
    """)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


class TestLock:
    def test_a_second_holder_is_refused_naming_the_first(self, url: str) -> None:
        first = open_state(url)
        first.lock.acquire(command="apply plan.json")
        with pytest.raises(StateLockedError) as caught:
            open_state(url).lock.acquire(command="apply other.json")
        assert caught.value.exit_code == ExitCode.LOCKED
        assert f"pid {os.getpid()}" in caught.value.message and "apply plan.json" in caught.value.message
        holder, alive = open_state(url).lock.holder_status()
        assert holder is not None and alive is True and holder.user
        first.lock.release()
        assert open_state(url).lock.holder_status() == (None, None)

    def test_sigkill_of_the_holder_frees_the_lock_at_once(self, url: str) -> None:
        process = _holder_process(url, "apply doomed")
        assert process.stdout is not None
        child_pid = int(process.stdout.readline())
        waiting = open_state(url)
        with pytest.raises(StateLockedError):
            waiting.lock.acquire(command="too early")
        process.kill()
        process.wait()
        # the server drops the lock with the connection: nothing else frees it (no lease expires), so taking it
        # at all is the proof; the bound is generous for a loaded machine, not a measure of "at once"
        recovered = waiting.lock.acquire(command="apply resume", timeout_s=120)
        assert recovered is not None and recovered.pid == process.pid and recovered.command == "apply doomed"
        assert recovered.leftovers_stopped >= 1
        wait_for(lambda: not Path(f"/proc/{child_pid}").exists()
                 or Path(f"/proc/{child_pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX",
                 "the dead holder's child to be stopped", timeout_s=60)
        waiting.lock.release()

    def test_a_dead_holders_row_is_not_shown_as_a_live_lock(self, url: str) -> None:
        process = _holder_process(url, "apply doomed")
        assert process.stdout is not None
        int(process.stdout.readline())
        process.send_signal(signal.SIGKILL)
        process.wait()
        holder, alive = open_state(url).lock.holder_status()
        assert holder is not None and holder.pid == process.pid and alive is False

    def test_a_holder_row_from_another_host_is_taken_over_without_stopping_anything_here(self, url: str) -> None:
        """Issue 34, item 12(b). The row names pid <ours> on host other.example: that pid runs here, but it
        is not that holder, and nothing here can tell whether that holder lives. The lock is free (its
        session ended), so the lock is taken (not refused as 'still running'), the row is returned as is,
        and the local process carrying the same token is left alone: 0 stopped, still running."""
        token = uuid.uuid4().hex
        bystander = _token_carrier(token)
        try:
            remote = _with_holder_row(url, host="other.example", pid=os.getpid(), token=token, process_start="")
            store = open_state(url)
            recovered = store.lock.acquire(command="apply resume")
            assert recovered is not None and (recovered.host, recovered.pid) == ("other.example", remote.pid)
            assert recovered.leftovers_stopped == 0
            assert bystander.poll() is None, "a process on this host is not the remote holder's to stop"
            store.lock.release()
        finally:
            bystander.kill()
            bystander.wait()

    def test_a_holder_row_of_this_host_with_a_reused_pid_is_recovered_and_its_leftovers_stopped(self, url: str) -> None:
        """Issue 34, item 12(b). The row names this host and pid <ours> (which runs), but a start tick
        ('<boot>:1') no process of this boot has now: the holder is dead, its pid reused. So the lock is
        taken and the 1 process carrying its token is stopped."""
        token = uuid.uuid4().hex
        leftover = _token_carrier(token)
        try:
            boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
            _with_holder_row(url, host=socket.gethostname(), pid=os.getpid(), token=token,
                             process_start=f"{boot}:1")
            store = open_state(url)
            recovered = store.lock.acquire(command="apply resume")
            assert recovered is not None and recovered.pid == os.getpid() and recovered.leftovers_stopped == 1
            assert leftover.wait(timeout=30) == -signal.SIGKILL
            store.lock.release()
        finally:
            leftover.kill()
            leftover.wait()


def _token_carrier(token: str) -> subprocess.Popen[bytes]:
    """A process started under a lock token (like an ansible-playbook), running once this returns."""
    carrier = subprocess.Popen([sys.executable, "-c", "print('up', flush=True); import time; time.sleep(600)"],
                               env={**os.environ, HOLDER_ENV: token}, stdout=subprocess.PIPE)
    assert carrier.stdout is not None and carrier.stdout.readline().strip() == b"up"
    return carrier


def _with_holder_row(url: str, **fields: object) -> LockHolder:
    """Leave the environment with a holder row naming `fields`, its session ended (the lock free)."""
    first = open_state(url)
    first.lock.acquire(command="apply doomed")
    holder = replace(LockHolder.for_this_process("apply doomed"), **fields)  # type: ignore[arg-type]
    lock = first.lock
    assert isinstance(lock, AdvisoryLock)
    lock.session.execute("UPDATE hybridctl_lock_holder SET holder = %(holder)s::jsonb WHERE environment = %(env)s",
                         {**lock.session.key_params, "holder": json.dumps(holder.to_dict())}, doing="test")
    lock.session.close()  # as if the process died: the server drops its advisory lock
    os.environ.pop(HOLDER_ENV, None)
    return holder


class TestConnectionProblems:
    def test_a_wrong_password_is_a_clear_usage_error_without_the_password(self, server: PgServer) -> None:
        with pytest.raises(StateDatabaseError) as caught:
            open_state(server.url(password="wrong-pass-123")).exists()
        assert caught.value.exit_code == ExitCode.USAGE == 2
        text = caught.value.message + (caught.value.hint or "")
        assert "cannot connect to the state database" in text and "password authentication failed" in text
        assert "wrong-pass-123" not in text and "~/.pgpass" in text

    def test_an_unreachable_server_is_a_clear_usage_error(self, tmp_path: Path) -> None:
        with pytest.raises(StateDatabaseError, match="cannot connect") as caught:
            open_state(f"postgresql://nobody@/db?host={tmp_path}").exists()
        assert caught.value.exit_code == ExitCode.USAGE

    def test_a_server_restart_fails_the_holder_cleanly_and_frees_the_lock(self, server: PgServer, url: str) -> None:
        store = open_state(url)
        store.lock.acquire(command="apply")
        store.journal.append("r1", JournalEvent.RUN_STARTED)
        server.restart()
        with pytest.raises(StateDatabaseError) as caught:
            store.journal.append("r1", JournalEvent.STEP_STARTED, step="a", key="a@1")
        assert "lost the state database" in caught.value.message
        assert "run the same command again" in (caught.value.hint or "")
        store.lock.release()  # on a dead connection: no error, and the holder row stays
        again = open_state(url)
        holder, alive = again.lock.holder_status()
        assert holder is not None and holder.pid == os.getpid() and alive is False  # the server dropped the lock
        # Its process still runs (this one), and could still be running steps: not taken over.
        with pytest.raises(StateLockedError, match="session ended but which is still running"):
            again.lock.acquire(command="resume")
        assert [r.event for r in again.journal.records()] == [JournalEvent.RUN_STARTED]


class TestMigration:
    def test_directory_to_database_and_back_loses_nothing(self, tmp_path: Path, url: str) -> None:
        local = StateStore(tmp_path / "state")
        with local.locked(command="seed"):
            local.write(State(serial=5, applied_plan={"inventory": "x", "usd": 12.5}))
            for event in (JournalEvent.RUN_STARTED, JournalEvent.RUN_FINISHED):
                local.journal.append("r1", event, summary="ü", detail={"k": [1, 2.5]})
            local.write_document("runbooks/inc-1.json", '{"id": "inc-1"}\n')
        (tmp_path / "state" / "known_hosts").write_text("host key\n")
        expected = state_digest(local.read(), local.journal.records(), local.documents())
        there = open_state(url)
        to_db = migrate(local, there)
        assert to_db.source_digest == to_db.target_digest == expected and to_db.journal_records == 2
        assert to_db.documents == 1 and there.read_document("runbooks/inc-1.json") == '{"id": "inc-1"}\n'
        assert to_db.working_files == ("known_hosts",)
        back_store = StateStore(tmp_path / "back")
        back = migrate(there, back_store)
        assert back.target_digest == expected
        assert back_store.read() == local.read() and back_store.journal.records() == local.journal.records()
        assert back_store.documents() == local.documents()
        from hybridctl.errors import RefusedError

        with pytest.raises(RefusedError, match="already holds a state"):
            migrate(local, open_state(url))
