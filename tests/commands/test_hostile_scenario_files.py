"""Hostile drill scenario files (issue 32, item 4): the `standard` choice and the `expect` block are read like
every file (bounded, through drivers/filereader.py), and a wrong one is exit 1 with one message naming the file
and line, never a traceback or exit 70. Also: the gate with a scenario file on a hospital-style fleet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile import assert_clean, assert_refused, contents, run

DATA = Path(__file__).parents[1] / "data" / "drill"
CLINICS = DATA / "clinics.yaml"
DRILLS = DATA / "clinics-drills.yaml"

# expect/standard blocks: (line of the error, what the message says)
HOSTILE: dict[str, tuple[int, str]] = {
    "expect:\n  site-lost-clinic-a: {losses: [nobody]}\n":
        (2, "expect.site-lost-clinic-a.losses: 'nobody' is not a workload of the inventory"),
    "expect:\n  no-such-scenario: {losses: [triage-a]}\n": (2, "expect: 'no-such-scenario' is not a scenario of this drill"),
    "expect:\n  site-lost-clinic-a: {over_budget_usd_per_month: 1e400}\n":
        (2, "expect.site-lost-clinic-a: over_budget_usd_per_month: Input should be"),
    "expect:\n  site-lost-clinic-a: {over_budget_usd_per_month: '5'}\n":
        (2, "over_budget_usd_per_month: Input should be a valid number"),
    "expect:\n  site-lost-clinic-a: {losses: " + "9" * 400 + "}\n": (2, "losses: Input should be a valid list"),
    "expect:\n  site-lost-clinic-a: nothing\n": (2, "expect.site-lost-clinic-a: Input should be a valid dictionary"),
    "standard: {include: site-lost-*}\n": (1, "standard: include: Input should be a valid list"),
    "standard: {only: [x]}\n": (1, "standard: only: Extra inputs are not permitted"),
}


@pytest.mark.parametrize("block", sorted(HOSTILE))
def test_drill_refuses_it_naming_the_file_and_line(tmp_path: Path, block: str) -> None:
    scenarios = tmp_path / "drills.yaml"
    head = "version: 1\n" + ("standard: {}\n" if not block.startswith("standard") else "")
    scenarios.write_text(head + block)
    line, message = HOSTILE[block]
    result = run("drill", CLINICS, "--scenario", scenarios, "--json-out", tmp_path / "drill.json")
    assert_refused(result, f"{scenarios}:{line + head.count(chr(10))}:", message, codes=frozenset({1}))
    assert not (tmp_path / "drill.json").exists()


def test_an_expectation_stated_twice_names_both_places(tmp_path: Path) -> None:
    first, second = tmp_path / "a.yaml", tmp_path / "b.yaml"
    for path in (first, second):
        path.write_text("version: 1\nstandard: {}\nexpect:\n  site-lost-clinic-a: {losses: [triage-a]}\n")
    result = run("drill", CLINICS, "--scenario", first, "--scenario", second)
    assert_refused(result, f"{second}:4:", f"stated twice (first at {first}:4", codes=frozenset({1}))


def test_a_scenario_file_that_is_too_big_is_refused(tmp_path: Path) -> None:
    from hybridctl.drivers.filereader import SCENARIO_LIMIT

    big = tmp_path / "big.yaml"
    with big.open("w") as handle:
        handle.write("version: 1\nstandard: {}\nexpect:\n")
        handle.truncate(SCENARIO_LIMIT + 1)
    result = run("drill", CLINICS, "--scenario", big)
    assert_refused(result, "larger than the 67,108,864-byte limit for a scenario file", codes=frozenset({2}))


@pytest.mark.timeout(300)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.recursive(st.none() | st.booleans() | st.integers(-10**30, 10**30) | st.floats() | st.text(max_size=20),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3), max_leaves=8),
       where=st.sampled_from(["standard", "expect", "losses", "over"]))
def test_fuzz_the_choice_and_expectations(tmp_path: Path, value: object, where: str) -> None:
    document: dict[str, object] = {"version": 1, "standard": {}}
    if where == "standard":
        document["standard"] = value
    elif where == "expect":
        document["expect"] = value
    elif where == "losses":
        document["expect"] = {"site-lost-clinic-a": {"losses": value}}
    else:
        document["expect"] = {"site-lost-clinic-a": {"over_budget_usd_per_month": value}}
    scenarios = tmp_path / "fuzzed.yaml"
    scenarios.write_text(json.dumps(document, allow_nan=True))
    before = contents(tmp_path), contents(CLINICS.parent)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)  # a default ./.hybridctl would land here
        result = run("drill", CLINICS, "--scenario", scenarios, "--format", "json")
    assert_clean(result, frozenset({0, 1}))
    if not result.stdout.strip():  # refused, not a drill that ran (and failed, exit 1): one message naming the file
        assert_refused(result, str(scenarios), codes=frozenset({1}))
    assert (contents(tmp_path), contents(CLINICS.parent)) == before


class TestTheGateOnAHospitalFleet:
    def test_standard_fails_on_losses_nobody_can_avoid_and_says_once_why_a_pool_is_not_halved(self) -> None:
        result = run("drill", CLINICS, "--standard", "--format", "json")
        assert result.code == 1, result.output
        report = json.loads(result.stdout)
        assert sorted(report["failed"]) == ["site-lost-clinic-a", "site-lost-hospital-lisbon"]
        assert "capacity-l4-half" not in [s["name"] for s in report["scenarios"]]
        assert result.stderr.count("do not halve 1 1-GPU pool(s) (clinic-a-l4)") == 1

    def test_the_scenario_file_states_them_and_the_gate_passes(self) -> None:
        result = run("drill", CLINICS, "--scenario", DRILLS, "--format", "json")
        assert result.code == 0, result.output
        report = json.loads(result.stdout)
        names = [s["name"] for s in report["scenarios"]]
        assert "spot-price-x3" not in names and "main-dc-and-triage" in names
        by_name = {s["name"]: s for s in report["scenarios"]}
        # dc-main lost: radiology-assist's 2 replicas go to the cloud; the plan's cash goes over the $9,000 budget
        dc = by_name["site-lost-dc-main"]
        assert dc["over_budget_usd_per_month"] == round(dc["usd_per_month_after"] - 9000, 2) > 0
        assert dc["over_budget_allowed_usd_per_month"] is None and dc["passed"]
        both = by_name["main-dc-and-triage"]
        assert both["over_budget_allowed_usd_per_month"] == 3000 and both["passed"]
        assert both["expected_losses"] == ["triage-a"]

    def test_over_budget_is_a_column_of_the_table(self) -> None:
        result = run("drill", CLINICS, "--scenario", DRILLS)
        assert "over budget" in result.stdout and "(not gated)" in " ".join(result.stdout.split())


@pytest.mark.parametrize("character", ["\x1b", "\x9b", "\x7f", "\r"], ids=["esc", "c1-csi", "del", "cr"])
def test_a_description_with_a_control_character_is_refused_at_its_line(tmp_path: Path, character: str) -> None:
    """The drill report carries the description, and a report holding a control character is refused when it is
    read back: the drill accepted what its own report then refused."""
    scenarios = tmp_path / "drills.yaml"
    scenarios.write_text("version: 1\nscenarios:\n  - name: dark\n"
                         f"    description: {json.dumps('lights ' + character + ']52;c;aGk= out')}\n"
                         "    events: [site-lost clinic-a]\n", encoding="utf-8")
    result = run("drill", CLINICS, "--scenario", scenarios, "--json-out", tmp_path / "drill.json")
    assert_refused(result, f"{scenarios}:4:", "scenario 'dark': `description` holds a control character "
                   f"(\\u{ord(character):04x})", codes=frozenset({1}))
    assert not (tmp_path / "drill.json").exists()


def test_a_description_over_lines_and_tabs_is_fine(tmp_path: Path) -> None:
    scenarios = tmp_path / "drills.yaml"
    scenarios.write_text("version: 1\nscenarios:\n  - name: dark\n    description: \"lights\\n\\tout\"\n"
                         "    events: [site-lost clinic-a]\n", encoding="utf-8")
    result = run("drill", CLINICS, "--scenario", scenarios, "--json-out", tmp_path / "drill.json")
    assert result.code in (0, 1) and "control character" not in result.output, result.output
    assert (tmp_path / "drill.json").exists()
