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
from urllib.parse import parse_qsl, unquote, unquote_plus, urlencode, urlsplit

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
    secrets: tuple[str, ...]  # the password and password parameters: only so that `redact` can remove them

    @staticmethod
    def parse(url: str) -> StateUrl:
        """The one parser of state URLs: a valid postgresql:// (or postgres://) URL, or a UsageError whose
        message shows the URL with its password masked. `looks_like_url` says which texts come here."""
        _check_form(url)
        try:
            parts = urlsplit(url)
            query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
            _ = parts.port  # a malformed port raises here rather than in libpq
        except ValueError as exc:  # its words may quote a part of the password: ours say what is wrong
            raise UsageError(f"--state {masked(url)}: not a valid postgresql:// URL ({_why(str(exc))})",
                             hint=f"{ENCODE_HINT}; {URL_HINT}") from None
        if "@" in parts.path:  # `postgresql:///user:pw@host/db`: a user (and password) where the database goes
            raise UsageError(f"--state {masked(url)}: an '@' after the host, in the database name",
                             hint=f"a user and password go before the host: postgresql://user@host/db; {ENCODE_HINT}")
        environments = [v for k, v in query if k == ENVIRONMENT_PARAM]
        environment = environments[-1] if environments else DEFAULT_ENVIRONMENT
        if not _ENVIRONMENT.fullmatch(environment):
            raise UsageError(f"--state: environment {environment!r} is not a valid name",
                             hint="use letters, digits, '.', '_' and '-' (at most 63), starting with a letter or digit")
        rest = [(k, v) for k, v in query if k != ENVIRONMENT_PARAM]
        conninfo = _unsplit(parts.scheme, parts.netloc, parts.path, urlencode(rest))
        host = parts.hostname or ""
        netloc = (f"{unquote(parts.username)}@" if parts.username else "") + host \
            + (f":{parts.port}" if parts.port else "")
        shown = [(k, v) for k, v in rest if not _is_secret(k)]
        display = _unsplit(parts.scheme, netloc, parts.path, urlencode(shown, safe="/"))
        option = _unsplit(parts.scheme, netloc, parts.path,
                          urlencode([*shown, *([(ENVIRONMENT_PARAM, environment)] if environments else [])], safe="/"))
        secrets = (unquote(parts.password or ""), *(v for k, v in rest if _is_secret(k)))
        return StateUrl(conninfo, environment, f"{display} (environment {environment})", option,
                        tuple(s for s in secrets if s))

    def redact(self, text: str) -> str:
        for secret in sorted({*self.secrets, os.environ.get("PGPASSWORD", "")}, key=len, reverse=True):
            if secret:
                text = text.replace(secret, "********")
        return text

    def work_dir(self, env: Mapping[str, str]) -> Path:
        """Where this machine keeps the working files that stay local (see README, "Team state")."""
        base = Path(env[WORK_DIR_ENV]) if env.get(WORK_DIR_ENV) else DEFAULT_WORK_ROOT
        return (base / self.environment).resolve()


URL_HINT = "write e.g. postgresql://user@db.example.com:5432/hybridctl?environment=prod (the password in PGPASSWORD or ~/.pgpass)"
DATABASE_SCHEMES = ("postgresql", "postgres")
# What --state takes for a URL rather than a directory: a scheme (`word:`) then a slash, any case,
# spaces around it or not. `postgresql:/x`, `POSTGRESQL://…`, ` postgresql://…` and `postgresql+psycopg://…`
# are all URLs, mistyped: refused, never taken for a directory whose name holds the password. A
# directory that really is called so is reached as ./NAME.
_URL_LIKE = re.compile(r"\s*[A-Za-z][A-Za-z0-9+.-]*:/")
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
# A query parameter, its name as typed: whether it is a secret is decided on the name decoded
# (`pass%77ord`, `PASSWORD`, `password+` are all spellings of it that a message must not show).
_QUERY_PARAM = re.compile(r"((?:^|[?&;])([^=&#;?]*)=)([^&#;]*)")
_SECRET_NAMES = ("password", "sslpassword")
MASK = "********"
ENCODE_HINT = "percent-encode / @ : ? # and spaces in a user name or password (%2F %40 %3A %3F %23 %20)"


def looks_like_url(text: str) -> bool:
    return bool(_URL_LIKE.match(text))


def _check_form(url: str) -> None:
    """What urlsplit accepts but is no state URL: spaces around it, another scheme, one slash."""
    if url != url.strip():
        raise UsageError(f"--state {masked(url)!r}: spaces before or after the URL",
                         hint="remove them (a quoted value keeps the spaces it is given)")
    scheme = _SCHEME.match(url)
    assert scheme is not None  # looks_like_url
    name = scheme.group(1)
    if name.lower() not in DATABASE_SCHEMES:
        raise UsageError(f"--state {masked(url)}: {name}:// is not a state URL: the state is a directory or a "
                         "postgresql:// URL", hint=f"{URL_HINT}; a directory of that name is ./{masked(url)}")
    if not url[len(name) + 1:].startswith("//"):
        raise UsageError(f"--state {masked(url)}: a URL starts with {name.lower()}:// (two slashes)", hint=URL_HINT)
    if any(ord(c) < 0x20 or c == "\x7f" or c.isspace() for c in url):
        raise UsageError(f"--state {masked(url)!r}: spaces or control characters in the URL",
                         hint=f"{ENCODE_HINT}; {URL_HINT}")


def masked(url: str) -> str:
    """The URL as typed, with the password (userinfo after its first ':', and password= parameters)
    masked: for messages about a URL that may not parse."""
    return _masked(url)[0]


def _masked(url: str) -> tuple[str, list[str]]:
    """masked(url), and the secrets it masked. The user information is everything up to the last '@',
    wherever slashes or '?' put it: in a mistyped URL a password may hold either, and a message may
    hide a little more than the password, never less."""
    secrets: list[str] = []
    head, rest = _after_scheme(url)
    if "@" in rest:
        userinfo, host = rest.rsplit("@", 1)
        if ":" in userinfo:
            user, secret = userinfo.split(":", 1)
            secrets.append(secret)
            userinfo = f"{user}:{MASK}"
        rest = f"{userinfo}@{host}"

    def param(match: re.Match[str]) -> str:
        if not _is_secret(match.group(2)):
            return match.group(0)
        secrets.append(match.group(3))
        return match.group(1) + MASK

    return head + _QUERY_PARAM.sub(param, rest), [s for s in secrets if s]


def _is_secret(name: str) -> bool:
    """A password parameter in any case and spelling: the name decoded (parse_qsl's, with `+` a space),
    spaces around it ignored."""
    return unquote_plus(name).strip().lower() in _SECRET_NAMES


def _after_scheme(url: str) -> tuple[str, str]:
    scheme = _SCHEME.match(url.lstrip())
    cut = (len(url) - len(url.lstrip())) + (scheme.end() if scheme else 0)
    while cut < len(url) and url[cut] == "/":
        cut += 1
    return url[:cut], url[cut:]


def _unsplit(scheme: str, netloc: str, path: str, query: str) -> str:
    """urlunsplit, but `//` always follows the scheme: `postgresql:///db` (no host: the local socket)
    stays a URL libpq reads, where urlunsplit would drop the slashes of an empty host."""
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _why(message: str) -> str:
    if message.startswith("Port"):
        return "the port is not a number from 0 to 65535"
    if "IPv6" in message:
        return "a [ without its ] around the host, or the reverse"
    if "query" in message:
        return "a query parameter that is not NAME=VALUE"
    return "it cannot be parsed"
