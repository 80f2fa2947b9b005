"""Hostile failover events and drill scenarios (issue 34: findings 8 and 11). An event's value is bounded
as the inventory bounds the value it changes: a capacity event only shrinks a pool (`capacity POOL=64`
grew a 32-GPU pool), a price stays within $10,000 per GPU-hour (prices went to $10^34 and a drill showed
"±$nan"), and a number of 400 digits or 10^20 GPUs is an answer, not exit 70. On the command line the
answer is exit 2 naming the event; in a scenario file, exit 1 naming the file, line and scenario. Nothing
is written: the state is as it was, no runbook is kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile import (
    applied_state,
    assert_clean,
    assert_refused,
    cloud_document,
    contents,
    run,
    snapshot,
    write_json,
)

BIG = "9" * 400

# event words: what the message says (pool aws-a-g6 has 8 GPUs at $0.80/GPU-hour)
EVENTS: dict[str, str] = {
    "capacity aws-a-g6=64": "a capacity event may only shrink a pool: aws-a-g6 has 8 GPUs",
    "capacity aws-a-g6=9": "a capacity event may only shrink a pool",
    "capacity aws-a-g6=100000000000000000000": "more GPUs than a pool may have (1,000,000)",
    f"capacity aws-a-g6={BIG}": "more GPUs than a pool may have",
    f"capacity aws-a-g6=-{BIG}": "more GPUs than a pool may have",
    f"capacity aws-a-g6={BIG}%": "a percentage above 100",
    "price aws-a-g6=10000000000000000000000000000000000": "a price above $10,000 per GPU-hour",
    f"price aws-a-g6={BIG}": "a price above $10,000 per GPU-hour",
    f"price aws-a-g6=x{BIG}": "a price factor above 10,000",
    "price aws-a-g6=x20000": "a price factor above 10,000",
    "price aws-a-g6=10000.01": "a price above $10,000 per GPU-hour",
    "price aws-a-g6=9000 price aws-a-g6=x2": "event 2: 'price aws-a-g6=x2': the price of aws-a-g6 would be "
                                             "$18,000.00 per GPU-hour, above the $10,000 an inventory allows",
    "price aws-a-g6=x100 price aws-a-g6=x200": "event 2: 'price aws-a-g6=x200': the price of aws-a-g6 would be",
    "capacity aws-a-g6=4 capacity aws-a-g6=6": "event 2: 'capacity aws-a-g6=6': a capacity event may only shrink a "
                                               "pool: aws-a-g6 has 4 GPUs",
    "site-lost aws-a capacity aws-a-g6=1": "event 2: 'capacity aws-a-g6=1': a capacity event may only shrink",
}
FINE = ["capacity aws-a-g6=8", "capacity aws-a-g6=4", "capacity aws-a-g6=-100", "capacity aws-a-g6=100%",
        "price aws-a-g6=10000", "price aws-a-g6=x10000", "price aws-a-g6=x3 price aws-a-g6=x3"]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return applied_state(tmp_path_factory.mktemp("applied"))


@pytest.fixture(scope="module")
def plan_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    directory = tmp_path_factory.mktemp("plan")
    inventory = write_json(directory / "inventory.yaml", cloud_document())
    assert run("plan", inventory, "--out", directory / "plan.json", "--state", directory / "s").code == 0
    return inventory, directory / "plan.json"


class TestEventsOnTheCommandLine:
    @pytest.mark.parametrize("words", sorted(EVENTS))
    def test_failover_refuses_it_and_writes_nothing(self, applied: tuple[Path, Path], words: str) -> None:
        _, state = applied
        before = snapshot(state)
        for extra in ((), ("--execute", "--auto-approve", "--manual-steps-done")):
            result = run("failover", *words.split(), "--state", state, "--format", "json", *extra)
            assert_refused(result, EVENTS[words], codes=frozenset({2}))
            assert result.stdout == "" and snapshot(state) == before

    @pytest.mark.parametrize("words", sorted(EVENTS))
    def test_a_rehearsal_refuses_it(self, plan_file: tuple[Path, Path], words: str) -> None:
        inventory, plan = plan_file
        result = run("failover", *words.split(), "--plan", plan, "--inventory", inventory)
        assert_refused(result, EVENTS[words], codes=frozenset({2}))

    @pytest.mark.parametrize("argument", ["aws-a\nsite-lost aws-b", "aws-a\rsite-lost aws-b", "aws-a\tsite-lost aws-b",
                                          "aws-a\x1b[2J", "aws-a\x85site-lost aws-b"],
                             ids=["newline", "cr", "tab", "esc", "nel"])
    def test_a_line_break_inside_an_argument_is_not_a_second_event(self, applied: tuple[Path, Path],
                                                                   argument: str) -> None:
        """`site-lost $'aws-a\\nsite-lost aws-b'` lost both sites: a word was split at every whitespace."""
        _, state = applied
        before = snapshot(state)
        for extra in ((), ("--execute", "--auto-approve")):
            result = run("failover", "site-lost", argument, "--state", state, *extra)
            assert_refused(result, "argument 2:", "holds a line break or a control character", codes=frozenset({2}))
            assert snapshot(state) == before

    @pytest.mark.parametrize("words", FINE)
    def test_values_within_the_bounds_are_replanned(self, plan_file: tuple[Path, Path], words: str) -> None:
        inventory, plan = plan_file
        result = run("failover", *words.split(), "--plan", plan, "--inventory", inventory, "--format", "json")
        assert result.code == 0, result.output
        assert "nan" not in result.stdout.lower()


class TestEventsInScenarioFiles:
    @pytest.mark.parametrize("words", sorted(EVENTS))
    def test_drill_refuses_it_naming_the_file_and_line(self, plan_file: tuple[Path, Path], tmp_path: Path,
                                                       words: str) -> None:
        inventory, _ = plan_file
        tokens = words.split()
        events = [f"{tokens[i]} {tokens[i + 1]}" for i in range(0, len(tokens), 2)]
        scenarios = tmp_path / "scenarios.yaml"
        scenarios.write_text("version: 1\nscenarios:\n  - name: hostile\n    events:\n"
                             + "".join(f"      - {event}\n" for event in events))
        result = run("drill", inventory, "--scenario", scenarios, "--json-out", tmp_path / "drill.json")
        line = 4 + len(events) if "event 2" in EVENTS[words] else 5
        message = EVENTS[words].split(": ", 1)[1] if EVENTS[words].startswith("event 2") else EVENTS[words]
        assert_refused(result, f"{scenarios}:{line}:", message, codes=frozenset({1}))
        assert not (tmp_path / "drill.json").exists()

    def test_a_drill_never_shows_nan(self, plan_file: tuple[Path, Path], tmp_path: Path) -> None:
        inventory, _ = plan_file
        scenarios = tmp_path / "scenarios.yaml"
        scenarios.write_text("version: 1\nscenarios:\n  - name: dear\n    events:\n"
                             "      - price aws-a-g6=10000\n      - price aws-b-g6=10000\n")
        result = run("drill", inventory, "--scenario", scenarios)
        assert result.code in (0, 1), result.output
        assert "nan" not in result.output.lower()


_NUMBERS = st.one_of(st.integers(min_value=-10**30, max_value=10**30).map(str),
                     st.floats(allow_nan=False, allow_infinity=False).map(repr),
                     st.text(alphabet="0123456789.", min_size=1, max_size=500))


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kind=st.sampled_from(["capacity", "price", "site-lost", "pool-lost", "spot-reclaim", "link-down", "bogus"]),
       target=st.sampled_from(["aws-a-g6", "aws-b-g6", "aws-a", "nope"]),
       sign=st.sampled_from(["", "-", "x", "$", "x-"]), number=_NUMBERS, percent=st.booleans())
def test_fuzz_an_event_on_the_command_line(plan_file: tuple[Path, Path], tmp_path: Path, kind: str, target: str,
                                           sign: str, number: str, percent: bool) -> None:
    inventory, plan = plan_file
    argument = f"{target}={sign}{number}{'%' if percent else ''}" if kind in ("capacity", "price") else target
    before = contents(tmp_path), contents(plan.parent)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)  # a default ./.hybridctl would land here
        result = run("failover", kind, argument, "--plan", plan, "--inventory", inventory, "--format", "json")
    assert_clean(result, frozenset({0, 2}))
    assert "nan" not in result.stdout.lower()
    if result.code:
        assert_refused(result, codes=frozenset({2}))  # one message (the event is no file: no path to name)
        assert not result.stdout.strip(), result.stdout
    assert (contents(tmp_path), contents(plan.parent)) == before  # a dry run: nothing written


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(event=st.one_of(st.text(max_size=30), st.integers(), st.floats(), st.none(), st.booleans(),
                       st.dictionaries(st.sampled_from(["capacity", "price", "site-lost", "x"]),
                                       st.one_of(st.text(max_size=20), st.integers(), st.floats(), st.none()),
                                       max_size=2)))
def test_fuzz_an_event_in_a_scenario_file(plan_file: tuple[Path, Path], tmp_path: Path, event: object) -> None:
    inventory, _ = plan_file
    scenarios = tmp_path / "fuzzed.yaml"
    scenarios.write_text(json.dumps({"version": 1, "scenarios": [{"name": "fuzzed", "events": [event]}]}))
    before = contents(tmp_path), contents(inventory.parent)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)
        result = run("drill", inventory, "--scenario", scenarios, "--format", "json")
    assert_clean(result, frozenset({0, 1, 2}))
    assert "nan" not in result.stdout.lower()
    if not result.stdout.strip():  # refused, not a drill that ran (and failed, exit 1): one message naming the file
        assert_refused(result, str(scenarios), codes=frozenset({1, 2}))
    assert (contents(tmp_path), contents(inventory.parent)) == before
