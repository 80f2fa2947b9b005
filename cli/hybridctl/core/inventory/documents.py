"""An inventory's files as one document: their texts (read by drivers/inventory_files.py) merged
(top-level lists concatenated), each value's position kept for messages (Locator)."""

from __future__ import annotations

from dataclasses import dataclass, field

from hybridctl.core.inventory.diagnostics import Diagnostics, InvalidInventoryError
from hybridctl.core.inventory.yamlsource import SourceMap, Value, YamlError, load_plain, load_yaml
from hybridctl.errors import Location

TOP_LEVEL_LISTS = ("regions", "sites", "datasets", "workloads")
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class Source:
    """The text of one inventory file."""

    name: str  # as shown to the user
    text: str


@dataclass
class Locator:
    """Finds where a path into the merged inventory (e.g. workloads/3/gpu/count) was written."""

    root: dict[str, Value]
    source_map: SourceMap
    root_locations: dict[str, Location] = field(default_factory=dict)
    item_locations: dict[str, list[Location]] = field(default_factory=dict)  # merged top-level lists
    default: Location = field(default_factory=lambda: Location("<inventory>"))
    unread: tuple[Source, ...] = ()  # loaded without positions (load_plain): read them when first asked

    def location(self, path: Path_, *, key: bool = False) -> Location:
        """The position of the value at path; with key=True, of its key (for unknown fields)."""
        if self.unread:
            located = _merge_located(list(self.unread))
            self.root, self.source_map, self.unread = located.root, located.source_map, ()
            self.root_locations, self.item_locations = located.root_locations, located.item_locations
            self.default = located.default
        if not path:
            return self.default
        head = path[0]
        best = self.root_locations.get(str(head), self.default)
        node: Value = self.root.get(str(head)) if isinstance(head, str) else None
        rest = path[1:]
        if head in self.item_locations and rest and isinstance(rest[0], int):
            items = self.item_locations[str(head)]
            if 0 <= rest[0] < len(items):
                best = items[rest[0]]
                assert isinstance(node, list)
                node = node[rest[0]]
                rest = rest[1:]
            else:
                return best
        for step in rest:
            positions = self.source_map.of(node)
            if positions is None:
                break
            if key and step == path[-1] and isinstance(step, str):
                mark = positions.keys.get(step)
            else:
                mark = positions.values.get(step)
            if mark is None:
                break
            best = positions.location(mark)
            if isinstance(node, dict) and isinstance(step, str):
                node = node.get(step)
            elif isinstance(node, list) and isinstance(step, int) and 0 <= step < len(node):
                node = node[step]
            else:
                break
        return best


def merge_documents(sources: list[Source]) -> Locator:
    """Parse each file and concatenate their top-level lists; scalars must agree across files.
    Without positions when every file is well formed (the common case, three times faster on a
    large inventory); the locator reads them if a diagnostic asks, and any problem here is
    reported by the located parse, at its line."""
    root: dict[str, Value] = {}
    for source in sources:
        document = load_plain(source.text)
        if not isinstance(document, dict):
            return _merge_located(sources)
        for key, value in document.items():
            if key in TOP_LEVEL_LISTS and isinstance(value, list):
                merged = root.setdefault(key, [])
                if not isinstance(merged, list):
                    return _merge_located(sources)
                merged.extend(value)
            elif key in root and key not in TOP_LEVEL_LISTS:
                if root[key] != value:
                    return _merge_located(sources)
            else:
                root[key] = value
    return Locator(root, SourceMap(), unread=tuple(sources))


def _merge_located(sources: list[Source]) -> Locator:
    root: dict[str, Value] = {}
    locator = Locator(root, SourceMap())
    diagnostics = Diagnostics()
    for source in sources:
        try:
            document, source_map = load_yaml(source.text, source.name)
        except YamlError as exc:
            diagnostics.error("yaml-syntax", exc.message, exc.location, exc.hint)
            continue
        locator.source_map.merge(source_map)
        if not isinstance(document, dict):
            diagnostics.error("not-a-mapping", f"{source.name}: the top level must be a mapping of keys "
                              "(version, name, sites, ...)", Location(source.name, 1, 1),
                              "start the file with `version: 1`")
            continue
        positions = source_map.of(document)
        assert positions is not None
        if locator.default.file == "<inventory>":
            locator.default = Location(source.name, 1, 1)
        for key, value in document.items():
            key_location = positions.location(positions.keys[key])
            value_location = positions.location(positions.values[key])
            if key in TOP_LEVEL_LISTS and isinstance(value, list):
                item_positions = source_map.of(value)
                assert item_positions is not None
                merged = root.setdefault(key, [])
                if not isinstance(merged, list):
                    continue
                items = locator.item_locations.setdefault(key, [])
                items.extend(item_positions.location(item_positions.values[i]) for i in range(len(value)))
                merged.extend(value)
                locator.root_locations.setdefault(key, value_location)
            elif key in root and key not in TOP_LEVEL_LISTS:
                if root[key] != value:
                    first = locator.root_locations[key]
                    diagnostics.error("conflicting-top-level", f"'{key}' is set differently in two files "
                                      f"(first at {first})", key_location,
                                      f"set '{key}' in one file only", related=(first,))
            else:
                root[key] = value
                locator.root_locations[key] = value_location
    if diagnostics.errors:
        raise InvalidInventoryError(diagnostics.items)
    return locator
