"""State URLs (issue 34, finding 7): one parser. Whatever has a URL scheme (`word:` then `/`, any case, spaces
around it or not) is a valid postgresql:// URL or a usage error (exit 2) whose message masks the password;
it never becomes a local state directory whose name holds the password.

Hostile cases tried: one slash (`postgresql:/…`, `postgres:/x`), a leading or trailing space, another scheme
(`postgresql+psycopg://`, `mysql://`, `http://`, `C:/`), a password holding `/` (userinfo split by urlsplit
at the slash), a bad port, a password= parameter, spaces and control characters inside; upper-case schemes
are valid. Fuzz: any text around a secret password, at the parser (no connection is made).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hybridctl.drivers.pgurl import StateUrl, looks_like_url, masked
from hybridctl.drivers.state import is_database_url, open_state, resolve_state_dir
from hybridctl.errors import ExitCode, UsageError
from hypothesis import given, settings
from hypothesis import strategies as st
from support.inproc import run_cli

SECRET = "s3cretPW"

MISTYPED = [
    (f"postgresql:/ops:{SECRET}@db.example.com/hctl", "a URL starts with postgresql:// (two slashes)"),
    ("postgres:/x", "a URL starts with postgres:// (two slashes)"),
    (f" postgresql://ops:{SECRET}@db.example.com/hctl", "spaces before or after the URL"),
    (f"postgresql://ops:{SECRET}@db.example.com/hctl ", "spaces before or after the URL"),
    (f"postgresql+psycopg://ops:{SECRET}@db.example.com/hctl", "postgresql+psycopg:// is not a state URL"),
    (f"mysql://ops:{SECRET}@db/hctl", "mysql:// is not a state URL"),
    (f"http://ops:{SECRET}@db/hctl", "http:// is not a state URL"),
    (f"POSTGRESQL:/ops:{SECRET}@db/hctl", "a URL starts with postgresql:// (two slashes)"),
    (f"postgresql://ops:{SECRET}/x@db:5432/hctl", "the port is not a number"),
    (f"postgresql://ops:{SECRET}@db:54x32/hctl", "the port is not a number"),
    (f"postgresql://db/hctl?password={SECRET}&x", "a query parameter that is not NAME=VALUE"),
    (f"postgresql://ops:{SECRET}@db/hc tl", "spaces or control characters in the URL"),
    (f"postgresql://ops:{SECRET}@db/hctl\n", "spaces before or after the URL"),
]


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYBRIDCTL_STATE", raising=False)
    monkeypatch.delenv("PGPASSWORD", raising=False)


@pytest.mark.parametrize(("url", "words"), MISTYPED)
def test_a_mistyped_url_is_a_usage_error_that_masks_the_password(tmp_path: Path, url: str, words: str) -> None:
    """It was a directory: `status` said "nothing has been applied with the state in ./postgresql:/ops:s3cretPW@…"."""
    with pytest.raises(UsageError) as caught:
        open_state(url)
    error = caught.value
    assert error.exit_code == ExitCode.USAGE and words in error.message
    assert SECRET not in error.message + (error.hint or "")
    assert "********" in error.message or "@" not in url
    assert list(tmp_path.iterdir()) == []  # no directory made of it


@pytest.mark.parametrize(("url", "words"), MISTYPED[:6])
def test_on_the_cli_too_and_through_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str,
                                                    words: str) -> None:
    for args in (("status", "--no-drift", "--state", url), ("status", "--no-drift")):
        if len(args) == 2:
            monkeypatch.setenv("HYBRIDCTL_STATE", url)
        result = run_cli(*args)
        assert result.code == 2, result.output
        assert SECRET not in result.output and words in " ".join(result.output.split()), result.output
        assert "Traceback" not in result.output
        assert [line for line in result.output.splitlines() if line.startswith("error:")] == \
            [result.output.splitlines()[0]], result.output  # one message, and nothing before it
    assert list(tmp_path.iterdir()) == []


def test_an_upper_case_scheme_is_a_url_and_reaches_libpq_in_lower_case() -> None:
    url = StateUrl.parse(f"POSTGRESQL://ops:{SECRET}@db.example.com/hctl?environment=prod")
    assert url.conninfo == f"postgresql://ops:{SECRET}@db.example.com/hctl" and url.environment == "prod"
    assert SECRET not in url.display + url.option


def test_a_url_without_a_host_keeps_its_slashes_for_libpq() -> None:
    """`postgresql:///db` (the local socket) lost its `//` on the way to libpq, which then refused it."""
    url = StateUrl.parse("postgresql:///hctl?host=/run/postgresql")
    assert url.conninfo.startswith("postgresql:///hctl?") and url.option == "postgresql:///hctl?host=/run/postgresql"


@pytest.mark.parametrize("path", ["state", "./postgresql:/x", "a/b:c", "/abs/state", "x:y", "-", "state dir"])
def test_directories_stay_directories(tmp_path: Path, path: str) -> None:
    assert not is_database_url(path)
    assert resolve_state_dir(path, {}) == (tmp_path / path).resolve()


def test_masking_finds_the_password_wherever_the_slashes_put_it() -> None:
    assert masked(f"postgresql:/u:{SECRET}@h/d") == "postgresql:/u:********@h/d"
    assert masked(f"postgresql://u:{SECRET}/more@h:1/d?sslmode=require") == "postgresql://u:********@h:1/d?sslmode=require"
    assert masked(f"postgresql://h/d?a=1&password={SECRET}&sslpassword={SECRET}") == \
        "postgresql://h/d?a=1&password=********&sslpassword=********"
    assert masked("postgresql://u@h/d") == "postgresql://u@h/d"


@settings(max_examples=300, deadline=None)
@given(scheme=st.sampled_from(["postgresql", "postgres", "POSTGRES", "Postgresql", "postgresql+psycopg", "pg", "C"]),
       colon_slashes=st.sampled_from([":/", "://", ":///", ": //"]),
       user=st.text(alphabet="abc@:/?# %", max_size=5), password=st.text(alphabet="xyzXYZ019/@:?#% ", min_size=6,
                                                                          max_size=12),
       host=st.sampled_from(["db", "db:5432", "db:x", "[::1]", "[::1", ""]), rest=st.text(max_size=12),
       space=st.sampled_from(["", " ", "\t"]))
def test_fuzz_urls_never_show_their_password(scheme: str, colon_slashes: str, user: str, password: str, host: str,
                                             rest: str, space: str) -> None:
    secret = "Q" + password + "Q"  # never a substring of the rest of the URL
    url = f"{space}{scheme}{colon_slashes}{user}:{secret}@{host}/{rest}"
    if not looks_like_url(url):
        assert colon_slashes == ": //"
        return
    try:
        parsed = StateUrl.parse(url)
    except UsageError as exc:
        assert exc.exit_code == ExitCode.USAGE
        assert secret not in exc.message + (exc.hint or ""), exc.message
        return
    assert parsed.conninfo.startswith(("postgresql://", "postgres://")) and not space
    assert secret not in parsed.display + parsed.option
    assert os.sep not in parsed.environment
