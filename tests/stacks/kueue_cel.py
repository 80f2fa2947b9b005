"""Evaluate the Kueue CRDs' CEL rules (`x-kubernetes-validations`) on objects, with cel-python.

As the API server does: each rule runs with `self` bound to the value at its schema node;
a transition rule (one that mentions `oldSelf`) runs only on an update, and only where the old
object has a value at that node, with `oldSelf` bound to it. Rules use only standard CEL here
(the v0.19 CRDs need no Kubernetes CEL library function); a rule cel-python cannot compile
fails the test rather than being skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import cache
from typing import Any

import celpy
from kueue_crd_schema import served_versions

_MISSING = object()


@cache
def _program(rule: str) -> Any:
    env = celpy.Environment()
    return env.program(env.compile(rule))


def _children(schema: dict[str, Any], new: Any, old: Any) -> Iterator[tuple[str, dict[str, Any], Any, Any]]:
    if isinstance(new, dict):
        props = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        for key, value in new.items():
            sub = props.get(key) or (extra if isinstance(extra, dict) else None)
            if sub is not None:
                yield key, sub, value, old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
    elif isinstance(new, list) and isinstance(schema.get("items"), dict):
        # Lists are matched by index only for atomic lists; old values of list items are not paired.
        for i, value in enumerate(new):
            yield f"[{i}]", schema["items"], value, _MISSING


def _walk(schema: dict[str, Any], new: Any, old: Any, path: str) -> Iterator[str]:
    for validation in schema.get("x-kubernetes-validations") or []:
        rule = validation["rule"]
        transition = "oldSelf" in rule
        if transition and old is _MISSING:
            continue
        activation = {"self": celpy.json_to_cel(new)}
        if transition:
            activation["oldSelf"] = celpy.json_to_cel(old)
        result = _program(rule).evaluate(activation)
        if result is not True and not (isinstance(result, celpy.celtypes.BoolType) and bool(result)):
            yield f"{path or '<root>'}: {validation.get('message', rule)} (rule: {rule})"
    for key, sub, value, old_value in _children(schema, new, old):
        yield from _walk(sub, value, old_value, f"{path}.{key}" if path else key)


def cel_errors(obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[str]:
    """Violations of the CRD's CEL rules by `obj` (created, or updated from `old`)."""
    kind = obj["kind"]
    version = obj["apiVersion"].split("/", 1)[1]
    schema = served_versions(kind)[version]["schema"]["openAPIV3Schema"]
    return list(_walk(schema, obj, old if old is not None else _MISSING, ""))


def rule_count(kind: str, version: str = "v1beta2") -> int:
    def count(node: Any) -> int:
        if isinstance(node, dict):
            return len(node.get("x-kubernetes-validations") or []) + sum(count(v) for v in node.values())
        if isinstance(node, list):
            return sum(count(v) for v in node)
        return 0
    return count(served_versions(kind)[version]["schema"]["openAPIV3Schema"])
