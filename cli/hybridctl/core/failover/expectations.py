"""What a scenario file says beyond its own scenarios: which built-in scenarios run, and what each
scenario is expected to cost the fleet.

    standard:                          # the built-ins of `drill --standard`, chosen by name
      include: ["site-lost-*"]         # fnmatch patterns; default every built-in
      exclude: [site-lost-dc-lisbon]
    expect:                            # by scenario name, a built-in or one of the file's
      site-lost-edge-porto:
        losses: [porto-triage]         # may lose service here without failing the gate
        over_budget_usd_per_month: 5000   # cash over the monthly budget allowed; more fails the gate

An ordinary fleet has work that cannot survive some scenarios (a subsidiary in one region, an edge
site's own camera feed): the gate is about the losses nobody agreed to, so those are stated here,
each once, next to the scenario that causes them. The values are checked by a pydantic model
(ScenarioExpectation); every error names the file and line.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.inventory.yamlsource import SourceMap, Value
from hybridctl.errors import HybridctlError, Location

MAX_PATTERNS = 1_000
MAX_OVER_BUDGET_USD = 1e12  # as the inventory bounds a budget


class ScenarioExpectation(BaseModel):
    """One scenario's expectations (`expect.<scenario>` in a scenario file)."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    losses: list[str] = Field([], max_length=100_000, description="workloads that may lose service in this scenario")
    # None: not stated, and over budget is a warning; stated, more than it fails the gate
    over_budget_usd_per_month: float | None = Field(None, ge=0, le=MAX_OVER_BUDGET_USD,
                                                    description="cash per month over the budget this scenario may cost")

    def allows_loss(self, workload: str) -> bool:
        return workload in self.losses


class StandardChoice(BaseModel):
    """`standard`: which built-in scenarios run."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    include: list[str] = Field(["*"], min_length=1, max_length=MAX_PATTERNS)
    exclude: list[str] = Field([], max_length=MAX_PATTERNS)

    def chooses(self, name: str) -> bool:
        return (any(fnmatch.fnmatchcase(name, p) for p in self.include)
                and not any(fnmatch.fnmatchcase(name, p) for p in self.exclude))


@dataclass(frozen=True)
class FileChoices:
    """A scenario file's `standard` (None: not named) and `expect`, by scenario name."""
    standard: StandardChoice | None
    expect: dict[str, ScenarioExpectation]
    locations: dict[str, Location]  # of each expectation, for the errors check_expectations finds


def _problem(exc: ValidationError) -> tuple[str, str]:
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"])
    return (f"{where}: {error['msg']}" if where else error["msg"]), "see docs/scenario-file.md for the fields"


def parse_choices(root: dict[str, Value], source_map: SourceMap, filename: str,
                  error: type[HybridctlError]) -> FileChoices:
    """`standard` and `expect` of a scenario file's top-level mapping (form only; names are checked later)."""
    def at(container: Value, key: str | int) -> Location:
        positions = source_map.of(container)
        if positions is None:
            return Location(filename)
        mark = positions.values.get(key)
        return positions.location(mark) if mark is not None else positions.location()

    standard = None
    if "standard" in root:
        raw = root["standard"]
        try:
            standard = StandardChoice.model_validate({} if raw is True else raw)
        except ValidationError as exc:
            message, hint = _problem(exc)
            raise error(f"standard: {message}", location=at(root, "standard"),
                        hint="write `standard: {exclude: [site-lost-dc-x]}` (fnmatch patterns)") from None
    expect: dict[str, ScenarioExpectation] = {}
    locations: dict[str, Location] = {}
    raw_expect = root.get("expect", {})
    if not isinstance(raw_expect, dict):
        raise error("`expect` must be a mapping from scenario name to its expectations",
                    location=at(root, "expect"), hint="e.g. `expect: {site-lost-edge-porto: {losses: [triage]}}`")
    for name, raw in raw_expect.items():
        where = at(raw_expect, name)
        try:
            found = ScenarioExpectation.model_validate(raw)
        except ValidationError as exc:
            message, hint = _problem(exc)
            field_name = exc.errors()[0]["loc"][:1]  # the field at fault, where the file has it
            if isinstance(raw, dict) and field_name and field_name[0] in raw:
                where = at(raw, str(field_name[0]))
            raise error(f"expect.{name}: {message}", location=where, hint=hint) from None
        expect[str(name)], locations[str(name)] = found, where
    return FileChoices(standard, expect, locations)


def check_expectations(choices: FileChoices, scenario_names: set[str], inventory: Inventory,
                       error: type[HybridctlError]) -> None:
    """Each expectation names a scenario that runs and workloads of the inventory."""
    workloads = {w.name for w in inventory.workloads}
    for name, expectation in choices.expect.items():
        location = choices.locations.get(name)
        if name not in scenario_names:
            raise error(f"expect: '{name}' is not a scenario of this drill", location=location,
                        hint="name a scenario of the file, or a built-in one that `standard` chooses")
        for workload in expectation.losses:
            if workload not in workloads:
                raise error(f"expect.{name}.losses: '{workload}' is not a workload of the inventory",
                            location=location, hint="list workloads by their `name`")


def merged(choices: Sequence[FileChoices], error: type[HybridctlError]) -> FileChoices:
    """The expectations of every file (a scenario's are stated once, in one file)."""
    expect: dict[str, ScenarioExpectation] = {}
    locations: dict[str, Location] = {}
    for chosen in choices:
        for name, expectation in chosen.expect.items():
            if name in expect:
                raise error(f"expect: '{name}' is stated twice (first at {locations[name]})",
                            location=chosen.locations.get(name), hint="state a scenario's expectations once")
            expect[name], locations[name] = expectation, chosen.locations[name]
    return FileChoices(None, expect, locations)
