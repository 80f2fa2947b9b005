"""Plan files are untrusted input: `apply PLAN` re-verifies one before anything runs.

A hand edit is caught by the content digest (exit 4). An edit that recomputes the digest is
caught by the independent checker and the summary checks (exit 4, naming what is wrong).
Whatever the JSON's shape, the answer is a message and an exit code, never exit 70.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.plan.serialize import content_digest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import EXAMPLES
from support.hostile import assert_refused, snapshot
from support.inproc import run_cli

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    directory = tmp_path_factory.mktemp("plan")
    inventory = EXAMPLES / "cloud-burst.yaml"
    result = run_cli("plan", str(inventory), "--out", str(directory / "plan.json"))
    assert result.code == 0, result.output
    return inventory, json.loads((directory / "plan.json").read_text())


def write(tmp_path: Path, document: dict[str, Any], edit: Edit, *, redigest: bool) -> Path:
    changed = json.loads(json.dumps(document))
    edit(changed)
    if redigest:
        changed["content_digest"] = content_digest(changed)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(changed, indent=2))
    return path


def apply(plan: Path, inventory: Path, tmp_path: Path) -> Any:
    return run_cli("apply", str(plan), "--inventory", str(inventory), "--state", str(tmp_path / "state"),
                   "--auto-approve", "--skip-cloud")


def first_placement(**change: object) -> Edit:
    return lambda d: d["placements"][0].update(change)


FORGERIES: dict[str, tuple[Edit, str]] = {
    "8,000 GPUs": (lambda d: d["placements"][0].update(replicas=1000, gpus=8000), "capacity 128"),
    "negative replicas": (first_placement(replicas=-2, gpus=-16), "negative replicas"),
    "a pool that does not exist": (first_placement(pool="no-such-pool"), "unknown workload or pool"),
    "another site": (first_placement(site="dc-ashburn"), "pool is at aws-us-east-1, not dc-ashburn"),
    "an inflated pool summary": (lambda d: d["pools"][0].update(used_gpus=8000), "GPUs used, its placements use"),
    "a cheaper total": (lambda d: d.update(compute_usd_per_month=1.0), "compute_usd_per_month"),
    "a tier the rules do not give": (first_placement(tier="opportunistic"), "but the rules give"),
    # the digest still binds it to the inventory; the name is what status and the journal would show
    "another inventory's name": (lambda d: d.update(inventory="prod-fleet"), "the plan names 'prod-fleet'"),
}


class TestForgedPlansAreRefused:
    @pytest.mark.parametrize("name", sorted(FORGERIES))
    def test_a_hand_edit_fails_the_content_digest(self, planned: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                  name: str) -> None:
        inventory, document = planned
        result = apply(write(tmp_path, document, FORGERIES[name][0], redigest=False), inventory, tmp_path)
        assert result.code == 4, result.output
        assert "was changed after it was written" in result.output
        assert not (tmp_path / "state" / "journal.jsonl").exists() or "step-started" not in \
            (tmp_path / "state" / "journal.jsonl").read_text()

    @pytest.mark.parametrize("name", sorted(FORGERIES))
    def test_a_forgery_with_a_fresh_digest_fails_the_rules(self, planned: tuple[Path, dict[str, Any]],
                                                           tmp_path: Path, name: str) -> None:
        inventory, document = planned
        edit, named = FORGERIES[name]
        result = apply(write(tmp_path, document, edit, redigest=True), inventory, tmp_path)
        assert result.code == 4, result.output
        assert "breaks the inventory's rules; nothing was changed" in result.output
        assert named in result.output

    def test_a_plan_without_a_digest_is_refused(self, planned: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
        inventory, document = planned
        result = apply(write(tmp_path, document, lambda d: d.pop("content_digest"), redigest=False), inventory,
                       tmp_path)
        assert result.code == 4 and "has no content_digest" in result.output

    def test_the_unedited_plan_passes_both_checks(self, planned: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
        _, document = planned
        path = write(tmp_path, document, lambda d: None, redigest=False)
        result = run_cli("show", str(path))
        assert result.code == 0, result.output


class TestMalformedPlansNeverCrash:
    @pytest.mark.parametrize(("edit", "named"), [
        (first_placement(replicas="many"), "placements[0].replicas"),
        (first_placement(gpus=2.5), "placements[0].gpus"),
        # a later part: the index is the list's (the parts of a list are validated in one call)
        (lambda d: d["placements"][1].update(gpus_per_replica=1.5), "placements[1].gpus_per_replica"),
        (lambda d: d["pools"][1].update(machines="2"), "pools[1].machines"),
        (lambda d: d.update(placements={}), "placements has the wrong type"),
        (lambda d: d.update(placements=[[1]]), "placements[0]: expected an object"),
        (lambda d: d.update(tiers={"a": 1}), "tiers maps workload names to text"),
        (lambda d: d.pop("solver"), "not a hybridctl plan"),
    ])
    def test_each_shape_error_names_its_field(self, planned: tuple[Path, dict[str, Any]], tmp_path: Path,
                                              edit: Edit, named: str) -> None:
        inventory, document = planned
        result = apply(write(tmp_path, document, edit, redigest=True), inventory, tmp_path)
        assert result.code == 1, result.output
        assert named in result.output and "internal error" not in result.output

    def test_nan_and_infinity_are_not_json(self, planned: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
        inventory, document = planned
        path = tmp_path / "nan.json"
        path.write_text(json.dumps(document).replace('"compute_usd_per_month": ', '"compute_usd_per_month": NaN, "x": '))
        result = apply(path, inventory, tmp_path)
        assert result.code == 1 and "NaN is not a JSON number" in result.output

    @settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(value=st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                              | st.text(max_size=5),
                              lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                          max_size=3), max_leaves=8),
           field=st.sampled_from(["placements", "unplaced", "pools", "data_movements", "solver", "tiers",
                                  "inventory", "compute_usd_per_month", "base_serial", "format_version"]))
    def test_any_json_in_any_field_gets_a_clean_exit(self, planned: tuple[Path, dict[str, Any]],
                                                     tmp_path: Path, value: object, field: str) -> None:
        inventory, document = planned
        plan = write(tmp_path, document, lambda d: d.update({field: value}), redigest=True)
        shutil.rmtree(tmp_path / "state", ignore_errors=True)  # each example on a state of its own
        before = snapshot(tmp_path)
        result = apply(plan, inventory, tmp_path)
        assert result.code in (1, 2, 4), result.output
        assert "internal error" not in result.output
        if "step(s) to run" not in result.output:  # refused before the run (a few values, such as the
            # inventory's name, apply takes: the run then fails at the unreachable hosts, exit 1)
            assert_refused(result, str(plan), codes=frozenset({1, 2, 4}))
            assert snapshot(tmp_path) == before  # nothing written but the state's lock (snapshot() leaves it out)
