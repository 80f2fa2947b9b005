"""Scenarios: named sets of events, from YAML files or built in (`drill --standard`).

A scenario file::

    version: 1
    scenarios:
      - name: frankfurt-dark            # [a-z0-9-]
        description: Frankfurt loses power and spot capacity dries up   # optional
        events:
          - site-lost dc-frankfurt      # the command line's grammar, one event per item
          - capacity: p5-spot=25%       # or a one-key mapping: kind -> argument
    standard: {exclude: [site-lost-dc-lisbon]}   # optional: the built-ins that run (expectations.py)
    expect:                                      # optional: per scenario, losses and over-budget allowed
      frankfurt-dark: {losses: [fra-cameras], over_budget_usd_per_month: 20000}

Every error names the file and line. A file that breaks these rules, or an event that names
no site or pool of the inventory, is a failed input (exit 1), like an invalid inventory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from hybridctl.core.failover.events import (
    GRAMMAR,
    Event,
    EventKind,
    EventSyntaxError,
    event_problem,
    parse_event,
    providers_in_use,
    value_problems,
)
from hybridctl.core.failover.expectations import FileChoices, ScenarioExpectation, parse_choices
from hybridctl.core.inventory.models import CapacityType, Inventory, Pool, SiteKind
from hybridctl.core.inventory.yamlsource import SourceMap, Value, load_yaml
from hybridctl.core.plan.jsonread import control_character
from hybridctl.errors import HybridctlError, Location

SCENARIO_FORMAT_VERSION = 1
_NAME = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$")
_SCENARIO_KEYS = ("name", "description", "events")


class ScenarioError(HybridctlError):
    """A scenario file that cannot be used (exit 1, with the file and line)."""


@dataclass(frozen=True)
class Scenario:
    name: str
    events: tuple[Event, ...]
    description: str = ""
    location: Location | None = field(default=None, compare=False)
    expect: ScenarioExpectation | None = field(default=None, compare=False)  # from a scenario file's `expect`


def _at(source_map: SourceMap, container: Value, key: str | int, filename: str) -> Location:
    positions = source_map.of(container)
    if positions is None:
        return Location(filename)
    mark = positions.values.get(key)
    return positions.location(mark) if mark is not None else positions.location()


def _event(item: Value, where: Location, number: int) -> Event:
    prefix = f"event {number}: "
    if isinstance(item, str):
        words = item.split()
        if len(words) != 2:
            raise ScenarioError(f"{prefix}'{item}' is not KIND ARGUMENT", location=where,
                                hint=f"events are: {GRAMMAR}")
        kind, argument = words
    elif isinstance(item, dict) and len(item) == 1:
        kind, value = next(iter(item.items()))
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ScenarioError(f"{prefix}the argument of '{kind}' must be text", location=where,
                                hint="write it like `- site-lost: dc-frankfurt` or `- capacity: pool=50%`")
        argument = str(value)
    else:
        raise ScenarioError(f"{prefix}expected text like 'site-lost dc-frankfurt' or a one-key mapping",
                            location=where, hint=f"events are: {GRAMMAR}")
    try:
        return parse_event(kind, argument, where=prefix, location=where)
    except EventSyntaxError as exc:
        raise ScenarioError(f"{exc.message}", location=where, hint=exc.hint) from None


def parse_scenario_file(text: str, filename: str) -> tuple[list[Scenario], FileChoices]:
    """The scenarios of one file, and its choice of built-ins and expectations, checked for form."""
    root, source_map = load_yaml(text, filename)
    top = Location(filename, 1, 1)
    if not isinstance(root, dict):
        raise ScenarioError("a scenario file is a mapping with `version` and `scenarios`",
                            location=top, hint="start the file with `version: 1` and `scenarios:`")
    for key in root:
        if key not in ("version", "scenarios", "standard", "expect"):
            where = _at(source_map, root, key, filename)
            raise ScenarioError(f"unknown field '{key}'", location=where,
                                hint="a scenario file has `version`, `scenarios`, `standard` and `expect`")
    if root.get("version") != SCENARIO_FORMAT_VERSION:
        where = _at(source_map, root, "version", filename) if "version" in root else top
        raise ScenarioError(f"version: {root.get('version')!r} is not a supported scenario file version "
                            f"(supported: {SCENARIO_FORMAT_VERSION})", location=where, hint="set `version: 1`")
    choices = parse_choices(root, source_map, filename, ScenarioError)
    items = root.get("scenarios", [] if choices.standard is not None else None)
    # a file that chooses built-ins may add none of its own
    if not isinstance(items, list) or (not items and choices.standard is None):
        where = _at(source_map, root, "scenarios", filename) if "scenarios" in root else top
        raise ScenarioError("`scenarios` must be a non-empty list", location=where,
                            hint="list scenarios, each with a `name` and `events` (or choose built-ins with `standard`)")
    scenarios: list[Scenario] = []
    seen: dict[str, Location] = {}
    for i, item in enumerate(items):
        where = _at(source_map, items, i, filename)
        if not isinstance(item, dict):
            raise ScenarioError(f"scenario {i + 1} must be a mapping with `name` and `events`",
                                location=where)
        for key in item:
            if key not in _SCENARIO_KEYS:
                at = _at(source_map, item, key, filename)
                raise ScenarioError(f"unknown field '{key}' in scenario {i + 1}", location=at,
                                    hint=f"a scenario has {', '.join(_SCENARIO_KEYS)}")
        name = item.get("name")
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            at = _at(source_map, item, "name", filename) if "name" in item else where
            raise ScenarioError(f"scenario {i + 1} needs a `name` of lowercase letters, digits and '-'",
                                location=at, hint="e.g. `name: frankfurt-dark`")
        if name in seen:
            at = _at(source_map, item, "name", filename)
            raise ScenarioError(f"scenario '{name}' is defined twice (first at {seen[name]})", location=at,
                                hint="give each scenario its own name")
        seen[name] = _at(source_map, item, "name", filename)
        description = item.get("description", "")
        if not isinstance(description, str):
            at = _at(source_map, item, "description", filename)
            raise ScenarioError("`description` must be text", location=at)
        if (control := control_character(description)) is not None:
            # the drill report carries the description, and a report holding one is refused when read back
            at = _at(source_map, item, "description", filename)
            raise ScenarioError(f"scenario '{name}': `description` holds a control character ({control})",
                                location=at, hint="write the description as plain text: newlines and tabs are fine")
        raw_events = item.get("events")
        if not isinstance(raw_events, list) or not raw_events:
            at = _at(source_map, item, "events", filename) if "events" in item else where
            raise ScenarioError(f"scenario '{name}' needs a non-empty list of `events`", location=at,
                                hint=f"events are: {GRAMMAR}")
        events = tuple(_event(e, _at(source_map, raw_events, n, filename), n + 1) for n, e in enumerate(raw_events))
        scenarios.append(Scenario(name, events, description, where))
    return scenarios, choices


def check_scenarios(scenarios: Sequence[Scenario], inventory: Inventory) -> None:
    """Every event must name a site or pool of the inventory; names must be unique across files."""
    seen: dict[str, Location | None] = {}
    for scenario in scenarios:
        if scenario.name in seen:
            raise ScenarioError(f"scenario '{scenario.name}' is defined twice ({seen[scenario.name]} and "
                                f"{scenario.location})", location=scenario.location,
                                hint="give each scenario its own name")
        seen[scenario.name] = scenario.location
        for event in scenario.events:
            problem = event_problem(event, inventory)
            if problem is not None:
                raise ScenarioError(f"scenario '{scenario.name}': {problem[0]}", location=event.location,
                                    hint=problem[1])
        for index, message, hint in value_problems(scenario.events, inventory)[:1]:
            raise ScenarioError(f"scenario '{scenario.name}': {message}", location=scenario.events[index].location,
                                hint=hint)


def standard_scenarios(inventory: Inventory) -> list[Scenario]:
    """Each site lost; each spot pool reclaimed; -50 % of each GPU type; spot prices x3; each edge link down;
    each provider lost, when cloud sites are on two or more."""
    scenarios = [Scenario(f"site-lost-{s.name}", (Event(EventKind.SITE_LOST, s.name),), f"site {s.name} is lost")
                 for s in inventory.sites]
    spot = [p for s in inventory.sites for p in s.pools if p.capacity_type is CapacityType.SPOT]
    scenarios += [Scenario(f"spot-reclaim-{p.name}", (Event(EventKind.SPOT_RECLAIM, p.name),),
                           f"spot pool {p.name} is reclaimed") for p in spot]
    gpu_types = sorted({p.gpu for s in inventory.sites for p in s.pools})
    for gpu in gpu_types:
        # halving a 1-GPU pool is losing it, which site-lost already drills (unhalvable_pools says so)
        pools = [p.name for s in inventory.sites for p in s.pools if p.gpu == gpu and _gpus(p) > 1]
        if not pools:
            continue
        scenarios.append(Scenario(
            f"capacity-{gpu.lower()}-half",
            tuple(Event(EventKind.CAPACITY, name, 50.0, percent=True, reduce=True) for name in pools),
            f"every {gpu} pool loses 50 % of its GPUs"))
    if spot:
        scenarios.append(Scenario("spot-price-x3", tuple(Event(EventKind.PRICE, p.name, 3.0, factor=True) for p in spot),
                                  "spot prices triple"))
    scenarios += [Scenario(f"link-down-{s.name}", (Event(EventKind.LINK_DOWN, s.name),), f"edge site {s.name} "
                           "loses its uplink") for s in inventory.sites if s.kind is SiteKind.EDGE]
    # revision 4: with cloud sites on two or more providers, each provider lost in turn (every site of it)
    providers = providers_in_use(inventory)
    if len(providers) > 1:
        scenarios += [Scenario(f"provider-lost-{p}", (Event(EventKind.PROVIDER_LOST, p),),
                               f"every {p} site is lost") for p in providers]
    return scenarios


def _gpus(pool: Pool) -> int:
    return pool.gpus or pool.max_gpus or 0


def unhalvable_pools(inventory: Inventory) -> list[str]:
    """The pools `standard_scenarios` does not halve: one GPU, so half of it is all of it."""
    return [p.name for s in inventory.sites for p in s.pools if _gpus(p) <= 1]
