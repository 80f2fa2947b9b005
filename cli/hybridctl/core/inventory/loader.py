"""Load an inventory from its files' texts (drivers/inventory_files.py reads them), with every error located
in the user's files."""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from typing import get_args, get_origin

from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from hybridctl.core.inventory.diagnostics import Diagnostic, Diagnostics, InvalidInventoryError, Severity
from hybridctl.core.inventory.documents import (
    Locator,
    Path_,
    Source,
    merge_documents,
)
from hybridctl.core.inventory.models import SUPPORTED_VERSIONS, Inventory


@dataclass(frozen=True)
class LoadedInventory:
    inventory: Inventory
    locator: Locator
    sources: tuple[Source, ...]
    warnings: tuple[Diagnostic, ...] = ()


def _model_at(path: Path_) -> type[BaseModel] | None:
    """The pydantic model that validates the mapping at path, to suggest field names."""
    model: type[BaseModel] | None = Inventory
    for step in path:
        if model is None:
            return None
        if isinstance(step, int):
            continue
        info = model.model_fields.get(step)
        if info is None:
            return None
        model = _first_model(info.annotation)
    return model


def _first_model(annotation: object) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) in (list, dict, typing.Union, types.UnionType, typing.Annotated):
        for arg in get_args(annotation):
            found = _first_model(arg)
            if found is not None:
                return found
    return None


def _describe(value: object) -> str:
    if isinstance(value, str):
        shown = value if len(value) <= 40 else value[:37] + "..."
        return f"'{shown}' (text)"
    if isinstance(value, bool):
        return f"{str(value).lower()} (a boolean)"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "nothing (null)"
    return repr(value)


def _field_path(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path))


# Hints for the models' own validators (models.py), keyed by their error type.
_CUSTOM_HINTS = types.MappingProxyType({
    "day_spec": "write a day (mon ... sun), a range (mon-fri, or fri-mon across the weekend), or a list: [sat, sun]",
    "time_of_day": "write HH:MM in quotes, 00:00 to 24:00 (24:00 only as `to`), e.g. \"08:00\"",
    "quarter_hour": "windows open and close on the quarter hour: :00, :15, :30 or :45",
    "time_zone": "write an IANA time zone name, such as UTC, Europe/Amsterdam or America/New_York",
    "host_name": "use letters, digits, '-' and '.', as in a DNS name (fra-gpu-01 or fra-gpu-01.example.internal)",
    "host_address": "write the DNS name or the IP address that ssh connects to (10.0.0.11, 2001:db8::11, "
                    "gpu-01.example.internal); no spaces, quotes, '$', ';', braces or a leading '-'",
    "token": "use one word of letters, digits, '.', '_' and '-' (at most 64 characters), such as EU, us-east-1, "
             "A100-80GB or fra-row-a",
    "posix_user": "use a POSIX user name: a lowercase letter or '_', then lowercase letters, digits, '_' or '-' "
                  "(at most 32 characters)",
})


def _shape_hint(expected: str, path: Path_) -> str:
    """How to write the shape that was expected, in YAML."""
    name = str(path[-1]) if path and isinstance(path[-1], str) else "key"
    if expected == "a list":
        return f"write a list: `{name}: [a, b]`, or one item a line, each starting with '- '"
    if expected == "a mapping":
        return f"write a mapping: `{name}:` then its fields indented below it, or `{name}: {{field: value}}`"
    if expected == "text":
        return "quote text that YAML would read as a number, a boolean or a date: `'1.0'`, `'yes'`"
    if expected == "true or false":
        return "write true or false, without quotes"
    return "write numbers without quotes or units: `8`, `2.5`"


def _diagnostic_for(error: ErrorDetails, locator: Locator) -> Diagnostic:
    path: Path_ = tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-")))
    kind = error["type"]
    where = _field_path(path)
    value = error.get("input")
    ctx = error.get("ctx", {})
    if kind == "missing":
        return Diagnostic("missing-field", f"{where}: required field '{path[-1]}' is missing",
                          locator.location(path[:-1]), f"add `{path[-1]}:` here (see spec/inventory-v1.md)")
    if kind == "extra_forbidden":
        name = str(path[-1])
        model = _model_at(path[:-1])
        known = sorted(model.model_fields) if model else []
        close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else (f"known fields: {', '.join(known)}" if known else None)
        return Diagnostic("unknown-field", f"{where}: unknown field '{name}'", locator.location(path, key=True), hint)
    location = locator.location(path)
    if kind == "literal_error" and path == ("version",):
        supported = ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        return Diagnostic("unsupported-version", f"version: {_describe(value)} is not a supported inventory "
                          f"format version (supported: {supported})", location,
                          "set `version: 1`, or upgrade hybridctl if the file was written for a newer one")
    if kind in ("enum", "literal_error"):
        expected = ctx.get("expected", "")
        return Diagnostic("invalid-choice", f"{where}: {_describe(value)} is not one of {expected}", location,
                          "use one of the listed values, spelled exactly")
    if kind in _CUSTOM_HINTS:
        return Diagnostic("invalid-value", f"{where}: {_describe(value)} {error['msg']}", location, _CUSTOM_HINTS[kind])
    if kind == "string_pattern_mismatch":
        return Diagnostic("invalid-name", f"{where}: {_describe(value)} is not a valid name", location,
                          "names use lowercase letters, digits and '-' (a DNS label, at most 63 characters), "
                          "because they name Kubernetes namespaces, stacks and Ansible groups")
    expected = {"int_type": "a whole number", "int_parsing": "a whole number", "float_type": "a number",
                "float_parsing": "a number", "bool_type": "true or false", "bool_parsing": "true or false",
                "string_type": "text", "list_type": "a list", "dict_type": "a mapping",
                "model_type": "a mapping", "model_attributes_type": "a mapping",
                "finite_number": "a finite number", "int_from_float": "a whole number"}.get(kind)
    if expected:
        return Diagnostic("wrong-type", f"{where}: expected {expected}, got {_describe(value)}", location,
                          _shape_hint(expected, path))
    if kind in ("less_than_equal", "less_than"):
        return Diagnostic("out-of-range", f"{where}: {_describe(value)} is above the upper bound of "
                          f"{ctx.get('le', ctx.get('lt'))}", location,
                          "every number has a documented upper bound (docs/inventory-format.md); "
                          "check the units and the value")
    if kind in ("greater_than_equal", "greater_than"):
        bound = f"at least {ctx['ge']}" if "ge" in ctx else f"above {ctx.get('gt')}"
        return Diagnostic("out-of-range", f"{where}: {_describe(value)} is too small: it must be {bound}", location,
                          "every number has a documented lower bound (docs/inventory-format.md); "
                          "check the units and the value")
    return Diagnostic("invalid-value", f"{where}: {error['msg'][0].lower()}{error['msg'][1:]} "
                      f"(got {_describe(value)})", location)


def validate_document(locator: Locator) -> Inventory:
    try:
        return Inventory.model_validate(locator.root)
    except ValidationError as exc:
        raise InvalidInventoryError([_diagnostic_for(e, locator) for e in exc.errors(include_url=False)]) from None


def load_sources(sources: list[Source], *, feasibility: bool = True) -> LoadedInventory:
    """Parse, merge, validate against the models and run the semantic checks (with feasibility=False,
    all but the feasibility checks, which `check_feasible` then runs)."""
    from hybridctl.core.inventory.checks import check_inventory

    locator = merge_documents(sources)
    try:
        inventory = validate_document(locator)
    except InvalidInventoryError as refused:
        from hybridctl.core.inventory.partial import judged_beside_schema

        # the rest of what is wrong, in the same run: what the schema's errors leave judgeable
        raise InvalidInventoryError(refused.diagnostics + judged_beside_schema(locator)) from None
    diagnostics = check_inventory(inventory, locator, feasibility=feasibility)
    if diagnostics.errors:
        raise InvalidInventoryError(diagnostics.errors + diagnostics.warnings)
    return LoadedInventory(inventory, locator, tuple(sources), tuple(diagnostics.warnings))


def feasibility_diagnostics(loaded: LoadedInventory) -> list[Diagnostic]:
    """What the feasibility checks find in an inventory loaded with feasibility=False (at 100,000
    workloads, seconds: `plan` runs them beside the planner)."""
    from hybridctl.core.inventory.feasibility import check_feasibility

    diagnostics = Diagnostics()
    check_feasibility(loaded.inventory, loaded.locator, diagnostics)
    return diagnostics.items


def check_feasible(loaded: LoadedInventory, found: list[Diagnostic]) -> LoadedInventory:
    """`loaded` with the feasibility diagnostics `found` for it: its warnings added, or, when they hold
    an error, the InvalidInventoryError that load_sources(feasibility=True) raises, the same list."""
    errors = [d for d in found if d.severity is Severity.ERROR]
    warnings = [*loaded.warnings, *(d for d in found if d.severity is Severity.WARNING)]
    if errors:
        raise InvalidInventoryError(errors + warnings)
    return LoadedInventory(loaded.inventory, loaded.locator, loaded.sources, tuple(warnings))
