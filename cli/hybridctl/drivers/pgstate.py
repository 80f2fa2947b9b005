"""The PostgreSQL state backend: one shared, locked state per environment, for a whole team.

- The state document is a row of hybridctl_state. A write names the revision it read and
  succeeds only if that is still the stored one (optimistic concurrency, one statement);
  otherwise it is refused like a stale plan (exit 4).
- The journal is the append-only table hybridctl_journal (a trigger refuses updates and
  deletes). Each record is committed before the executor goes on (autocommit).
- The lock is a session-level advisory lock keyed by the environment: the server drops it
  when the holder's connection ends, however the holder dies. Who holds it is a row of
  hybridctl_lock_holder, with the holder's backend pid, so a reader can tell a live holder
  (its session still holds the lock in pg_locks) from a dead one's leftover row.
- Every write goes through the session that holds the lock and checks, in the same
  statement, that this session still holds it: a writer that lost it is refused.

One connection per process, opened on first use; the lock lives and dies with it.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hybridctl.drivers.journal import JournalBase, JournalRecord, now_iso
from hybridctl.drivers.lockholder import LockHolder, holder_alive, stop_leftover_processes
from hybridctl.drivers.pgschema import (
    StateDatabaseError,
    connect,
    database_errors,
    ensure_schema,
    lock_key,
)
from hybridctl.drivers.pgurl import StateUrl
from hybridctl.drivers.statelock import LockLostError, set_token_env
from hybridctl.drivers.statemodel import check_document_name
from hybridctl.errors import RefusedError, StateLockedError

if TYPE_CHECKING:
    import psycopg

JsonDict = dict[str, Any]

_HOLDS_LOCK = """EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1
                 AND pid = {pid} AND classid::bigint = %(classid)s AND objid::bigint = %(objid)s)"""


class StaleStateError(RefusedError):
    """The state changed since this run read it: like a stale plan, refused (exit 4)."""


class Session:
    """The process's one connection to the state database, with the schema brought up to date."""

    def __init__(self, url: StateUrl, notify: Callable[[str], None] | None) -> None:
        self.url = url
        self.notify = notify
        self._connection: psycopg.Connection[tuple[object, ...]] | None = None
        key = lock_key(url.environment)
        self.key = key
        self.key_params = {"classid": key >> 32, "objid": key & 0xFFFFFFFF, "env": url.environment}

    def connection(self) -> psycopg.Connection[tuple[object, ...]]:
        if self._connection is None or self._connection.closed:
            connection = connect(self.url)
            ensure_schema(connection, self.url, self.notify)
            self._connection = connection
        return self._connection

    def execute(self, sql: str, params: Mapping[str, object] | tuple[object, ...] = (), *,
                doing: str) -> list[tuple[object, ...]]:
        with database_errors(self.url, doing):
            cursor = self.connection().execute(sql.encode(), params)
            return cursor.fetchall() if cursor.description else []

    def lost(self) -> bool:
        """The connection broke (a server restart, a network cut): whatever it held is gone."""
        return self._connection is not None and (self._connection.closed or self._connection.broken)

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None


class DatabaseJournal(JournalBase):
    def __init__(self, session: Session) -> None:
        self.session = session

    def records(self) -> list[JournalRecord]:
        rows = self.session.execute("SELECT seq, record FROM hybridctl_journal WHERE environment = %(env)s "
                                    "ORDER BY seq", self.session.key_params, doing="reading the journal")
        return [JournalRecord.from_dict({**_json(record), "seq": _int(seq)}) for seq, record in rows]

    def append(self, run: str, event: str, *, step: str | None = None, key: str | None = None,
               summary: str | None = None, error: str | None = None,
               detail: Mapping[str, Any] | None = None) -> JournalRecord:
        record = JournalRecord(0, now_iso(), run, event, step, key, summary, error, dict(detail) if detail else None)
        body = {k: v for k, v in record.to_dict().items() if k != "seq"}
        rows = self.session.execute(
            "INSERT INTO hybridctl_journal (environment, seq, record) "
            "SELECT %(env)s, coalesce(max(seq), 0) + 1, %(record)s::jsonb FROM hybridctl_journal "
            "WHERE environment = %(env)s HAVING " + _HOLDS_LOCK.format(pid="pg_backend_pid()") + " RETURNING seq",
            {**self.session.key_params, "record": json.dumps(body)}, doing="writing the journal")
        if not rows:
            raise LockLostError(f"the state {self.session.url.display} is not locked by this run: "
                                "the journal refuses its record", hint="run the same command again to resume")
        return replace(record, seq=_int(rows[0][0]))

    def import_records(self, records: list[JournalRecord]) -> None:
        """For `state migrate`: copy records with their own sequence numbers, in one transaction."""
        with database_errors(self.session.url, "copying the journal"):
            connection = self.session.connection()
            with connection.transaction():
                for record in records:
                    body = {k: v for k, v in record.to_dict().items() if k != "seq"}
                    connection.execute(b"INSERT INTO hybridctl_journal (environment, seq, record) "
                                       b"VALUES (%s, %s, %s::jsonb)",
                                       (self.session.url.environment, record.seq, json.dumps(body)))


class AdvisoryLock:
    """The environment's session-level advisory lock, and the row that says who holds it."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._me: LockHolder | None = None
        self._saved_env: str | None = None

    @property
    def held(self) -> bool:
        return self._me is not None

    def holder(self) -> LockHolder | None:
        return self.holder_status()[0]

    def holder_status(self) -> tuple[LockHolder | None, bool | None]:
        rows = self.session.execute(
            "SELECT holder, " + _HOLDS_LOCK.format(pid="h.backend_pid") + " FROM hybridctl_lock_holder h "
            "WHERE environment = %(env)s", self.session.key_params, doing="reading the lock holder")
        if not rows:
            return None, None
        return LockHolder.from_dict(_json(rows[0][0])), bool(rows[0][1])

    def acquire(self, *, command: str, timeout_s: float = 0.0,
                on_wait: Callable[[LockHolder | None], None] | None = None) -> LockHolder | None:
        if self._me is not None:
            raise RuntimeError("the state lock is already held by this object")
        params = self.session.key_params
        taken = self.session.execute("SELECT pg_try_advisory_lock(%(key)s)", {"key": self.session.key},
                                     doing="taking the state lock")
        if not taken[0][0]:
            holder = self.holder()
            if timeout_s > 0:
                if on_wait is not None:
                    on_wait(holder)
                taken = self._wait(timeout_s)
            if not taken[0][0]:
                holder = self.holder() or holder
                who = holder.describe() if holder else "another client (no holder record yet)"
                raise StateLockedError(f"the state {self.session.url.display} is locked by {who}",
                                       hint="wait for that run to finish, or pass e.g. --lock-timeout 10m to wait for it")
        try:
            stale = self._recover(self.holder())
            me = LockHolder.for_this_process(command)
            self.session.execute(
                "INSERT INTO hybridctl_lock_holder (environment, holder, backend_pid) "
                "VALUES (%(env)s, %(holder)s::jsonb, pg_backend_pid()) ON CONFLICT (environment) "
                "DO UPDATE SET holder = excluded.holder, backend_pid = excluded.backend_pid",
                {**params, "holder": json.dumps(me.to_dict())}, doing="recording the lock holder")
        except BaseException:
            self._unlock()
            raise
        self._me = me
        self._saved_env = set_token_env(me.token)
        return stale

    def _wait(self, timeout_s: float) -> list[tuple[object, ...]]:
        """Block in the server until the holder's session ends (hand-over at once), up to timeout_s."""
        import psycopg

        deadline = time.monotonic() + timeout_s
        with database_errors(self.session.url, "waiting for the state lock"):
            connection = self.session.connection()
            connection.execute(b"SELECT set_config('lock_timeout', %s, false)",
                               (f"{max(int((deadline - time.monotonic()) * 1000), 1)}ms",))
            try:
                connection.execute(b"SELECT pg_advisory_lock(%s)", (self.session.key,))
                return [(True,)]
            except psycopg.errors.LockNotAvailable:
                return [(False,)]
            finally:
                connection.execute(b"SELECT set_config('lock_timeout', '0', false)")

    def _recover(self, stale: LockHolder | None) -> LockHolder | None:
        """The lock is ours, so the recorded holder's session ended. If its process still runs here
        (its connection dropped, say), it would go on working: refuse until it has stopped."""
        if stale is None:
            return None
        alive = holder_alive(stale)
        if alive:
            raise StateLockedError(
                f"the state {self.session.url.display} was held by {stale.describe()}, whose database session "
                "ended but which is still running", hint="wait for that process to end, then run this command again")
        if alive is False:
            stale = replace(stale, leftovers_stopped=stop_leftover_processes(stale.token))
        return stale

    def verify(self) -> None:
        if self._me is None:
            raise LockLostError(f"the state {self.session.url.display} is written without holding its lock",
                                hint="this is a bug in hybridctl: please report it")
        # Each write checks the lock in its own statement; nothing to do beforehand.

    def _unlock(self) -> None:
        import psycopg

        try:
            self.session.connection().execute(b"SELECT pg_advisory_unlock(%s)", (self.session.key,))
        except (psycopg.Error, StateDatabaseError):
            self.session.close()  # a dead session holds nothing: the server has already dropped the lock

    def release(self) -> None:
        if self._me is None:
            return
        import psycopg

        set_token_env(self._saved_env)
        if self.session.lost():
            # The server dropped the lock with the session. The holder row stays: the next run finds
            # it, and stops what this process may have left running (an ansible-playbook) first.
            self.session.close()
            self._me = None
            return
        # If this fails, the next holder finds the row, sees this process gone, and says so.
        with contextlib.suppress(psycopg.Error, StateDatabaseError):
            self.session.connection().execute(
                b"DELETE FROM hybridctl_lock_holder WHERE environment = %s AND holder->>'token' = %s",
                (self.session.url.environment, self._me.token))
        self._unlock()
        self._me = None


class DatabaseBackend:
    def __init__(self, url: StateUrl, notify: Callable[[str], None] | None = None) -> None:
        self.url = url
        self.location = url.display
        self.option = url.option
        self.session = Session(url, notify)
        self.journal = DatabaseJournal(self.session)
        self.lock = AdvisoryLock(self.session)

    def exists(self) -> bool:
        return bool(self.session.execute("SELECT 1 FROM hybridctl_state WHERE environment = %(env)s",
                                         self.session.key_params, doing="reading the state"))

    def load(self) -> tuple[JsonDict | None, int]:
        rows = self.session.execute("SELECT document, revision FROM hybridctl_state WHERE environment = %(env)s",
                                    self.session.key_params, doing="reading the state")
        if not rows:
            return None, 0
        from hybridctl.drivers.statemodel import stored_document

        return stored_document(_json(rows[0][0]), self.location), _int(rows[0][1])

    def save(self, document: JsonDict, serial: int, expected_revision: int) -> int:
        params = {**self.session.key_params, "document": json.dumps(document), "serial": serial,
                  "expected": expected_revision}
        holds = _HOLDS_LOCK.format(pid="pg_backend_pid()")
        if expected_revision == 0:
            rows = self.session.execute(
                "INSERT INTO hybridctl_state (environment, revision, serial, document) "
                "SELECT %(env)s, 1, %(serial)s, %(document)s::jsonb WHERE " + holds +
                " ON CONFLICT (environment) DO NOTHING RETURNING revision", params, doing="writing the state")
        else:
            rows = self.session.execute(
                "UPDATE hybridctl_state SET revision = revision + 1, serial = %(serial)s, "
                "document = %(document)s::jsonb, updated_at = now() "
                "WHERE environment = %(env)s AND revision = %(expected)s AND " + holds + " RETURNING revision",
                params, doing="writing the state")
        if rows:
            return _int(rows[0][0])
        return self._refused(expected_revision)

    def _refused(self, expected_revision: int) -> int:
        held = self.session.execute("SELECT " + _HOLDS_LOCK.format(pid="pg_backend_pid()"),
                                    self.session.key_params, doing="checking the state lock")
        if not held[0][0]:
            raise LockLostError(f"the state {self.url.display} is not locked by this run: its write is refused",
                                hint="run the same command again to resume")
        current = self.session.execute("SELECT revision, serial FROM hybridctl_state WHERE environment = %(env)s",
                                       self.session.key_params, doing="reading the state")
        now = f"revision {current[0][0]}, serial {current[0][1]}" if current else "no state"
        raise StaleStateError(
            f"the state {self.url.display} changed since this run read it (read at revision {expected_revision}, "
            f"now {now})", hint="another writer changed it: review `hybridctl status`, then run the command again")

    def remove_torn_writes(self) -> None:
        """Nothing to do: a transaction is never torn."""

    def read_document(self, name: str) -> str | None:
        rows = self.session.execute("SELECT body FROM hybridctl_document WHERE environment = %(env)s AND name = %(name)s",
                                    {**self.session.key_params, "name": check_document_name(name)},
                                    doing=f"reading {name}")
        return str(rows[0][0]) if rows else None

    def write_document(self, name: str, text: str) -> None:
        rows = self.session.execute(
            "INSERT INTO hybridctl_document (environment, name, body) SELECT %(env)s, %(name)s, %(body)s WHERE "
            + _HOLDS_LOCK.format(pid="pg_backend_pid()") + " ON CONFLICT (environment, name) DO UPDATE "
            "SET body = excluded.body, updated_at = now() RETURNING 1",
            {**self.session.key_params, "name": check_document_name(name), "body": text}, doing=f"writing {name}")
        if not rows:
            raise LockLostError(f"the state {self.url.display} is not locked by this run: writing {name} is refused",
                                hint="run the same command again")

    def remove_document(self, name: str) -> None:
        self.session.execute("DELETE FROM hybridctl_document WHERE environment = %(env)s AND name = %(name)s AND "
                             + _HOLDS_LOCK.format(pid="pg_backend_pid()"),
                             {**self.session.key_params, "name": check_document_name(name)}, doing=f"removing {name}")

    def document_names(self) -> list[str]:
        rows = self.session.execute("SELECT name FROM hybridctl_document WHERE environment = %(env)s ORDER BY name",
                                    self.session.key_params, doing="listing the state's documents")
        return [str(row[0]) for row in rows]

    def close(self) -> None:
        self.session.close()


def _int(value: object) -> int:
    if not isinstance(value, int):
        raise TypeError(f"expected an integer from the state database, got {type(value).__name__}")
    return value


def _json(value: object) -> Any:
    return json.loads(value) if isinstance(value, str | bytes) else value
