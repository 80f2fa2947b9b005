"""A YAML reader that keeps the position of every value and is safe against hostile input.

libyaml's event stream is fast and non-recursive, so the tree is built here from events
instead of through PyYAML's composer, which recurses in C (a deeply nested document crashes
the interpreter) and resolves scalars slowly. Building it ourselves also lets us

- bound the nesting depth and the size that aliases expand to (billion-laughs documents),
- reject duplicate keys, which PyYAML silently overwrites,
- resolve scalars by the YAML 1.2 core schema, so ``NO`` (Norway) stays a string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Union

import yaml

from hybridctl.errors import HybridctlError, Location

MAX_DEPTH = 64
MAX_EXPANDED_NODES = 5_000_000  # well above any real inventory (10,000 workloads ~ 350,000 nodes)

Scalar = str | int | float | bool | None
Value = Union[Scalar, "YamlMap", "YamlSeq"]
YamlMap = dict[str, "Value"]
YamlSeq = list["Value"]

_INT = re.compile(r"^[-+]?[0-9]+$")
_OCT = re.compile(r"^0o[0-7]+$")
_HEX = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
_NAN = re.compile(r"^\.(nan|NaN|NAN)$")
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_TRUE = frozenset({"true", "True", "TRUE"})
_FALSE = frozenset({"false", "False", "FALSE"})


class YamlError(HybridctlError):
    pass


Mark = tuple[int, int]  # 1-based line and column; Location objects are made only when asked for


@dataclass
class ContainerPositions:
    """Where a mapping or sequence and its children stand in the source."""

    filename: str
    start: Mark
    keys: dict[str, Mark] = field(default_factory=dict)  # mapping: position of each key
    values: dict[str | int, Mark] = field(default_factory=dict)  # position of each child value

    def location(self, mark: Mark | None = None) -> Location:
        line, column = mark or self.start
        return Location(self.filename, line, column)


@dataclass
class SourceMap:
    """Positions of the containers of a loaded document, looked up by object identity."""

    containers: dict[int, ContainerPositions] = field(default_factory=dict)

    def of(self, container: object) -> ContainerPositions | None:
        return self.containers.get(id(container))

    def merge(self, other: SourceMap) -> None:
        self.containers.update(other.containers)


class NumberTooLong(ValueError):
    """A plain integer too long to read (Python reads at most 4,300 digits): no inventory value is near it."""


# More digits than any value an inventory bounds (a million GPUs, 10^12 dollars) could need, far below
# the 4,300 digits Python reads an int from (a longer one is an error, and so would be printing it).
MAX_NUMBER_DIGITS = 1_000


def resolve_plain(text: str) -> Scalar:
    """The YAML 1.2 core schema for plain (unquoted) scalars; NumberTooLong for an integer of more than
    MAX_NUMBER_DIGITS digits (load_yaml reports it at its line)."""
    if len(text) > MAX_NUMBER_DIGITS and (_INT.match(text) or _OCT.match(text) or _HEX.match(text)):
        raise NumberTooLong(f"a number of {len(text):,} characters (at most {MAX_NUMBER_DIGITS:,} are read)")
    if text in _NULLS:
        return None
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    if _INT.match(text):
        return int(text)
    if _FLOAT.match(text):
        return float(text)
    if _OCT.match(text):
        return int(text[2:], 8)
    if _HEX.match(text):
        return int(text[2:], 16)
    if _INF.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN.match(text):
        return float("nan")
    return text


@dataclass
class _Frame:
    container: YamlMap | YamlSeq
    positions: ContainerPositions
    is_map: bool
    pending_key: str | None = None
    pending_key_mark: Mark = (0, 0)
    anchor: str | None = None
    nodes: int = 1  # nodes inside, counting alias expansions: the guard against alias bombs
    merges: list[tuple[YamlMap, Mark]] = field(default_factory=list)


def load_yaml(text: str, filename: str) -> tuple[Value, SourceMap]:
    """Parse one YAML document into plain Python values and their positions."""
    if "\x00" in text:
        raise YamlError(f"{filename} contains binary data (NUL bytes), not YAML",
                        location=Location(filename), hint="point hybridctl at the inventory's .yaml files")
    if not text.strip():
        raise YamlError(f"{filename} is empty", location=Location(filename),
                        hint="an inventory file needs at least `version: 1` and `name:`")
    builder = _Builder(filename)
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            builder.feed(event)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed YAML"
        location = Location(filename, mark.line + 1, mark.column + 1) if mark else Location(filename)
        raise YamlError(f"{filename}: {problem}", location=location,
                        hint="fix the YAML syntax at this position (indentation, quotes, colons)") from None
    except yaml.YAMLError as exc:
        raise YamlError(f"{filename}: {exc}", location=Location(filename)) from None
    if not builder.root or builder.root[0] is None:
        raise YamlError(f"{filename} is empty", location=Location(filename),
                        hint="an inventory file needs at least `version: 1` and `name:`")
    return builder.root[0], builder.source_map


def load_plain(text: str) -> Value | None:
    """The fast path of load_yaml: the same values, without positions, or None when the text is
    anything but plain well-formed YAML (an error, a tag, a merge key, a duplicate key, too deep,
    an alias bomb, several documents...). The caller then calls load_yaml, which reports the
    problem at its line: positions cost two thirds of the load of a large inventory, and are only
    needed to report an error, so they are read only then (by parsing again)."""
    parsed = parse_plain(text)
    return None if parsed is None else parsed.value


@dataclass
class PlainParse:
    """What parse_plain read: the value, and what joining it with a neighbouring part needs."""

    value: Value
    expanded: int  # values, counting alias expansions
    anchors: dict[str, tuple[Value, int]]  # each anchor's value and expanded size, as of the end
    # Parsed as a later part (unresolved=True): each alias to an anchor of an earlier part, as the
    # container and slot where its value goes (None until then), and the anchor's name.
    unresolved: list[tuple[YamlMap | YamlSeq, str | int, str]] = field(default_factory=list)


def parse_plain(text: str, *, depth: int = 0, unresolved: bool = False) -> PlainParse | None:
    """load_plain, with what it read along the way. `depth`: levels of nesting around the text (a part
    of a document). `unresolved` (the part of a document after another): an alias to no anchor seen yet
    is None, listed in the result to be filled in, instead of a failure; unless it is a key, or inside
    an anchored container that is aliased later (that one's size depends on the earlier part: None)."""
    if "\x00" in text or not text.strip():
        return None
    scalar_event, alias_event = yaml.ScalarEvent, yaml.AliasEvent
    map_start, seq_start = yaml.MappingStartEvent, yaml.SequenceStartEvent
    map_end, seq_end = yaml.MappingEndEvent, yaml.SequenceEndEvent
    scalars: dict[str, Scalar] = {}
    anchors: dict[str, tuple[Value, int]] = {}
    # each open container: (container, is_map, pending key, expanded count at its start, anchor,
    # placeholders so far at its start)
    stack: list[tuple[YamlMap | YamlSeq | None, bool, str | None, int, str | None, int]] = []
    top: YamlMap | YamlSeq | None = None
    is_map = False
    key: str | None = None
    root: list[Value] = []
    expanded = 0  # values so far, counting alias expansions (the alias-bomb guard, as in _Builder)
    documents = 0
    missing = scalars  # a sentinel no scalar equals
    max_depth = MAX_DEPTH - depth
    placeholders: list[tuple[YamlMap | YamlSeq, str | int, str]] = []
    depends: set[str] = set()  # anchors whose size depends on an earlier part
    value: Value
    try:
        for event in yaml.parse(text, Loader=yaml.CSafeLoader):
            kind = type(event)
            size = 1
            if kind is scalar_event:
                if event.tag is not None and event.tag != "!":
                    return None
                if event.implicit[0] and not event.style:
                    raw = event.value
                    value = scalars.get(raw, missing)  # type: ignore[arg-type]
                    if value is missing:
                        try:
                            value = scalars[raw] = resolve_plain(raw)
                        except NumberTooLong:
                            return None  # load_yaml reports it at its line
                else:
                    value = event.value
                if event.anchor:
                    anchors[event.anchor] = (value, 1)
                    depends.discard(event.anchor)
            elif kind is map_start or kind is seq_start:
                if len(stack) >= max_depth or (event.tag is not None and event.tag != "!"):
                    return None
                stack.append((top, is_map, key, expanded, event.anchor, len(placeholders)))
                is_map = kind is map_start
                top = {} if is_map else []
                key = None
                continue
            elif kind is map_end or kind is seq_end:
                if is_map and key is not None:
                    return None
                value = top
                top, is_map, key, began, anchor, placed = stack.pop()
                if anchor:
                    anchors[anchor] = (value, expanded - began + 1)
                    if len(placeholders) > placed:
                        depends.add(anchor)
                    else:
                        depends.discard(anchor)
            elif kind is alias_event:
                name = event.anchor
                if name in depends:
                    return None
                if name in anchors:
                    value, size = anchors[name]
                elif unresolved and top is not None and not (is_map and key is None):
                    value = None
                    placeholders.append((top, key if is_map else len(top), name))  # type: ignore[arg-type]
                else:
                    return None
            elif kind is yaml.DocumentStartEvent:
                documents += 1
                if documents > 1:
                    return None
                continue
            else:
                continue
            expanded += size
            if expanded > MAX_EXPANDED_NODES:
                return None
            if top is None:
                root.append(value)
            elif not is_map:
                top.append(value)  # type: ignore[union-attr]
            elif key is None:
                if value is None or value.__class__ is dict or value.__class__ is list:
                    return None
                key = str(value)
                if key == "<<" or key in top:
                    return None
            else:
                top[key] = value  # type: ignore[call-overload]
                key = None
    except yaml.YAMLError:
        return None
    if not root or root[0] is None:
        return None
    return PlainParse(root[0], expanded, anchors, placeholders)


class _Builder:
    """Turns libyaml events into values; kept flat because it runs once per YAML node."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.source_map = SourceMap()
        self.stack: list[_Frame] = []
        self.anchors: dict[str, tuple[Value, int]] = {}
        self.root: list[Value] = []
        self.documents = 0
        self.expanded_nodes = 0
        self.scalars: dict[str, Scalar] = {}  # inventories repeat values a lot

    def fail(self, message: str, mark: Mark, hint: str | None = None) -> YamlError:
        return YamlError(f"{self.filename}: {message}", location=Location(self.filename, *mark), hint=hint)

    def feed(self, event: yaml.Event) -> None:
        kind = type(event)
        if kind is yaml.ScalarEvent:
            assert isinstance(event, yaml.ScalarEvent)
            start = event.start_mark
            mark = (start.line + 1, start.column + 1)
            if event.tag is not None and event.tag != "!":
                raise self.fail(f"explicit YAML tags ({event.tag}) are not allowed in an inventory", mark,
                                "remove the tag")
            value: Value
            if event.implicit[0] and not event.style:
                raw = event.value
                if raw in self.scalars:
                    value = self.scalars[raw]
                else:
                    try:
                        value = self.scalars[raw] = resolve_plain(raw)
                    except NumberTooLong as exc:
                        raise self.fail(str(exc), mark, "write a number within the field's bounds") from None
            else:
                value = event.value
            if event.anchor:
                self.anchors[event.anchor] = (value, 1)
            self.attach(value, mark, 1)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            assert isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
            start = event.start_mark
            mark = (start.line + 1, start.column + 1)
            if len(self.stack) >= MAX_DEPTH:
                raise self.fail(f"nesting deeper than {MAX_DEPTH} levels", mark,
                                "an inventory is at most a few levels deep; check the file's structure")
            if event.tag is not None and event.tag != "!":
                raise self.fail(f"explicit YAML tags ({event.tag}) are not allowed in an inventory", mark,
                                "remove the tag")
            is_map = kind is yaml.MappingStartEvent
            container: YamlMap | YamlSeq = {} if is_map else []
            positions = ContainerPositions(self.filename, mark)
            self.source_map.containers[id(container)] = positions
            self.stack.append(_Frame(container, positions, is_map, anchor=event.anchor))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = self.stack.pop()
            if frame.merges and isinstance(frame.container, dict):
                for source, merge_mark in frame.merges:
                    for key, merged in source.items():
                        if key not in frame.container:
                            frame.container[key] = merged
                            frame.positions.keys[key] = merge_mark
                            frame.positions.values[key] = merge_mark
            if frame.anchor:
                self.anchors[frame.anchor] = (frame.container, frame.nodes)
            # children were counted into expanded_nodes as they arrived; the parent frame
            # still needs them for the size an anchor on it would expand to
            if self.stack:
                self.stack[-1].nodes += frame.nodes - 1
            self.attach(frame.container, frame.positions.start, 1)
        elif kind is yaml.AliasEvent:
            assert isinstance(event, yaml.AliasEvent)
            start = event.start_mark
            mark = (start.line + 1, start.column + 1)
            if event.anchor not in self.anchors:
                raise self.fail(f"alias *{event.anchor} refers to no anchor defined before it", mark,
                                f"define &{event.anchor} before using it")
            aliased, size = self.anchors[event.anchor]
            self.attach(aliased, mark, size)
        elif kind is yaml.DocumentStartEvent:
            self.documents += 1
            if self.documents > 1:
                start = event.start_mark
                raise self.fail("holds more than one YAML document", (start.line + 1, start.column + 1),
                                "put each part of the inventory in its own file, or remove the `---`")

    def attach(self, value: Value, mark: Mark, size: int) -> None:
        self.expanded_nodes += size
        if self.expanded_nodes > MAX_EXPANDED_NODES:
            raise self.fail(f"the document expands to more than {MAX_EXPANDED_NODES:,} values through aliases",
                            mark, "remove the nested aliases (&anchor / *alias); this looks like an alias bomb")
        if not self.stack:
            self.root.append(value)
            return
        top = self.stack[-1]
        top.nodes += size
        container = top.container
        if not top.is_map:
            assert isinstance(container, list)
            top.positions.values[len(container)] = mark
            container.append(value)
            return
        assert isinstance(container, dict)
        if top.pending_key is None:
            if isinstance(value, (dict, list)) or value is None:
                raise self.fail("a mapping key must be a plain scalar", mark, "write keys as simple words, e.g. `name:`")
            top.pending_key = str(value)
            top.pending_key_mark = mark
            return
        key = top.pending_key
        top.pending_key = None
        if key == "<<":
            for source in value if isinstance(value, list) else [value]:
                if not isinstance(source, dict):
                    raise self.fail("a merge key (<<) takes a mapping or a list of mappings", mark)
                top.merges.append((source, mark))
            return
        if key in container:
            first_line = top.positions.keys[key][0]
            raise self.fail(f"key '{key}' appears twice in one mapping (first at line {first_line})",
                            top.pending_key_mark, "remove one of the two; YAML keeps only one of them")
        top.positions.keys[key] = top.pending_key_mark
        top.positions.values[key] = mark
        container[key] = value
