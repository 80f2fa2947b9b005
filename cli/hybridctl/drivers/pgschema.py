"""Connecting to the PostgreSQL state database, and its versioned schema.

Migrations are numbered and applied in order, once, by the first hybridctl that finds the
database behind: in one transaction, under a transaction-level advisory lock so that two
first uses at once do not both apply them. A database whose schema is newer than this
hybridctl knows is refused rather than written.

Connection problems (wrong password, unreachable host, lost connection) become one
StateDatabaseError, exit 2, with the password removed from whatever the driver said.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from hybridctl.drivers.pgurl import StateUrl
from hybridctl.errors import PrerequisiteError

if TYPE_CHECKING:
    import psycopg

CONNECT_TIMEOUT_S = 10
_SCHEMA_LOCK_KEY = 0x6879627269646374  # "hybridct": serializes migrations across clients

MIGRATIONS: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (1, "state, journal and lock holder tables", (
        """CREATE TABLE hybridctl_state (
               environment text PRIMARY KEY,
               revision bigint NOT NULL,
               serial bigint NOT NULL,
               document jsonb NOT NULL,
               updated_at timestamptz NOT NULL DEFAULT now())""",
        """CREATE TABLE hybridctl_journal (
               environment text NOT NULL,
               seq bigint NOT NULL,
               record jsonb NOT NULL,
               written_at timestamptz NOT NULL DEFAULT now(),
               PRIMARY KEY (environment, seq))""",
        """CREATE FUNCTION hybridctl_journal_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
           BEGIN RAISE EXCEPTION 'the hybridctl journal is append-only'; END $$""",
        """CREATE TRIGGER hybridctl_journal_append_only BEFORE UPDATE OR DELETE ON hybridctl_journal
           FOR EACH ROW EXECUTE FUNCTION hybridctl_journal_append_only()""",
        """CREATE TABLE hybridctl_lock_holder (
               environment text PRIMARY KEY,
               holder jsonb NOT NULL,
               backend_pid integer NOT NULL)""",
    )),
    (2, "documents kept with the state (runbooks)", (
        """CREATE TABLE hybridctl_document (
               environment text NOT NULL,
               name text NOT NULL,
               body text NOT NULL,
               updated_at timestamptz NOT NULL DEFAULT now(),
               PRIMARY KEY (environment, name))""",
    )),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


class StateDatabaseError(PrerequisiteError):
    """The state database cannot be reached or used: an environment problem (exit 2), never a bug."""


def lock_key(environment: str) -> int:
    """The advisory lock key of an environment: 63 bits of a hash of its name."""
    digest = hashlib.sha256(f"hybridctl-state:{environment}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def connect(url: StateUrl) -> psycopg.Connection[tuple[object, ...]]:
    try:
        import psycopg
    except ImportError:
        raise StateDatabaseError("a postgresql:// state needs the psycopg package",
                                 hint="pip install 'psycopg[binary]' (it is a dependency of hybridctl)") from None
    try:
        return psycopg.connect(url.conninfo, autocommit=True, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name="hybridctl")
    except psycopg.Error as exc:
        raise StateDatabaseError(
            f"cannot connect to the state database {url.display}: {url.redact(_first_line(exc))}",
            hint="check the host, port, database and user in --state / HYBRIDCTL_STATE, and the password "
                 "(from the URL, PGPASSWORD or ~/.pgpass); sslmode=… in the URL sets TLS") from None


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return "; ".join(lines[:3]) or type(exc).__name__


@contextlib.contextmanager
def database_errors(url: StateUrl, doing: str) -> Iterator[None]:
    """Turn the driver's errors into a StateDatabaseError that says what to do next."""
    import psycopg

    try:
        yield
    except psycopg.OperationalError as exc:
        raise StateDatabaseError(
            f"lost the state database {url.display} while {doing}: {url.redact(_first_line(exc))}",
            hint="the database released this run's lock; once it is reachable, run the same command again: "
                 "finished steps are not repeated") from None
    except psycopg.Error as exc:
        raise StateDatabaseError(f"the state database {url.display} refused {doing}: {url.redact(_first_line(exc))}",
                                 hint="check that the database user may create and write tables in its schema") from None


def ensure_schema(connection: psycopg.Connection[tuple[object, ...]], url: StateUrl,
                  notify: Callable[[str], None] | None) -> None:
    """Bring the schema to SCHEMA_VERSION, saying so; refuse a schema newer than this hybridctl."""
    with database_errors(url, "checking its schema"):
        if _version(connection) == SCHEMA_VERSION:
            return
        with connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK_KEY,))
            connection.execute("""CREATE TABLE IF NOT EXISTS hybridctl_schema_version (
                                      version integer PRIMARY KEY, description text NOT NULL,
                                      applied_at timestamptz NOT NULL DEFAULT now())""")
            current = _version(connection)
            if current > SCHEMA_VERSION:
                raise StateDatabaseError(
                    f"the state database {url.display} has schema version {current}, newer than this "
                    f"hybridctl knows ({SCHEMA_VERSION})", hint="upgrade hybridctl to use this database")
            for version, description, statements in MIGRATIONS:
                if version <= current:
                    continue
                if notify is not None:
                    notify(f"state database {url.display}: applying schema migration {version} ({description})")
                for statement in statements:
                    connection.execute(statement.encode())
                connection.execute("INSERT INTO hybridctl_schema_version (version, description) VALUES (%s, %s)",
                                   (version, description))


def _version(connection: psycopg.Connection[tuple[object, ...]]) -> int:
    row = connection.execute("SELECT to_regclass('hybridctl_schema_version') IS NOT NULL").fetchone()
    if not row or not row[0]:
        return 0
    found = connection.execute("SELECT coalesce(max(version), 0) FROM hybridctl_schema_version").fetchone()
    return int(found[0]) if found else 0  # type: ignore[call-overload]
