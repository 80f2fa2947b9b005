"""Failover event arguments at their limits and with one bad character after a valid prefix (issue 45
item 8): a price up to $10,000 per GPU-hour (the inventory's most) and a factor up to 10,000, a capacity up
to 1,000,000 GPUs (a pool's most) and 100 %; one past each is a usage error. A planted `<` for `<=`, or a
pattern that matches a prefix only, fails here. (A newline inside an argument is item 7's, elsewhere.)"""

from __future__ import annotations

import pytest
from hybridctl.core.failover.events import EventSyntaxError, parse_event

AT_THE_LIMIT = [("price", "p1=10000", 10_000.0), ("price", "p1=$10000", 10_000.0), ("price", "p1=x10000", 10_000.0),
                ("price", "p1=0", 0.0), ("price", "p1=x0.001", 0.001),
                ("capacity", "p1=1000000", 1_000_000.0), ("capacity", "p1=-1000000", 1_000_000.0),
                ("capacity", "p1=100%", 100.0), ("capacity", "p1=-100%", 100.0), ("capacity", "p1=0", 0.0)]
ONE_PAST = [("price", "p1=10000.01"), ("price", "p1=$10000.01"), ("price", "p1=x10000.01"), ("price", "p1=x0"),
            ("capacity", "p1=1000001"), ("capacity", "p1=-1000001"), ("capacity", "p1=100.01%"),
            ("capacity", "p1=-100.01%"), ("capacity", "p1=2.5")]


@pytest.mark.parametrize(("kind", "argument", "amount"), AT_THE_LIMIT)
def test_at_the_limit_is_an_event(kind: str, argument: str, amount: float) -> None:
    event = parse_event(kind, argument)
    assert (event.target, event.amount) == ("p1", amount)


@pytest.mark.parametrize(("kind", "argument"), ONE_PAST)
def test_one_past_the_limit_is_refused(kind: str, argument: str) -> None:
    with pytest.raises(EventSyntaxError):
        parse_event(kind, argument)


VALID = {"price": ["p1=2.5", "p1=x1.5", "p1=$3"], "capacity": ["p1=4", "p1=50%", "p1=-8", "p1=-25%"]}
SUFFIXES = ["x", "%", "%%", "$", " ", "=", "=1", ".5.5", "e3", "\x1b", "/", ";rm"]


@pytest.mark.parametrize("kind", sorted(VALID))
@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_valid_argument_with_a_bad_suffix_is_refused(kind: str, suffix: str) -> None:
    for argument in VALID[kind]:
        if kind == "capacity" and suffix == "%" and not argument.endswith("%"):
            continue  # 4% is a valid capacity
        with pytest.raises(EventSyntaxError):
            parse_event(kind, argument + suffix)
