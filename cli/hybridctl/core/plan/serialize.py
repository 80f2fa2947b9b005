"""The versioned JSON form of a plan, and plan files.

Plan files are byte-stable: the same inventory gives the same file. That is why a plan file
leaves out the solver's wall time (`solver.seconds` is null there); the JSON printed by
`plan --format json` carries it.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import fields
from functools import cache
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from pydantic import ConfigDict, TypeAdapter, ValidationError

from hybridctl.core.jsontext import (
    dumps_canonical_numbers_as_floats,
    dumps_indented,
    dumps_indented_utf8,
    dumps_indented_with_digest,
)
from hybridctl.core.plan.jsonread import encodable, json_object, surrogate, unrepresentable
from hybridctl.core.plan.model import (
    FORMAT_VERSION,
    READABLE_FORMAT_VERSIONS,
    DataMovement,
    Placement,
    Plan,
    PlanSegment,
    PoolUsage,
    SolverReport,
    Unplaced,
)
from hybridctl.core.pricing.showback import showback_document
from hybridctl.core.week.segments import WeekError, parse_iso_week
from hybridctl.core.week.usage import pool_weeks_document
from hybridctl.errors import HybridctlError, RefusedError

JsonDict = dict[str, Any]


class PlanFileError(HybridctlError):
    pass


class PlanIntegrityError(RefusedError):
    """A plan file that is well-formed but not what `plan --out` wrote, or breaks the inventory's rules."""


_PLAN_FILE_HINT = "pass a file written by `hybridctl plan --out`, unedited"


def _fields_of(cls: type[Any]) -> tuple[tuple[str, ...], attrgetter[Any]]:
    names = tuple(f.name for f in fields(cls))
    return names, attrgetter(*names)


# each part of a plan's field names, and a getter of their values
_FIELDS = MappingProxyType({cls: _fields_of(cls) for cls in (Placement, Unplaced, DataMovement, PoolUsage,
                                                             SolverReport)})


def _record(part: Any) -> JsonDict:
    """A plan part's fields as a dict: what dataclasses.asdict gives for these flat records, without
    its deep copy of every value (a third of writing a 100,000-workload plan)."""
    names, values = _FIELDS[type(part)]
    own = part.__dict__
    if len(own) == len(names):  # the fields alone (frozen dataclasses set them all, in order): a copy
        return dict(own)
    return dict(zip(names, values(part), strict=True))


_SOLVER_FLOATS = ("objective", "bound", "gap", "penalty_usd")


def plan_to_dict(plan: Plan, *, plan_file: bool = False) -> JsonDict:
    document = _document(plan, plan_file)
    if plan_file:
        document["content_digest"] = content_digest(document)
    return document


def _document(plan: Plan, plan_file: bool) -> JsonDict:
    """plan_to_dict's document, without its content digest.

    Amounts are floats whatever the Plan holds (a sum of nothing is the int 0): one plan has one text,
    and so one digest, whether it was just made or read back from a file (plan_digest, the stacks' tag)."""
    solver = _record(plan.solver)
    for name in _SOLVER_FLOATS:
        solver[name] = float(solver[name])
    solver["seconds"] = None if plan_file else float(solver["seconds"])
    budget = plan.budget_usd_per_month
    document: JsonDict = {
        "format_version": FORMAT_VERSION,
        "inventory": plan.inventory_name,
        "cost_model": plan.cost_model,
        "total_usd_per_month": float(plan.total_usd_per_month),
        "committed_usd_per_month": float(plan.committed_usd_per_month),
        "pay_per_use_usd_per_month": float(plan.pay_per_use_usd_per_month),
        "data_usd_per_month": float(plan.data_usd_per_month),
        "idle_committed_usd_per_month": float(plan.idle_committed_usd_per_month),
        "compute_usd_per_month": float(plan.compute_usd_per_month),
        "budget_usd_per_month": None if budget is None else float(budget),
        "over_budget": plan.over_budget,
        "placements": _placements(plan),
        "unplaced": [_record(u) for u in plan.unplaced],
        "data_movements": [_record(m) for m in plan.data_movements],
        "pools": [_record(p) for p in plan.pools],
        "tiers": dict(sorted(plan.tiers.items())),
        "workload_types": dict(sorted(plan.workload_types.items())),
        "teams": dict(sorted(plan.teams.items())),
        "solver": solver,
    }
    if plan.segments:  # a timed plan (format 3): its week
        document["week"] = plan.week
        document["segments"] = [{"start_hour": float(s.start_hour), "end_hour": float(s.end_hour)}
                                for s in plan.segments]
        document["pool_weeks"] = pool_weeks_document(plan)
    if not plan_file:  # derived figures, for readers of `plan --format json`; a plan file is priced again when read
        document["showback"] = showback_document(plan)
    if plan_file:
        document["inventory_digest"] = plan.inventory_digest
        document["base_serial"] = plan.base_serial
        document["tool_version"] = plan.tool_version
    return document


def _placements(plan: Plan) -> list[JsonDict]:
    records = [_record(p) for p in plan.placements]
    for record in records:  # hours per segment only in a timed plan; floats whatever was summed
        if plan.segments:
            record["segment_hours"] = [float(h) for h in record["segment_hours"]]
        else:
            del record["segment_hours"]
    return records


def plan_to_json(plan: Plan, *, plan_file: bool = False) -> str:
    return dumps_indented(plan_to_dict(plan, plan_file=plan_file)) + "\n"


def plan_to_json_utf8(plan: Plan, *, plan_file: bool = False) -> bytes:
    """plan_to_json's text in UTF-8: what a plan file holds, byte for byte."""
    if plan_file:
        return dumps_indented_with_digest(_document(plan, True), "content_digest", _sha256) + b"\n"
    return dumps_indented_utf8(plan_to_dict(plan)) + b"\n"


def _build(cls: type[Any], raw: Any, where: str) -> Any:
    """One part of a plan file, its every field type-checked (a plan file is untrusted input)."""
    return _checked(cls, [raw], lambda _: where)[0]


def _parts(cls: type[Any], raw: JsonDict, name: str, source: str) -> tuple[Any, ...]:
    return _checked(cls, raw[name], lambda index: f"{source}: {name}[{index}]")


def _checked(cls: type[Any], items: Sequence[Any], where: Callable[[int], str]) -> tuple[Any, ...]:
    """Parts of a plan file, each field type-checked, in one validation (a fleet's plan holds 15,000
    placements, and one call each took half as long again); an error names the part (`where`) and field."""
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise PlanFileError(f"{where(index)}: expected an object, got {type(item).__name__}")
    names = frozenset(_FIELDS[cls][0])
    try:
        # JSON mode, strict: 2.0 is no int, "3" no number, and a missing field is named.
        return tuple(_adapter(tuple[cls, ...]).validate_json(  # type: ignore[valid-type]
            json.dumps([{k: v for k, v in item.items() if k in names} for item in items]), strict=True))
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        if not first["loc"]:  # not a field's value but the text: a lone surrogate (a plan read from a state)
            found = unrepresentable(list(items)) or f"[0]: {first['msg'].lower()}"
            position, _, rest = found.partition("]")
            raise PlanFileError(f"{where(int(position.lstrip('[')))}{rest}", hint=_PLAN_FILE_HINT) from None
        at, *field = first["loc"]
        raise PlanFileError(f"{where(int(at))}.{'.'.join(str(part) for part in field)}: "
                            f"{first['msg'].lower()} (got {first.get('input')!r})", hint=_PLAN_FILE_HINT) from None


@cache  # one per part of a plan: static, as the code is (made when first needed: 0.2 s for all of them)
def _adapter(cls: Any) -> TypeAdapter[Any]:
    # no NaN or infinity in any amount: a plan read from a state was parsed by a reader that takes them
    return TypeAdapter(cls, config=ConfigDict(allow_inf_nan=False))


def content_digest(document: JsonDict) -> str:
    """The digest of a plan document's content, itself left out; written into every plan file."""
    # ints as floats: a plan read back holds floats where it was written with ints (2117, 2117.0)
    body = {k: v for k, v in document.items() if k != "content_digest"}
    return _sha256(dumps_canonical_numbers_as_floats(body))


def _sha256(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


def verify_content_digest(raw: JsonDict, source: str) -> None:
    """Refuse a plan file changed since `plan --out` wrote it (the reviewed plan is what runs)."""
    recorded = raw.get("content_digest")
    if not isinstance(recorded, str):
        raise PlanIntegrityError(f"{source}: the plan file has no content_digest",
                                 hint="write plan files with `hybridctl plan --out`; they are not edited by hand")
    actual = content_digest(raw)
    if recorded != actual:
        raise PlanIntegrityError(
            f"{source}: the plan file was changed after it was written (content digest {recorded[:19]}…, "
            f"content now {actual[:19]}…)",
            hint="plan files are not edited by hand: change the inventory and run `hybridctl plan --out` again")


def plan_from_dict(raw: JsonDict, source: str = "plan", *, verify_digest: bool = False) -> Plan:
    """A Plan from its JSON form; with verify_digest (plan files), only if unchanged since written."""
    version = raw.get("format_version")
    if version not in READABLE_FORMAT_VERSIONS or isinstance(version, bool):
        raise PlanFileError(f"{source}: plan format_version {version!r} is not supported (this hybridctl reads "
                            f"{', '.join(map(str, READABLE_FORMAT_VERSIONS))})",
                            hint="re-run `hybridctl plan --out` with this version")
    if verify_digest:
        verify_content_digest(raw, source)
    try:
        solver = dict(raw["solver"])
        solver["seconds"] = solver.get("seconds") or 0.0
        _expect(raw, source)
        segments = _segments(raw, source)
        placements = _parts(Placement, raw, "placements", source)
        _check_segment_hours(placements, segments, source)
        read = Plan(
            inventory_name=str(raw["inventory"]),
            inventory_digest=str(raw.get("inventory_digest", "")),
            placements=placements,
            unplaced=_parts(Unplaced, raw, "unplaced", source),
            data_movements=_parts(DataMovement, raw, "data_movements", source),
            pools=_parts(PoolUsage, raw, "pools", source),
            solver=_build(SolverReport, solver, f"{source}: solver"),
            compute_usd_per_month=float(raw["compute_usd_per_month"]),
            data_usd_per_month=float(raw["data_usd_per_month"]),
            budget_usd_per_month=None if raw.get("budget_usd_per_month") is None
            else float(raw["budget_usd_per_month"]),
            tiers=dict(raw.get("tiers", {})),
            workload_types=dict(raw.get("workload_types", {})),
            teams=dict(raw.get("teams", {})),
            base_serial=raw.get("base_serial"),
            tool_version=str(raw.get("tool_version", "")),
            cost_model=_cost_model(raw.get("cost_model")),
            week=str(raw.get("week", "")),
            segments=segments,
        )
        if segments and raw.get("pool_weeks") != pool_weeks_document(read):
            raise PlanFileError(f"{source}: pool_weeks are not what the placements' hours per segment give",
                                hint=_PLAN_FILE_HINT)
        _check_over_budget(raw, read, source)
        return read
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanFileError(f"{source}: not a hybridctl plan ({type(exc).__name__}: {exc})",
                            hint=_PLAN_FILE_HINT) from None


# The top-level fields outside the dataclasses, with the JSON types they must have.
_TOP_LEVEL: MappingProxyType[str, tuple[type, ...]] = MappingProxyType({
    "inventory": (str,), "compute_usd_per_month": (int, float), "data_usd_per_month": (int, float),
    "budget_usd_per_month": (int, float, type(None)), "tiers": (dict,), "workload_types": (dict,), "teams": (dict,),
    "base_serial": (int, type(None)), "tool_version": (str,), "inventory_digest": (str,),
    "placements": (list,), "unplaced": (list,), "data_movements": (list,), "pools": (list,),
})

_SUMMARY_AMOUNTS = ("total_usd_per_month", "committed_usd_per_month", "pay_per_use_usd_per_month",
                    "data_usd_per_month", "idle_committed_usd_per_month", "compute_usd_per_month",
                    "budget_usd_per_month")


def _expect(raw: JsonDict, source: str) -> None:
    for name, types in _TOP_LEVEL.items():
        if name in raw and (not isinstance(raw[name], types) or isinstance(raw[name], bool)):
            raise PlanFileError(f"{source}: {name} has the wrong type ({type(raw[name]).__name__})",
                                hint=_PLAN_FILE_HINT)
    for name in _SUMMARY_AMOUNTS:  # a plan read from a state may hold NaN or infinity (a plan file's text may not)
        value = raw.get(name)
        if isinstance(value, float) and not math.isfinite(value):
            raise PlanFileError(f"{source}: {name}: {value!r} is not a finite number", hint=_PLAN_FILE_HINT)
    for name in ("tiers", "workload_types", "teams"):
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.get(name, {}).items()):
            raise PlanFileError(f"{source}: {name} maps workload names to text", hint=_PLAN_FILE_HINT)
    # text no file can be written back with (a plan read from a state: json_object checks a plan file's)
    for name in ("inventory", "tool_version", "inventory_digest", "tiers", "workload_types", "teams"):
        value = raw.get(name, "")
        texts = [value] if isinstance(value, str) else [*value, *value.values()]
        if not encodable("".join(texts)):
            bad = next(t for t in texts if not encodable(t))
            raise PlanFileError(f"{source}: {name}: text with a lone surrogate ({surrogate(bad)})",
                                hint=_PLAN_FILE_HINT)


_WEEK_HOURS = 168.0


def _segments(raw: JsonDict, source: str) -> tuple[PlanSegment, ...]:
    """The plan's week (format 3), checked: an ISO week, and segments that cut the week from hour 0 to 168
    in order, each of positive length (untrusted input: the checker and apply read them)."""
    week, found = raw.get("week"), raw.get("segments")
    if week is None and found is None:
        return ()
    if raw.get("format_version") == 2 or not isinstance(week, str) or not isinstance(found, list) or not found:
        raise PlanFileError(f"{source}: week and segments go together, in a plan of format 3 or later (week "
                            f"{week!r}, segments {type(found).__name__})", hint=_PLAN_FILE_HINT)
    try:
        parse_iso_week(week)
    except WeekError as exc:
        raise PlanFileError(f"{source}: week: {exc}", hint=_PLAN_FILE_HINT) from None
    segments: list[PlanSegment] = []
    at = 0.0
    for index, item in enumerate(found):
        bounds = [item.get(k) if isinstance(item, dict) else None for k in ("start_hour", "end_hour")]
        if set(item) != {"start_hour", "end_hour"} if isinstance(item, dict) else True:
            raise PlanFileError(f"{source}: segments[{index}]: expected {{start_hour, end_hour}}", hint=_PLAN_FILE_HINT)
        if not all(isinstance(b, int | float) and not isinstance(b, bool) and math.isfinite(b) for b in bounds):
            raise PlanFileError(f"{source}: segments[{index}]: hours must be numbers", hint=_PLAN_FILE_HINT)
        start, end = float(bounds[0]), float(bounds[1])  # type: ignore[arg-type]
        if abs(start - at) > 1e-9 or not start < end <= _WEEK_HOURS:
            raise PlanFileError(f"{source}: segments[{index}]: [{start:g}, {end:g}) does not follow the previous "
                                f"segment (ending at {at:g}) inside the week's 168 hours", hint=_PLAN_FILE_HINT)
        segments.append(PlanSegment(start, end))
        at = end
    if abs(at - _WEEK_HOURS) > 1e-9:
        raise PlanFileError(f"{source}: segments end at hour {at:g}, not at the week's end (168)", hint=_PLAN_FILE_HINT)
    return tuple(segments)


def _check_segment_hours(placements: tuple[Placement, ...], segments: tuple[PlanSegment, ...], source: str) -> None:
    for index, pl in enumerate(placements):
        if not pl.segment_hours and not segments:
            continue
        if len(pl.segment_hours) != len(segments):
            raise PlanFileError(f"{source}: placements[{index}].segment_hours: {len(pl.segment_hours)} values for "
                                f"{len(segments)} segments", hint=_PLAN_FILE_HINT)
        for s, (hours, segment) in enumerate(zip(pl.segment_hours, segments, strict=True)):
            if not (math.isfinite(hours) and 0.0 <= hours <= segment.hours + 1e-6):
                raise PlanFileError(f"{source}: placements[{index}].segment_hours[{s}]: {hours!r} is not between 0 "
                                    f"and the segment's {segment.hours:g} hours", hint=_PLAN_FILE_HINT)


def _check_over_budget(raw: JsonDict, read: Plan, source: str) -> None:
    """Format 4 marks a plan over its budget: the mark must be there and be what the plan's totals say (an
    older format is marked by its totals alone)."""
    if raw.get("format_version") in (2, 3):
        return
    mark = raw.get("over_budget")
    if not isinstance(mark, bool):
        raise PlanFileError(f"{source}: over_budget must be true or false (got {mark!r})", hint=_PLAN_FILE_HINT)
    if mark != read.over_budget:
        raise PlanFileError(f"{source}: over_budget is {str(mark).lower()}, but the plan's total "
                            f"${read.total_usd_per_month:,.2f} is {'within' if mark else 'over'} its budget "
                            f"${read.budget_usd_per_month or 0:,.2f}", hint=_PLAN_FILE_HINT)


def _cost_model(raw: object) -> str:
    if raw not in ("cash", "amortized"):
        raise ValueError(f"cost_model {raw!r} is not cash or amortized")
    return str(raw)


def plan_from_json(text: str, source: str = "plan", *, verify_digest: bool = False) -> Plan:
    raw = json_object(text, source, PlanFileError, "plan", _PLAN_FILE_HINT)
    return plan_from_dict(raw, source, verify_digest=verify_digest)
