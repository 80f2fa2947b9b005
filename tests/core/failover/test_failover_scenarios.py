"""Scenario files (every error at its file and line) and the built-in standard scenarios."""

from __future__ import annotations

import textwrap

import pytest
from failover_helpers import cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.events import EventKind
from hybridctl.core.failover.scenario import (
    ScenarioError,
    check_scenarios,
    parse_scenario_file,
    standard_scenarios,
)
from hybridctl.core.inventory.yamlsource import YamlError
from hybridctl.errors import ExitCode


@pytest.fixture
def inv():
    return inventory(
        [onprem("dc-a", [pool("a-h100", "H100", 8, 2.0), pool("a-l4", "L4", 8, 0.5)]),
         onprem("edge-1", [pool("e1-l4", "L4", 2, 0.6)], kind="edge"),
         onprem("edge-2", [pool("e2-l4", "L4", 2, 0.6)], kind="edge"),
         cloud("aws", [cloud_pool("p5-spot", "H100", "p5.48xlarge", 16, 2.5, "spot"),
                       cloud_pool("g6-spot", "L4", "g6.xlarge", 16, 0.3, "spot"),
                       cloud_pool("g6-od", "L4", "g6.xlarge", 16, 0.8, "on_demand")])],
        [workload("web", "realtime_inference", ["L4"])])


def parse(text: str) -> list:
    return parse_scenario_file(textwrap.dedent(text).lstrip(), "drills.yaml")[0]


class TestFile:
    def test_strings_and_one_key_mappings(self, inv) -> None:
        scenarios = parse("""
            version: 1
            scenarios:
              - name: dark-dc
                description: the data centre loses power
                events:
                  - site-lost dc-a
                  - capacity: g6-od=25%
              - name: pricey
                events: [price p5-spot=x3]
            """)
        assert [s.name for s in scenarios] == ["dark-dc", "pricey"]
        assert [str(e) for e in scenarios[0].events] == ["site-lost dc-a", "capacity g6-od=25%"]
        assert scenarios[0].description == "the data centre loses power"
        assert scenarios[0].events[1].location is not None and scenarios[0].events[1].location.line == 7
        check_scenarios(scenarios, inv)

    @pytest.mark.parametrize(("text", "line", "message"), [
        ("version: 2\nscenarios: []\n", 1, "version: 2 is not a supported"),
        ("version: 1\nscenario: []\n", 2, "unknown field 'scenario'"),
        ("version: 1\nscenarios: []\n", 2, "non-empty list"),
        ("version: 1\nscenarios:\n  - name: Bad Name\n    events: [site-lost dc-a]\n", 3, "lowercase letters"),
        ("version: 1\nscenarios:\n  - name: x\n    events: []\n", 4, "non-empty list of `events`"),
        ("version: 1\nscenarios:\n  - name: x\n    evnts: [site-lost dc-a]\n", 4, "unknown field 'evnts'"),
        ("version: 1\nscenarios:\n  - name: x\n    events:\n      - site-lost\n", 5, "is not KIND ARGUMENT"),
        ("version: 1\nscenarios:\n  - name: x\n    events:\n      - site-lost dc-a\n      - capacity g6-od\n", 6,
         "event 2: 'capacity g6-od' is malformed"),
        ("version: 1\nscenarios:\n  - name: x\n    events:\n      - {site-lost: [a]}\n", 5, "must be text"),
        ("version: 1\nscenarios:\n  - {name: x, events: [site-lost a]}\n  - {name: x, events: [site-lost a]}\n", 4,
         "defined twice (first at drills.yaml:3"),
        ("- just a list\n", 1, "a scenario file is a mapping"),
    ])
    def test_errors_name_the_line_and_fail_with_exit_1(self, text: str, line: int, message: str) -> None:
        with pytest.raises(ScenarioError) as caught:
            parse_scenario_file(text, "drills.yaml")[0]
        assert caught.value.exit_code is ExitCode.FAILED
        assert caught.value.location is not None and caught.value.location.line == line
        assert caught.value.location.file == "drills.yaml"
        assert message in caught.value.message

    def test_broken_yaml_is_located_too(self) -> None:
        with pytest.raises(YamlError) as caught:
            parse_scenario_file("version: 1\nscenarios:\n  - name: [x\n", "drills.yaml")[0]
        assert caught.value.location is not None and caught.value.location.line is not None

    def test_an_unknown_pool_is_reported_where_the_event_was_written(self, inv) -> None:
        scenarios = parse("""
            version: 1
            scenarios:
              - name: typo
                events:
                  - pool-lost g6-0d
            """)
        with pytest.raises(ScenarioError) as caught:
            check_scenarios(scenarios, inv)
        assert str(caught.value.location) == "drills.yaml:5:9"
        assert caught.value.hint == "did you mean 'g6-od'?"
        assert caught.value.exit_code is ExitCode.FAILED

    def test_names_must_be_unique_across_files(self, inv) -> None:
        one = parse_scenario_file("version: 1\nscenarios: [{name: x, events: [site-lost dc-a]}]\n", "a.yaml")[0]
        two = parse_scenario_file("version: 1\nscenarios: [{name: x, events: [site-lost aws]}]\n", "b.yaml")[0]
        with pytest.raises(ScenarioError, match=r"'x' is defined twice \(a.yaml:2:\d+ and b.yaml:2:\d+\)"):
            check_scenarios(one + two, inv)


class TestStandard:
    def test_the_built_in_set(self, inv) -> None:
        scenarios = {s.name: s for s in standard_scenarios(inv)}
        assert list(scenarios) == [
            "site-lost-dc-a", "site-lost-edge-1", "site-lost-edge-2", "site-lost-aws",
            "spot-reclaim-p5-spot", "spot-reclaim-g6-spot",
            "capacity-h100-half", "capacity-l4-half",
            "spot-price-x3",
            "link-down-edge-1", "link-down-edge-2",
        ]
        assert [str(e) for e in scenarios["capacity-l4-half"].events] == [
            "capacity a-l4=-50%", "capacity e1-l4=-50%", "capacity e2-l4=-50%", "capacity g6-spot=-50%",
            "capacity g6-od=-50%"]
        assert [str(e) for e in scenarios["spot-price-x3"].events] == ["price p5-spot=x3", "price g6-spot=x3"]
        # provider-lost only with cloud sites on two or more providers (tests/core/failover/test_provider_lost.py)
        assert {e.kind for s in scenarios.values() for e in s.events} == set(EventKind) - {EventKind.POOL_LOST,
                                                                                      EventKind.PROVIDER_LOST}
        check_scenarios(list(scenarios.values()), inv)
