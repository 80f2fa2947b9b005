"""Hostile plan files (issue 34: findings 2, 3, 8, 10 and 11): whatever a plan file holds, every command
that reads one answers with a documented exit code other than 70, one message naming the file (and the
field, where there is one), and writes nothing.

- A forged plan whose summaries and content digest are worked out again (support/hostile.py) is refused
  (exit 4) by apply, synth, show, cost and report alike: a demand its workload does not have (finding 2),
  a degraded placement (finding 3: fallback shapes belong to failover plans), a placement whose cost is
  not its GPU-hours at its pool's price (finding 11: a team's total of billions on a small plan).
- JSON that no hybridctl file holds is refused (exit 1) naming the file: a key twice in one object, NaN,
  1e400, a 5,000-digit number, lone surrogates, 100,000 levels of nesting (finding 8).
- The digest of a plan does not depend on how it arrived (finding 10).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.deploy.stackconfig import kept_plan_digest, plan_digest
from hybridctl.core.plan.serialize import content_digest, plan_from_json, plan_to_json_utf8
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import EXAMPLES
from support.hostile import (
    applied_state,
    assert_clean,
    assert_refused,
    cloud_document,
    placed_copy,
    resummarize,
    run,
    snapshot,
    write_json,
)

Forgery = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The two-region cloud inventory (nothing to reach: the recording cloud) and its plan file's JSON."""
    directory = tmp_path_factory.mktemp("cloud")
    inventory = write_json(directory / "inventory.yaml", cloud_document())
    result = run("plan", inventory, "--out", directory / "plan.json", "--state", directory / "empty")
    assert result.code == 0, result.output
    return inventory, json.loads((directory / "plan.json").read_text())


@pytest.fixture(scope="module")
def federated(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("federated")
    result = run("plan", EXAMPLES / "federated.yaml", "--out", directory / "plan.json", "--state", directory / "s")
    assert result.code == 0, result.output
    loaded: dict[str, Any] = json.loads((directory / "plan.json").read_text())
    return loaded


def forged(document: dict[str, Any], forgery: Forgery) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    forgery(changed)
    return resummarize(changed)


def extra_api(demand: str, replicas: int = 6) -> Forgery:
    return lambda d: placed_copy(d, {"workload": "api", "pool": "aws-a-g6"}, demand=demand, replicas=replicas) and None


def degraded(d: dict[str, Any]) -> None:
    d["placements"][0]["degraded"] = True


def team_total(d: dict[str, Any]) -> None:
    d["placements"][0]["usd_per_month"] *= 40_000  # the pool's price unchanged: the placement's cost no longer adds up


FORGERIES: dict[str, tuple[Forgery, str]] = {
    "capacity under a demand the workload does not have": (extra_api("api@x"), "demand 'api@x' is not 'api'"),
    "capacity under no demand": (extra_api(""), "demand '' is not 'api'"),
    "a degraded placement in a plan file": (degraded, "degraded: only a failover plan"),
    "a placement that costs more than its pool's price": (team_total, "at its pool's $0.8/GPU-h, the plan says"),
}


class TestForgedPlans:
    @pytest.mark.parametrize("name", sorted(FORGERIES))
    def test_apply_refuses_it_and_changes_nothing(self, cloud: tuple[Path, dict[str, Any]], tmp_path: Path,
                                                  name: str) -> None:
        inventory, document = cloud
        forgery, named = FORGERIES[name]
        path = write_json(tmp_path / "forged.json", forged(document, forgery))
        state = tmp_path / "state"
        result = run("apply", path, "--inventory", inventory, "--state", state, "--auto-approve")
        assert_refused(result, f"{path} breaks the inventory's rules; nothing was changed", named, codes=frozenset({4}))
        assert snapshot(state) == {}  # no state, journal, stack or ansible inventory written

    @pytest.mark.parametrize("name", sorted(FORGERIES))
    def test_synth_refuses_it(self, cloud: tuple[Path, dict[str, Any]], tmp_path: Path, name: str) -> None:
        inventory, document = cloud
        forgery, named = FORGERIES[name]
        path = write_json(tmp_path / "forged.json", forged(document, forgery))
        result = run("synth", path, "--inventory", inventory, "--out", tmp_path / "stacks")
        assert_refused(result, str(path), named, codes=frozenset({4}))
        assert not (tmp_path / "stacks").exists()

    @pytest.mark.parametrize("command", [("show",), ("cost", "--by", "team"), ("report", "--out", "REPORT")])
    @pytest.mark.parametrize("name", sorted(FORGERIES))
    def test_show_cost_and_report_refuse_it(self, cloud: tuple[Path, dict[str, Any]], tmp_path: Path, name: str,
                                            command: tuple[str, ...]) -> None:
        _, document = cloud
        forgery, named = FORGERIES[name]
        path = write_json(tmp_path / "forged.json", forged(document, forgery))
        report = tmp_path / "report.html"
        result = run(command[0], path, *(str(report) if part == "REPORT" else part for part in command[1:]))
        assert_refused(result, f"{path} is not a plan `plan --out` wrote; nothing was changed", named,
                       codes=frozenset({4}))
        assert result.stdout == "" and not report.exists()

    def test_a_federated_trainer_under_no_demand(self, federated: dict[str, Any], tmp_path: Path) -> None:
        document = forged(federated, lambda d: placed_copy(d, {"demand": "tumour-segmentation-fl@hospital-berlin"},
                                                            demand="", replicas=3) and None)
        path = write_json(tmp_path / "forged.json", document)
        result = run("show", path)
        assert_refused(result, str(path), "demand '' is not 'tumour-segmentation-fl' (or "
                       "tumour-segmentation-fl@hospital-berlin for a federated trainer group)", codes=frozenset({4}))
        result = run("apply", path, "--inventory", EXAMPLES / "federated.yaml", "--state", tmp_path / "s",
                     "--auto-approve")
        assert_refused(result, "breaks the inventory's rules", "demand ''", codes=frozenset({4}))
        assert snapshot(tmp_path / "s") == {}

    def test_the_unforged_plan_is_shown_and_applied(self, cloud: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
        inventory, document = cloud
        path = write_json(tmp_path / "plan.json", forged(document, lambda d: None))  # resummarized: the same
        assert json.loads(path.read_text()) == document
        assert run("show", path).code == 0
        assert run("cost", path, "--by", "team").code == 0
        result = run("apply", path, "--inventory", inventory, "--state", tmp_path / "state", "--auto-approve")
        assert result.code == 0, result.output


# --- JSON that no hybridctl file holds ---------------------------------------------------------------------

def text_edit(old: str, new: str) -> Callable[[str], str]:
    def edit(text: str) -> str:
        assert old in text
        return text.replace(old, new, 1)
    return edit


HOSTILE_TEXT: dict[str, tuple[Callable[[str], str], str]] = {
    "a key twice": (text_edit('"base_serial": 0', '"base_serial": 7, "base_serial": 0'),
                    "key 'base_serial' appears twice in one object"),
    "a key twice in a placement": (text_edit('"degraded": false', '"degraded": true, "degraded": false'),
                                   "key 'degraded' appears twice"),
    "NaN": (text_edit('"compute_usd_per_month": ', '"compute_usd_per_month": NaN, "x": '), "NaN is not a JSON number"),
    "1e400": (text_edit('"compute_usd_per_month": ', '"compute_usd_per_month": 1e400, "x": '),
              "compute_usd_per_month: a number beyond the range of a float"),
    "-1e400 in a placement": (text_edit('"gpus_per_replica": 1', '"gpus_per_replica": -1e400'),
                              "gpus_per_replica: a number beyond the range of a float"),
    "400 digits": (text_edit('"base_serial": 0', '"base_serial": ' + "9" * 400),
                   "base_serial: a number beyond the range of a float"),
    "5,000 digits": (text_edit('"base_serial": 0', '"base_serial": ' + "9" * 5000),
                     "base_serial: a number beyond the range of a float (99999999999999999999…(5,000 characters))"),
    "a lone surrogate": (text_edit('"inventory": "hostile"', '"inventory": "\\ud800"'),
                         "inventory: text with a lone surrogate (\\ud800)"),
    "a lone surrogate in a key": (text_edit('"tiers": {', '"tiers": {"\\udc00": "fixed", '),
                                  "tiers: a key with a lone surrogate (\\udc00)"),
    "100,000 levels of nesting": (lambda text: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "100,000 levels in a field": (text_edit('"tiers": {', '"x": ' + "[" * 100_000 + "]" * 100_000 + ', "tiers": {'),
                                  "nested too deeply"),
    "a list": (lambda text: "[1, 2]", "not a hybridctl plan"),
    "a torn file": (lambda text: text[: len(text) // 2], "not valid JSON"),
}


@pytest.mark.parametrize("command", ["show", "cost", "apply", "report", "drill", "plan --previous"])
@pytest.mark.parametrize("name", sorted(HOSTILE_TEXT))
def test_json_no_hybridctl_file_holds(cloud: tuple[Path, dict[str, Any]], tmp_path: Path, name: str,
                                      command: str) -> None:
    inventory, document = cloud
    edit, named = HOSTILE_TEXT[name]
    path = tmp_path / "hostile.json"
    path.write_text(edit(json.dumps(document, indent=2, sort_keys=True)))
    state = tmp_path / "state"
    argv: list[str | Path] = {
        "show": ["show", path], "cost": ["cost", path],
        "apply": ["apply", path, "--inventory", inventory, "--state", state, "--auto-approve"],
        "report": ["report", path, "--out", tmp_path / "report.html"],
        "drill": ["drill", inventory, "--plan", path],
        "plan --previous": ["plan", inventory, "--previous", path, "--state", state, "--out", tmp_path / "new.json"],
    }[command]
    result = run(*argv)
    assert_refused(result, str(path), named, codes=frozenset({1}))
    assert snapshot(state) == {} and not (tmp_path / "report.html").exists() and not (tmp_path / "new.json").exists()


# --- the digest of a plan does not depend on how it arrived ------------------------------------------------

class TestOneDigestPerPlan:
    def test_an_int_where_a_float_was_written(self, cloud: tuple[Path, dict[str, Any]]) -> None:
        _, document = cloud
        as_ints = json.loads(json.dumps(document))
        as_ints["budget_usd_per_month"] = int(document["budget_usd_per_month"])
        as_ints["placements"][0]["usd_per_month"] = int(document["placements"][0]["usd_per_month"])
        as_ints["data_usd_per_month"] = 0
        assert content_digest(as_ints) == document["content_digest"]  # one content
        written, read = (plan_from_json(json.dumps(d), "p", verify_digest=True) for d in (document, as_ints))
        assert plan_digest(read) == plan_digest(written)  # so one digest, and one tag on the stacks

    def test_a_plan_made_now_and_the_same_plan_read_back(self) -> None:
        """A plan without data movement sums to the int 0: its file, and so its digest, spelled 0 before, and
        0.0 once read back — a failover resumed from its runbook tagged its stacks with another digest."""
        from hybridctl.core.placement.planner import plan
        from hybridctl.drivers.inventory_files import load_inventory
        from support.plan_week import AT_PLAN_WEEK

        for name in ("train-onprem-serve-cloud.yaml", "cloud-burst.yaml"):
            made = plan(load_inventory(EXAMPLES / name).inventory, options=AT_PLAN_WEEK)
            read = plan_from_json(plan_to_json_utf8(made, plan_file=True).decode(), "p", verify_digest=True)
            assert plan_to_json_utf8(read, plan_file=True) == plan_to_json_utf8(made, plan_file=True)
            assert plan_digest(read) == plan_digest(made)

    def test_a_failover_plan_and_the_same_plan_read_back_from_its_runbook(self, tmp_path: Path) -> None:
        from hybridctl.core.failover.events import parse_events
        from hybridctl.core.failover.pipeline import failover
        from hybridctl.core.failover.replan import FailoverOptions
        from hybridctl.core.failover.serialize import runbook_from_json, runbook_to_json
        from hybridctl.core.memo import RunMemo
        from hybridctl.operations.common import plan_of_inventory
        from hybridctl.operations.failover_compute import command_run

        plan_file = tmp_path / "plan.json"
        assert run("plan", EXAMPLES / "cloud-burst.yaml", "--out", plan_file, "--state", tmp_path / "s").code == 0
        applied, inventory = plan_of_inventory(plan_file, EXAMPLES / "cloud-burst.yaml")
        memo = RunMemo()
        runbook = failover(inventory, applied, parse_events(["site-lost", "dc-ashburn"]), FailoverOptions(10_000, 30),
                           command_run(inventory, None, None, None, applied=applied, memo=memo),
                           digest=applied.inventory_digest).built()
        assert not runbook.after.data_movements  # the case: a sum of nothing
        resumed = runbook_from_json(runbook_to_json(runbook), "runbook")
        assert plan_digest(resumed.after) == plan_digest(runbook.after) == kept_plan_digest(memo, runbook.after)


# --- fuzz: any JSON anywhere in a plan file, digest recomputed ---------------------------------------------

_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                     | st.text(max_size=6), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=6), inner, max_size=3), max_leaves=6)
_PLACEMENT_FIELDS = ["workload", "tier", "site", "pool", "replicas", "gpus", "usd_per_month", "demand", "gpu_type",
                     "gpus_per_replica", "degraded", "hours_per_month", "reason"]
_POOL_FIELDS = ["site", "pool", "gpu", "capacity_type", "capacity_gpus", "used_gpus", "usd_per_gpu_hour", "committed",
                "gpus_per_node", "machines", "always_on_machines", "usd_per_month", "amortized_usd_per_month"]


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(part=st.sampled_from(["placements", "pools", "top"]), field=st.integers(0, 20), value=_JSON,
       digest=st.booleans())
def test_fuzz_any_value_in_any_field(cloud: tuple[Path, dict[str, Any]], tmp_path: Path, part: str, field: int,
                                     value: object, digest: bool) -> None:
    inventory, document = cloud
    changed = json.loads(json.dumps(document))
    if part == "placements":
        changed["placements"][0][_PLACEMENT_FIELDS[field % len(_PLACEMENT_FIELDS)]] = value
    elif part == "pools":
        changed["pools"][0][_POOL_FIELDS[field % len(_POOL_FIELDS)]] = value
    else:
        changed[sorted(changed)[field % len(changed)]] = value
    if digest:
        changed["content_digest"] = content_digest(changed) if _digestible(changed) else changed["content_digest"]
    path = write_json(tmp_path / "fuzzed.json", changed)
    state = tmp_path / "fuzz-state"
    before = snapshot(state)
    for argv in (("show", path), ("cost", path, "--by", "team"),
                 ("apply", path, "--inventory", inventory, "--state", state, "--auto-approve", "--skip-cloud")):
        result = run(*argv)
        assert_clean(result, frozenset({0, 1, 2, 4}))
        if result.code:
            assert_refused(result, str(path))
            assert snapshot(state) == before


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cut=st.integers(0, 10_000), junk=st.binary(min_size=1, max_size=8))
def test_fuzz_bytes_of_a_plan_file(cloud: tuple[Path, dict[str, Any]], tmp_path: Path, cut: int, junk: bytes) -> None:
    _, document = cloud
    data = json.dumps(document, indent=2).encode()
    position = cut % len(data)
    path = tmp_path / "bytes.json"
    path.write_bytes(data[:position] + junk + data[position + len(junk):])
    before = snapshot(tmp_path)
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tmp_path)  # a default ./.hybridctl would land here, and show in the snapshot
        result = run("show", path)
    assert_clean(result, frozenset({0, 1, 2, 4}))
    if result.code:
        assert_refused(result, str(path))
    assert snapshot(tmp_path) == before


def _digestible(document: dict[str, Any]) -> bool:
    try:
        content_digest(document)
    except (TypeError, ValueError):
        return False
    return True


def test_applied_state_helper_is_usable(tmp_path: Path) -> None:
    """The fixture other hostile tests build on (support/hostile.py) applies with the recording cloud."""
    _, state = applied_state(tmp_path)
    assert (state / "state.json").is_file()


def test_apply_takes_teams_and_workload_types_from_the_inventory_not_the_plan_file(tmp_path: Path) -> None:
    """A forged plan's `teams` moved a workload's showback to another team (and `workload_types` to another
    type): both are the inventory's on apply, as `plan` wrote them, whatever the file says."""
    document = cloud_document()
    document["workloads"][0]["team"] = "search"
    inventory = write_json(tmp_path / "inventory.yaml", document)
    assert run("plan", inventory, "--out", tmp_path / "plan.json", "--state", tmp_path / "empty").code == 0
    honest = json.loads((tmp_path / "plan.json").read_text())
    assert honest["teams"] == {"api": "search"} and honest["workload_types"] == {"api": "realtime_inference"}

    def forgery(d: dict[str, Any]) -> None:
        d["teams"], d["workload_types"] = {"api": "finance"}, {"api": "training"}

    path = write_json(tmp_path / "forged.json", forged(honest, forgery))
    result = run("apply", path, "--inventory", inventory, "--state", tmp_path / "state", "--auto-approve")
    assert result.code == 0, result.output
    applied = json.loads((tmp_path / "state" / "state.json").read_text())["applied_plan"]
    assert applied["teams"] == {"api": "search"} and applied["workload_types"] == {"api": "realtime_inference"}
