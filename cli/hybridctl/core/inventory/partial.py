"""What can still be judged of an inventory that fails the schema, so that one run of `validate`
reports its schema, reference and rule errors together.

The items of `sites`, `datasets` and `workloads` that pass the schema are checked as usual. An item
that fails it is left out of those checks (its rules would be judged on values it does not have);
its references are still judged, once the fields the schema refused are left out of it, when what
is left passes the schema. A reference to a name written in a broken item, or into a top-level list
broken as a whole, is neither right nor wrong: it is not reported. A broken `version` stops here:
the file is another format, and nothing else of it can be judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from pydantic import BaseModel, ValidationError

from hybridctl.core.inventory.checks import Unjudged, check_inventory
from hybridctl.core.inventory.diagnostics import Diagnostic
from hybridctl.core.inventory.documents import Locator, Path_
from hybridctl.core.inventory.models import Dataset, Inventory, Site, Workload
from hybridctl.core.inventory.yamlsource import Value
from hybridctl.errors import Location

_ITEMS: Mapping[str, tuple[str, type[BaseModel]]] = MappingProxyType({
    "sites": ("site", Site), "datasets": ("dataset", Dataset), "workloads": ("workload", Workload)})
_LIST_KINDS = MappingProxyType({"sites": "site", "datasets": "dataset", "regions": "region"})
# What a check of references finds: judged on a broken item too, once its refused fields are left out.
_REFERENCE_CODES = frozenset({"unresolved-reference", "unknown-gpu-type", "unknown-instance-type"})


@dataclass
class _Renumbered(Locator):
    """The locator of the whole document, for an inventory that holds some of its items: the checks'
    item numbers are turned back into the numbers the user's lists have."""

    kept: dict[str, list[int]] = field(default_factory=dict)
    whole: Locator | None = None

    def location(self, path: Path_, *, key: bool = False) -> Location:
        assert self.whole is not None
        if len(path) >= 2 and isinstance(path[1], int) and str(path[0]) in self.kept:
            numbers = self.kept[str(path[0])]
            if 0 <= path[1] < len(numbers):
                path = (path[0], numbers[path[1]], *path[2:])
        return self.whole.location(path, key=key)


def _refused(root: dict[str, Value]) -> tuple[set[str], dict[tuple[str, int], set[str]]] | None:
    """The top-level fields the schema refuses, and the fields it refuses in each list item ("" for
    an item that is not a mapping at all); None when it refuses nothing."""
    try:
        Inventory.model_validate(root)
    except ValidationError as exc:
        top: set[str] = set()
        items: dict[tuple[str, int], set[str]] = {}
        for error in exc.errors(include_url=False):
            loc = tuple(p for p in error["loc"] if not (isinstance(p, str) and p.startswith("function-")))
            if not loc:
                top.add("")
            elif str(loc[0]) in _ITEMS and len(loc) >= 2 and isinstance(loc[1], int):
                items.setdefault((str(loc[0]), loc[1]), set()).add(str(loc[2]) if len(loc) >= 3 else "")
            else:
                top.add(str(loc[0]))
        return top, items
    return None


def _names(kind: str, item: Value) -> set[tuple[str, str]]:
    """The names a broken item defines (a site's pools and jurisdiction too), where they can be read."""
    if not isinstance(item, dict):
        return set()
    found = {(kind, item["name"])} if isinstance(item.get("name"), str) else set()
    pools = item.get("pools") if kind == "site" else None
    if isinstance(pools, list):
        found |= {("pool", p["name"]) for p in pools if isinstance(p, dict) and isinstance(p.get("name"), str)}
    if kind == "site" and isinstance(item.get("jurisdiction"), str):
        found.add(("jurisdiction", item["jurisdiction"]))
    return {(k, str(n)) for k, n in found}


def _without_refused(item: Value, fields: set[str], model: type[BaseModel]) -> Value | None:
    """The item without the fields the schema refused, when what is left passes it; else None."""
    if not isinstance(item, dict) or "" in fields or "name" in fields:
        return None
    left = {k: v for k, v in item.items() if k not in fields}
    try:
        model.model_validate(left)
    except ValidationError:
        return None
    return left


def _checked(locator: Locator, base: dict[str, Value], chosen: dict[str, list[tuple[int, Value]]],
             unjudged: Unjudged) -> list[Diagnostic]:
    document = dict(base)
    for key, items in chosen.items():
        document[key] = [item for _, item in items]
    try:
        inventory = Inventory.model_validate(document)
    except ValidationError:  # what is left still fails (cannot happen item by item; judged nothing then)
        return []
    renumbered = _Renumbered(locator.root, locator.source_map, kept={k: [i for i, _ in v] for k, v in chosen.items()},
                             whole=locator)
    return check_inventory(inventory, renumbered, feasibility=False, unjudged=unjudged).items


def judged_beside_schema(locator: Locator) -> list[Diagnostic]:
    """The reference and rule diagnostics of the parts of a document that the schema refuses
    (load_sources reports them after the schema's own)."""
    root = locator.root
    refused = _refused(root)
    if refused is None:
        return []
    top, broken = refused
    if "" in top or "version" in top:
        return []
    base = {k: v for k, v in root.items() if k not in top}
    if "name" in top:
        base["name"] = "unnamed"  # no check reads the inventory's name
    names: set[tuple[str, str]] = set()
    kinds = {_LIST_KINDS[k] for k in top if k in _LIST_KINDS}
    intact: dict[str, list[tuple[int, Value]]] = {}
    repaired: dict[str, list[tuple[int, Value]]] = {}
    for key, (kind, model) in _ITEMS.items():
        items = base.get(key)
        if not isinstance(items, list):
            continue
        intact[key], repaired[key] = [], []
        for i, item in enumerate(items):
            fields = broken.get((key, i))
            if fields is None:
                intact[key].append((i, item))
                repaired[key].append((i, item))
                continue
            names |= _names(kind, item)
            if kind == "site" and not (isinstance(item, dict) and isinstance(item.get("jurisdiction"), str)):
                kinds.add("jurisdiction")
            left = _without_refused(item, fields, model)
            if left is not None:
                repaired[key].append((i, left))
    if "site" in kinds:
        kinds.add("jurisdiction")
    unjudged = Unjudged(frozenset(names), frozenset(kinds))
    found = _checked(locator, base, intact, unjudged)
    if repaired != intact:
        seen = set(found)
        found += [d for d in _checked(locator, base, repaired, unjudged)
                  if d.code in _REFERENCE_CODES and d not in seen]
    return found
