"""The versioned JSON form of a plan, and plan files.

Plan files are byte-stable: the same inventory gives the same file. That is why a plan file
leaves out the solver's wall time (`solver.seconds` is null there); the JSON printed by
`plan --format json` carries it.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from typing import Any

from hybridctl.core.plan.model import (
    FORMAT_VERSION,
    DataMovement,
    Placement,
    Plan,
    PoolUsage,
    SolverReport,
    Unplaced,
)
from hybridctl.errors import HybridctlError

JsonDict = dict[str, Any]


class PlanFileError(HybridctlError):
    pass


def plan_to_dict(plan: Plan, *, plan_file: bool = False) -> JsonDict:
    solver = asdict(plan.solver)
    if plan_file:
        solver["seconds"] = None
    document: JsonDict = {
        "format_version": FORMAT_VERSION,
        "inventory": plan.inventory_name,
        "cost_model": plan.cost_model,
        "total_usd_per_month": plan.total_usd_per_month,
        "committed_usd_per_month": plan.committed_usd_per_month,
        "pay_per_use_usd_per_month": plan.pay_per_use_usd_per_month,
        "data_usd_per_month": plan.data_usd_per_month,
        "idle_committed_usd_per_month": plan.idle_committed_usd_per_month,
        "compute_usd_per_month": plan.compute_usd_per_month,
        "budget_usd_per_month": plan.budget_usd_per_month,
        "placements": [asdict(p) for p in plan.placements],
        "unplaced": [asdict(u) for u in plan.unplaced],
        "data_movements": [asdict(m) for m in plan.data_movements],
        "pools": [asdict(p) for p in plan.pools],
        "tiers": dict(sorted(plan.tiers.items())),
        "workload_types": dict(sorted(plan.workload_types.items())),
        "teams": dict(sorted(plan.teams.items())),
        "solver": solver,
    }
    if plan_file:
        document["inventory_digest"] = plan.inventory_digest
        document["base_serial"] = plan.base_serial
        document["tool_version"] = plan.tool_version
    return document


def plan_to_json(plan: Plan, *, plan_file: bool = False) -> str:
    return json.dumps(plan_to_dict(plan, plan_file=plan_file), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _build(cls: type[Any], raw: Any, where: str) -> Any:
    if not isinstance(raw, dict):
        raise PlanFileError(f"{where}: expected an object")
    names = {f.name for f in fields(cls)}
    try:
        return cls(**{k: v for k, v in raw.items() if k in names})
    except TypeError as exc:
        raise PlanFileError(f"{where}: {exc}") from None


def plan_from_dict(raw: JsonDict, source: str = "plan") -> Plan:
    version = raw.get("format_version")
    if version != FORMAT_VERSION:
        raise PlanFileError(f"{source}: plan format_version {version!r} is not supported (this hybridctl reads "
                            f"{FORMAT_VERSION})", hint="re-run `hybridctl plan --out` with this version")
    try:
        solver = dict(raw["solver"])
        solver["seconds"] = solver.get("seconds") or 0.0
        return Plan(
            inventory_name=str(raw["inventory"]),
            inventory_digest=str(raw.get("inventory_digest", "")),
            placements=tuple(_build(Placement, p, f"{source}: placements") for p in raw["placements"]),
            unplaced=tuple(_build(Unplaced, u, f"{source}: unplaced") for u in raw["unplaced"]),
            data_movements=tuple(_build(DataMovement, m, f"{source}: data_movements") for m in raw["data_movements"]),
            pools=tuple(_build(PoolUsage, p, f"{source}: pools") for p in raw["pools"]),
            solver=_build(SolverReport, solver, f"{source}: solver"),
            compute_usd_per_month=float(raw["compute_usd_per_month"]),
            data_usd_per_month=float(raw["data_usd_per_month"]),
            budget_usd_per_month=raw.get("budget_usd_per_month"),
            tiers=dict(raw.get("tiers", {})),
            workload_types=dict(raw.get("workload_types", {})),
            teams=dict(raw.get("teams", {})),
            base_serial=raw.get("base_serial"),
            tool_version=str(raw.get("tool_version", "")),
            cost_model=_cost_model(raw.get("cost_model")),
        )
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanFileError(f"{source}: not a hybridctl plan ({type(exc).__name__}: {exc})",
                            hint="pass a file written by `hybridctl plan --out`") from None


def _cost_model(raw: object) -> str:
    if raw not in ("cash", "amortized"):
        raise ValueError(f"cost_model {raw!r} is not cash or amortized")
    return str(raw)


def json_object(text: str, source: str, error: type[HybridctlError], what: str, hint: str) -> JsonDict:
    """A JSON document that must be an object, with the line and column of a syntax error."""
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}", hint=hint) from None
    if not isinstance(raw, dict):
        raise error(f"{source}: not a hybridctl {what}", hint=hint)
    return raw


def plan_from_json(text: str, source: str = "plan") -> Plan:
    raw = json_object(text, source, PlanFileError, "plan", "pass a file written by `hybridctl plan --out`")
    return plan_from_dict(raw, source)
