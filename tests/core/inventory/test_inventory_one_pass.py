"""validate in one pass: a file's schema errors do not hide its reference and rule errors, and
nothing is reported about what the schema's errors leave unreadable (core/inventory/partial.py)."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from support.examples import BASE


def found(text: str) -> list[tuple[str, str]]:
    with pytest.raises(InvalidInventoryError) as caught:
        load_sources([Source("inv.yaml", text)])
    return [(d.code, d.message) for d in caught.value.diagnostics]


def where(text: str, code: str) -> list[Diagnostic]:
    with pytest.raises(InvalidInventoryError) as caught:
        load_sources([Source("inv.yaml", text)])
    return [d for d in caught.value.diagnostics if d.code == code]


# a schema error in the first pool, and a reference error in a workload that passes the schema
SCHEMA_AND_REFERENCE = BASE.replace("gpus: 16,", "gpus: '16',").replace(
    "hours_per_month: 100\n", "hours_per_month: 100\n    datasets: [ds-us]\n")


class TestOnePass:
    def test_schema_and_reference_errors_in_one_run(self) -> None:
        assert found(SCHEMA_AND_REFERENCE) == [
            ("wrong-type", "sites[0].pools[0].gpus: expected a whole number, got '16' (text)"),
            ("unresolved-reference", "workload train: dataset 'ds-us' is not defined")]

    def test_the_later_errors_keep_their_own_line(self) -> None:
        [reference] = where(SCHEMA_AND_REFERENCE, "unresolved-reference")
        line = SCHEMA_AND_REFERENCE.splitlines().index("    datasets: [ds-us]") + 1
        assert reference.location is not None and reference.location.line == line
        assert reference.hint == "did you mean 'ds-eu'?"

    def test_items_after_a_broken_one_are_located_at_their_own_number(self) -> None:
        # the first workload fails the schema; the second's rule error points at the second
        text = BASE.replace("hours_per_month: 100\n", "hours_per_month: lots\n  - name: tune\n    type: "
                            "training\n    gpu: {types: [H100], count: 8}\n    hours_per_month: 10\n"
                            "    preemptible: true\n")
        [rule] = where(text, "preemptible-needs-checkpoint")
        assert rule.message.startswith("workload tune:")
        assert rule.location is not None and rule.location.line == text.splitlines().index("    preemptible: true") + 1

    def test_a_rule_error_beside_a_schema_error_elsewhere(self) -> None:
        text = BASE.replace("policies", "policies").replace("name: test\n", "name: test\npolicies: 5\n").replace(
            "hours_per_month: 100\n", "hours_per_month: 100\n    preemptible: true\n")
        assert [c for c, _ in found(text)] == ["wrong-type", "preemptible-needs-checkpoint"]

    def test_references_of_a_broken_item_are_judged_without_its_broken_field(self) -> None:
        # `replica` is refused; the workload's undefined dataset is still an error
        text = BASE.replace("hours_per_month: 100\n", "hours_per_month: 100\n    replica: 2\n    datasets: [ds-xx]\n")
        assert found(text) == [("unknown-field", "workloads[0].replica: unknown field 'replica'"),
                               ("unresolved-reference", "workload train: dataset 'ds-xx' is not defined")]

    def test_rules_of_a_broken_item_are_not_judged_on_values_it_does_not_have(self) -> None:
        # hours_per_month is broken: "hours_per_month is required" would judge a value that is written
        text = BASE.replace("hours_per_month: 100", "hours_per_month: lots")
        assert [c for c, _ in found(text)] == ["wrong-type"]

    def test_a_reference_to_a_broken_item_is_not_reported(self) -> None:
        # ds-eu fails the schema; the workload that reads it is not told that ds-eu is undefined
        text = BASE.replace("size_gb: 100,", "size_gb: huge,").replace(
            "hours_per_month: 100\n", "hours_per_month: 100\n    datasets: [ds-eu]\n")
        assert [c for c, _ in found(text)] == ["wrong-type"]

    def test_a_reference_into_a_broken_list_is_not_reported(self) -> None:
        # regions is written as text: no latency region can be judged
        text = BASE.replace("regions: [eu-users, us-users]", "regions: eu-users")
        assert [c for c, _ in found(text)] == ["wrong-type"]

    def test_a_host_of_a_site_whose_pool_is_broken_is_not_reported(self) -> None:
        text = BASE.replace("gpus: 16,", "gpus: many,")
        assert [c for c, _ in found(text)] == ["wrong-type"]

    def test_a_broken_version_stops_there(self) -> None:
        text = BASE.replace("version: 1", "version: 2").replace("hours_per_month: 100\n",
                                                                   "hours_per_month: 100\n    datasets: [nope]\n")
        assert [c for c, _ in found(text)] == ["unsupported-version"]
