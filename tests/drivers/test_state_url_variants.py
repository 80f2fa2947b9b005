"""State URLs that begin valid and hide a variant (issue 45 item 8): a secret parameter in another case
or spelling, a repeated `environment=`, an environment name with one bad character after a valid
prefix. A planted `k == "password"` (for a case-blind test), a first-wins environment, or a `.match`
for `.fullmatch` each fails here."""

from __future__ import annotations

import pytest
from hybridctl.drivers.pgurl import MASK, StateUrl, masked
from hybridctl.errors import UsageError

SECRET = "s3cretPW"
BASE = "postgresql://ops@db.example.com:5432/hctl"
SPELLINGS = ["password", "Password", "PASSWORD", "passWord", "sslpassword", "SSLPassword", "sslPASSWORD",
             "pass%77ord", "%50ASSWORD", "password+", "+password", "password%20", "ssl%70assword"]


@pytest.mark.parametrize("key", SPELLINGS)
def test_a_secret_parameter_in_any_case_or_spelling_is_never_shown(key: str) -> None:
    url = StateUrl.parse(f"{BASE}?sslmode=require&{key}={SECRET}&environment=prod")
    for shown in (url.display, url.option, url.redact(f"libpq: failed with {key}={SECRET}")):
        assert SECRET not in shown, shown
    assert "sslmode=require" in url.display


@pytest.mark.parametrize("key", SPELLINGS)
def test_masked_hides_it_in_a_url_that_does_not_parse(key: str) -> None:
    text = masked(f"postgresql://ops@db:54x32/hctl?{key}={SECRET}&environment=prod")
    assert SECRET not in text and MASK in text, text
    with pytest.raises(UsageError) as refused:
        StateUrl.parse(f"postgresql://ops@db:54x32/hctl?{key}={SECRET}")
    assert SECRET not in refused.value.message + (refused.value.hint or "")


@pytest.mark.parametrize("around", [" ", "  ", "\t"])
def test_masked_hides_the_password_of_a_url_with_spaces_around_it(around: str) -> None:
    text = masked(f"{around}postgresql://ops:{SECRET}@db/hctl{around}")
    assert SECRET not in text and f"ops:{MASK}@db" in text, text


def test_two_secret_parameters_are_both_masked() -> None:
    text = masked(f"postgresql://db:5x/h?password={SECRET}&Password=other{SECRET}")
    assert SECRET not in text and text.count(MASK) == 2


def test_a_repeated_environment_parameter_takes_the_last_as_libpq_does() -> None:
    url = StateUrl.parse(f"{BASE}?environment=staging&sslmode=require&environment=prod")
    assert url.environment == "prod"
    assert "environment" not in url.conninfo  # hybridctl's own parameter never reaches libpq
    assert url.option.count("environment=") == 1 and url.option.endswith("environment=prod")
    assert StateUrl.parse(url.option).environment == "prod"  # the option reaches the same state again


def test_a_repeated_environment_is_checked_whichever_comes_first() -> None:
    with pytest.raises(UsageError, match="not a valid name"):
        StateUrl.parse(f"{BASE}?environment=prod&environment=pr/od")


@pytest.mark.parametrize("bad", ["/", "\\", "%20", "!", "é", "%0A", ":", "%2F", "..%2F"])
def test_an_environment_with_a_valid_prefix_and_one_bad_character_is_refused(bad: str) -> None:
    with pytest.raises(UsageError, match="not a valid name"):
        StateUrl.parse(f"{BASE}?environment=prod{bad}")


@pytest.mark.parametrize(("name", "valid"), [("e" * 63, True), ("e" * 64, False), ("p", True), ("-p", False),
                                             (".p", False), ("p.-_9", True)])
def test_environment_name_length_and_first_character(name: str, valid: bool) -> None:
    if valid:
        assert StateUrl.parse(f"{BASE}?environment={name}").environment == name
    else:
        with pytest.raises(UsageError, match="not a valid name"):
            StateUrl.parse(f"{BASE}?environment={name}")


def test_an_empty_environment_is_refused_not_taken_for_the_default() -> None:
    with pytest.raises(UsageError, match="not a valid name"):
        StateUrl.parse(f"{BASE}?environment=")


def test_redact_puts_the_mask_where_each_secret_was() -> None:
    url = StateUrl.parse(f"postgresql://ops:{SECRET}@db/hctl?sslpassword=other{SECRET}")
    assert url.redact(f"a {SECRET} b other{SECRET} c") == f"a {MASK} b {MASK} c"


def test_the_display_keeps_a_socket_directory_readable() -> None:
    url = StateUrl.parse("postgresql://ops@/hctl?host=/tmp/hctl-pg&environment=prod")
    assert url.display == "postgresql://ops@/hctl?host=/tmp/hctl-pg (environment prod)"


@pytest.mark.parametrize("text", ["postgresql://", "postgresql:///", "postgresql:"])
def test_masked_takes_a_url_of_nothing_but_its_scheme(text: str) -> None:
    assert masked(text) == text
