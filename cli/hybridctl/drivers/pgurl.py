"""A PostgreSQL state URL: what to connect to, which environment, and how to show it safely.

    postgresql://[user[:password]@]host[:port]/dbname[?sslmode=…&environment=NAME]

`environment` (default `default`) is hybridctl's, not libpq's: it is taken out before the
rest goes to libpq, which also reads its own environment variables (PGHOST, PGUSER,
PGPASSWORD, PGSSLMODE, …) and ~/.pgpass. The password is never shown: `display` leaves it
out, and `redact` removes it from any text (a driver's error message, say).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from hybridctl.errors import UsageError

ENVIRONMENT_PARAM = "environment"
DEFAULT_ENVIRONMENT = "default"
WORK_DIR_ENV = "HYBRIDCTL_WORK_DIR"
DEFAULT_WORK_ROOT = Path(".hybridctl") / "work"
_ENVIRONMENT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


@dataclass(frozen=True)
class StateUrl:
    conninfo: str  # for libpq: the URL less the environment parameter (may hold a password)
    environment: str
    display: str  # for people: no password
    option: str  # what to pass to --state to reach the same state again: no password either
    password: str  # only so that `redact` can remove it from messages

    @staticmethod
    def parse(url: str) -> StateUrl:
        try:
            parts = urlsplit(url)
            query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
            _ = parts.port  # a malformed port raises here rather than in libpq
        except ValueError as exc:
            raise UsageError(f"--state: not a valid postgresql:// URL ({exc})",
                             hint="write e.g. postgresql://user@db.example.com:5432/hybridctl?environment=prod") from None
        environments = [v for k, v in query if k == ENVIRONMENT_PARAM]
        environment = environments[-1] if environments else DEFAULT_ENVIRONMENT
        if not _ENVIRONMENT.fullmatch(environment):
            raise UsageError(f"--state: environment {environment!r} is not a valid name",
                             hint="use letters, digits, '.', '_' and '-' (at most 63), starting with a letter or digit")
        rest = [(k, v) for k, v in query if k != ENVIRONMENT_PARAM]
        conninfo = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(rest), ""))
        host = parts.hostname or ""
        netloc = (f"{unquote(parts.username)}@" if parts.username else "") + host \
            + (f":{parts.port}" if parts.port else "")
        shown = [(k, v) for k, v in rest if k.lower() not in ("password", "sslpassword")]
        display = urlunsplit((parts.scheme, netloc, parts.path, urlencode(shown, safe="/"), ""))
        option = urlunsplit((parts.scheme, netloc, parts.path,
                             urlencode([*shown, *([(ENVIRONMENT_PARAM, environment)] if environments else [])], safe="/"), ""))
        return StateUrl(conninfo, environment, f"{display} (environment {environment})", option,
                        unquote(parts.password or ""))

    def redact(self, text: str) -> str:
        for secret in {self.password, os.environ.get("PGPASSWORD", "")}:
            if secret:
                text = text.replace(secret, "********")
        return text

    def work_dir(self, env: Mapping[str, str]) -> Path:
        """Where this machine keeps the working files that stay local (see README, "Team state")."""
        base = Path(env[WORK_DIR_ENV]) if env.get(WORK_DIR_ENV) else DEFAULT_WORK_ROOT
        return (base / self.environment).resolve()
