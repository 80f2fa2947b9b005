"""Non-finite numbers inside a plan (issue 34, #12): NaN, Infinity, -Infinity and 1e400 in any numeric
field of a placement, a pool, a data movement, the solver's report or the summary are refused, with one
message naming the file and the field, exit 1; never accepted, never exit 70.

A plan arrives two ways: as a plan file's text (`show`, `apply PLAN`: json_object reads it, and Python's
JSON reading would take NaN and Infinity), and as a plan already parsed, from a state's `applied_plan`
(the state's reader takes NaN and Infinity as json writes them). Both are tried for every field.
Before this test, a NaN in a state's applied placement made `failover` exit 70 ("cannot convert float NaN
to integer"), `plan` and `apply` took it silently, and a NaN in a plan file's text was refused without
saying where.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.plan.serialize import PlanFileError, plan_from_dict, plan_from_json, plan_to_dict
from support.examples import EXAMPLES
from support.hostile import applied_state, assert_refused, run, snapshot, write_json

# every numeric field of each part of a plan, and whether it is an int (a count) or a float (an amount)
PLACEMENT = {"replicas": int, "gpus": int, "usd_per_month": float, "gpus_per_replica": int, "hours_per_month": float}
POOL = {"capacity_gpus": int, "used_gpus": int, "usd_per_gpu_hour": float, "gpus_per_node": int, "machines": int,
        "always_on_machines": int, "usd_per_month": float, "amortized_usd_per_month": float}
MOVEMENT = {"gb_per_month": float, "usd_per_month": float}
SOLVER = {"objective": float, "bound": float, "gap": float, "penalty_usd": float, "components": int, "variables": int}
SUMMARY = ("total_usd_per_month", "committed_usd_per_month", "pay_per_use_usd_per_month", "data_usd_per_month",
           "idle_committed_usd_per_month", "compute_usd_per_month", "budget_usd_per_month")

# (part, index, field, kind): part None for the summary's top-level fields
FIELDS: list[tuple[str | None, int, str, type | None]] = [
    *(("placements", 3, name, kind) for name, kind in PLACEMENT.items()),
    *(("pools", 1, name, kind) for name, kind in POOL.items()),
    *(("data_movements", 1, name, kind) for name, kind in MOVEMENT.items()),
    *(("solver", 0, name, kind) for name, kind in SOLVER.items()),
    *((None, 0, name, None) for name in SUMMARY),
]
FIELD_IDS = [f"{part or 'summary'}.{name}" for part, _, name, _ in FIELDS]

# the literal as a plan file's text holds it, and the value json reads from it (from a state)
LITERALS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf"), "1e400": float("inf"),
            "-1e400": float("-inf")}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    """cloud-burst's plan file as JSON: more than 3 placements, 1 pool and 1 data movement, a budget."""
    from hybridctl.core.placement.planner import plan
    from hybridctl.drivers.inventory_files import load_inventory

    made = plan_to_dict(plan(load_inventory(EXAMPLES / "cloud-burst.yaml").inventory), plan_file=True)
    assert len(made["placements"]) > 3 and len(made["pools"]) > 1 and len(made["data_movements"]) > 1
    assert made["budget_usd_per_month"] is not None
    return made


def _where(part: str | None, index: int, name: str) -> str:
    if part is None:
        return name
    return f"solver.{name}" if part == "solver" else f"{part}[{index}].{name}"


def _set(document: dict[str, Any], part: str | None, index: int, name: str, value: object) -> dict[str, Any]:
    changed: dict[str, Any] = json.loads(json.dumps(document))
    if part is None:
        changed[name] = value
    elif part == "solver":
        changed["solver"][name] = value
    else:
        changed[part][index][name] = value
    return changed


def _text_with(document: dict[str, Any], part: str | None, index: int, name: str, literal: str) -> str:
    """The plan file's text with `literal` written, as is, as the value of the field."""
    text = json.dumps(_set(document, part, index, name, "@HOSTILE@"), indent=2)
    assert text.count('"@HOSTILE@"') == 1
    return text.replace('"@HOSTILE@"', literal)


@pytest.mark.parametrize("literal", sorted(LITERALS))
@pytest.mark.parametrize(("part", "index", "name", "kind"), FIELDS, ids=FIELD_IDS)
def test_in_a_plan_files_text(document: dict[str, Any], part: str | None, index: int, name: str,
                              kind: type | None, literal: str) -> None:
    text = _text_with(document, part, index, name, literal)
    with pytest.raises(PlanFileError) as caught:
        plan_from_json(text, "plan.json", verify_digest=True)
    where = _where(part, index, name)
    if literal.lstrip("-") == "1e400":
        assert caught.value.message == f"plan.json: {where}: a number beyond the range of a float ({literal})"
    else:
        assert caught.value.message == f"plan.json: {where}: {literal} is not a JSON number"


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
@pytest.mark.parametrize(("part", "index", "name", "kind"), FIELDS, ids=FIELD_IDS)
def test_in_a_plan_read_from_a_state(document: dict[str, Any], part: str | None, index: int, name: str,
                                     kind: type | None, literal: str) -> None:
    """A state's applied plan is parsed already (json takes NaN and Infinity): plan_from_dict refuses them."""
    value = LITERALS[literal]
    with pytest.raises(PlanFileError) as caught:
        plan_from_dict(_set(document, part, index, name, value), "state.json: applied_plan")
    where, shown = _where(part, index, name), repr(value)
    expected = {int: f"state.json: applied_plan: {where}: input should be a valid integer (got {shown})",
                float: f"state.json: applied_plan: {where}: input should be a finite number (got {shown})",
                None: f"state.json: applied_plan: {where}: {shown} is not a finite number"}[kind]
    assert caught.value.message == expected


def test_the_same_plan_with_finite_numbers_reads(document: dict[str, Any]) -> None:
    """The control: the document these cases change is read both ways (so each refusal is the value's)."""
    assert plan_from_json(json.dumps(document, indent=2), "plan.json", verify_digest=True).placements
    read = plan_from_dict(json.loads(json.dumps(document)), "state.json: applied_plan")
    assert read.placements[3].usd_per_month == document["placements"][3]["usd_per_month"]


# --- through the CLI: exit 1, one message naming the file and the field, nothing written --------------------

def test_show_and_apply_refuse_a_nan_placement_cost(document: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "plan.json"
    path.write_text(_text_with(document, "placements", 0, "usd_per_month", "NaN"))
    assert_refused(run("show", path), str(path), "placements[0].usd_per_month: NaN is not a JSON number",
                   codes=frozenset({1}))
    state = tmp_path / "state"
    result = run("apply", path, "--inventory", EXAMPLES / "cloud-burst.yaml", "--state", state, "--auto-approve",
                 "--skip-cloud")
    assert_refused(result, str(path), "placements[0].usd_per_month: NaN is not a JSON number", codes=frozenset({1}))
    assert snapshot(state) == {}


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return applied_state(tmp_path_factory.mktemp("applied"))


# (where in the applied plan, the value, what the message names)
STATE_CASES = {
    "a placement's cost NaN": (("placements", 0, "usd_per_month"), float("nan"),
                               "applied_plan: placements[0].usd_per_month: input should be a finite number (got nan)"),
    "a placement's hours Infinity": (("placements", 0, "hours_per_month"), float("inf"),
                                     "applied_plan: placements[0].hours_per_month: input should be a finite number "
                                     "(got inf)"),
    "a pool's price -Infinity": (("pools", 0, "usd_per_gpu_hour"), float("-inf"),
                                 "applied_plan: pools[0].usd_per_gpu_hour: input should be a finite number (got -inf)"),
    "the budget Infinity": ((None, 0, "budget_usd_per_month"), float("inf"),
                            "applied_plan: budget_usd_per_month: inf is not a finite number"),
}


@pytest.mark.parametrize("command", ["failover", "plan", "apply"])
@pytest.mark.parametrize("case", sorted(STATE_CASES))
def test_a_state_whose_applied_plan_is_not_finite(applied: tuple[Path, Path], tmp_path: Path, case: str,
                                                  command: str) -> None:
    inventory, source = applied
    state = shutil.copytree(source, tmp_path / "state")
    (part, index, name), value, named = STATE_CASES[case]
    stored = json.loads((state / "state.json").read_text())
    stored["applied_plan"] = _set(stored["applied_plan"], part, index, name, value)
    write_json(state / "state.json", stored)  # json writes NaN and Infinity, as a tool editing the state would
    before = snapshot(state)
    argv = {"failover": ("failover", "site-lost", "aws-a", "--format", "json"), "plan": ("plan", str(inventory)),
            "apply": ("apply", str(inventory), "--auto-approve")}[command]
    result = run(*argv, "--state", state)
    assert_refused(result, str(state / "state.json"), named, codes=frozenset({1}))
    assert snapshot(state) == before
