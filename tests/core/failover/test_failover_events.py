"""The event grammar, shared by the command line and scenario files."""

from __future__ import annotations

import pytest
from failover_helpers import cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.events import (
    Event,
    EventKind,
    EventSyntaxError,
    check_events,
    parse_event,
    parse_events,
)
from hybridctl.errors import ExitCode


@pytest.fixture(scope="module")
def small():
    return inventory(
        [onprem("dc-a", [pool("a-l4", "L4", 8, 1.0)]),
         cloud("aws", [cloud_pool("aws-g6-spot", "L4", "g6.xlarge", 8, 0.3, "spot")])],
        [workload("web", "realtime_inference", ["L4"])])


class TestParse:
    def test_every_kind_in_its_simplest_form(self) -> None:
        events = parse_events(["site-lost", "dc-a", "pool-lost", "a-l4", "spot-reclaim", "aws-g6-spot",
                               "link-down", "dc-a"])
        assert [(e.kind, e.target) for e in events] == [
            (EventKind.SITE_LOST, "dc-a"), (EventKind.POOL_LOST, "a-l4"), (EventKind.SPOT_RECLAIM, "aws-g6-spot"),
            (EventKind.LINK_DOWN, "dc-a")]

    def test_quoted_events_are_split(self) -> None:
        assert parse_events(["site-lost dc-a", "capacity a-l4=2"]) == parse_events(["site-lost", "dc-a", "capacity",
                                                                                    "a-l4=2"])

    @pytest.mark.parametrize(("argument", "gpus_before", "gpus_after"), [
        ("p=2", 8, 2), ("p=50%", 8, 4), ("p=-50%", 8, 4), ("p=-3", 8, 5), ("p=25%", 6, 1), ("p=-100%", 8, 0),
        ("p=0", 8, 0), ("p=-10", 8, 0),
    ])
    def test_capacity_keeps_or_loses_gpus_and_rounds_down(self, argument: str, gpus_before: int,
                                                          gpus_after: int) -> None:
        assert parse_event("capacity", argument).capacity_after(gpus_before) == gpus_after

    @pytest.mark.parametrize(("argument", "before", "after"), [
        ("p=x3", 2.0, 6.0), ("p=×1.5", 2.0, 3.0), ("p=*2", 1.25, 2.5), ("p=7.35", 2.0, 7.35), ("p=$0.5", 2.0, 0.5),
    ])
    def test_price_multiplies_or_sets(self, argument: str, before: float, after: float) -> None:
        assert parse_event("price", argument).price_after(before) == pytest.approx(after)

    def test_canonical_text_round_trips(self) -> None:
        for text in ("capacity p=-50%", "capacity p=3", "price p=x3", "price p=2.5", "site-lost s", "link-down s"):
            kind, argument = text.split()
            assert str(parse_event(kind, argument)) == text

    @pytest.mark.parametrize(("words", "message"), [
        (["site-lots", "dc-a"], "did you mean 'site-lost'"),
        (["capacity", "a-l4"], "capacity h100-reserved=50%"),
        (["capacity", "a-l4=150%"], "above 100 %"),
        (["capacity", "a-l4=1.5"], "whole numbers"),
        (["price", "a-l4=x0"], "above 0"),
        (["price", "a-l4"], "price p5-spot=x3"),
        (["site-lost", "dc-a=3"], "site-lost dc-frankfurt"),
        (["site-lost"], "needs an argument"),
        ([], "no event given"),
    ])
    def test_syntax_errors_are_usage_errors_with_an_example(self, words: list[str], message: str) -> None:
        with pytest.raises(EventSyntaxError) as caught:
            parse_events(words)
        assert caught.value.exit_code is ExitCode.USAGE
        assert message in caught.value.message + (caught.value.hint or "")

    def test_the_failing_event_is_numbered(self) -> None:
        with pytest.raises(EventSyntaxError, match="event 2: 'capacity x' is malformed"):
            parse_events(["site-lost", "dc-a", "capacity", "x"])


class TestAgainstInventory:
    def test_known_targets_pass(self, small) -> None:
        check_events(parse_events(["site-lost dc-a", "capacity a-l4=50%", "spot-reclaim aws-g6-spot"]), small)

    def test_unknown_site_suggests_the_closest(self, small) -> None:
        with pytest.raises(EventSyntaxError, match="no site named 'dc-b'") as caught:
            check_events([Event(EventKind.SITE_LOST, "dc-b")], small)
        assert caught.value.hint == "did you mean 'dc-a'?"

    def test_a_pool_is_not_a_site(self, small) -> None:
        with pytest.raises(EventSyntaxError, match=r"a-l4 is a pool \(of site dc-a\), not a site"):
            check_events([Event(EventKind.LINK_DOWN, "a-l4")], small)

    def test_spot_reclaim_needs_a_spot_pool(self, small) -> None:
        with pytest.raises(EventSyntaxError, match="a-l4 is reserved capacity, not spot") as caught:
            check_events(parse_events(["spot-reclaim a-l4"]), small)
        assert "pool-lost a-l4" in (caught.value.hint or "")


@pytest.mark.parametrize("kind", ["site-lost", "link-down"])
def test_a_pools_name_in_a_site_event_suggests_pool_lost(small, kind: str) -> None:  # issue 46, item 8
    with pytest.raises(EventSyntaxError) as raised:
        check_events(parse_events([f"{kind} a-l4"]), small)
    assert "a-l4 is a pool (of site dc-a), not a site" in raised.value.message
    assert "`pool-lost a-l4`" in (raised.value.hint or "") and f"`{kind} dc-a`" in (raised.value.hint or "")
