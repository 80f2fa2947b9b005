"""Validate Kueue objects against the real CRD schemas in tests/data/kueue-crds/.

The CRDs' OpenAPI v3 schemas are turned into strict JSON Schemas: wherever an object lists its
properties and neither allows extra ones (`additionalProperties`) nor preserves unknown fields
(`x-kubernetes-preserve-unknown-fields`), unknown keys are rejected, so a misspelt field fails
instead of being pruned silently by the API server. The root and `metadata` are strict too
(`metadata` against a subset of ObjectMeta). The `x-kubernetes-*` extensions, CEL rules
included, are otherwise treated as no-ops; tests check the CEL rules that matter by hand.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml

CRD_DIR = Path(__file__).resolve().parent.parent / "data" / "kueue-crds"
GROUP = "kueue.x-k8s.io"

_DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
_LABEL_KEY = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"


def _object_meta(namespaced: bool) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "name": {"type": "string", "pattern": _DNS_SUBDOMAIN, "maxLength": 253},
        "labels": {
            "type": "object",
            "propertyNames": {"pattern": _LABEL_KEY},
            "additionalProperties": {"type": "string", "pattern": _LABEL_VALUE, "maxLength": 63},
        },
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    }
    if namespaced:
        properties["namespace"] = {"type": "string", "pattern": _DNS_LABEL, "maxLength": 63}
    return {
        "type": "object",
        "required": ["name", "namespace"] if namespaced else ["name"],
        "properties": properties,
        "additionalProperties": False,
    }


def _python_regex(pattern: str) -> str:
    """Go's RE2 accepts inline flags anywhere (`^(?i)...`); Python wants global flags first."""
    for flag in ("(?i)",):
        if flag in pattern and not pattern.startswith(flag):
            pattern = flag + pattern.replace(flag, "", 1)
    return pattern


def strict(schema: Any) -> Any:
    """A copy of an OpenAPI v3 (structural) schema that rejects unknown fields."""
    if isinstance(schema, list):
        return [strict(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("enum", "default", "required", "example") else strict(v)) for k, v in schema.items()}
    if isinstance(schema.get("pattern"), str):
        out["pattern"] = _python_regex(schema["pattern"])
    if "properties" in schema:
        # `properties` maps field names to schemas; its keys are not schema keywords.
        out["properties"] = {name: strict(sub) for name, sub in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get("x-kubernetes-preserve-unknown-fields"):
            out["additionalProperties"] = False
    return out


def _crd_files() -> Iterator[Path]:
    return iter(sorted(CRD_DIR.glob(f"{GROUP}_*.yaml")))


@cache
def crds() -> dict[str, dict[str, Any]]:
    """kind -> CRD manifest."""
    found = {}
    for path in _crd_files():
        crd = yaml.safe_load(path.read_text())
        found[crd["spec"]["names"]["kind"]] = crd
    return found


def served_versions(kind: str) -> dict[str, dict[str, Any]]:
    return {v["name"]: v for v in crds()[kind]["spec"]["versions"] if v.get("served")}


def storage_version(kind: str) -> str:
    (name,) = [str(v["name"]) for v in crds()[kind]["spec"]["versions"] if v.get("storage")]
    return name


@cache
def validator(kind: str, version: str) -> jsonschema.Draft7Validator:
    crd = crds()[kind]
    schema = copy.deepcopy(served_versions(kind)[version]["schema"]["openAPIV3Schema"])
    schema = strict(schema)
    props = schema["properties"]
    props["apiVersion"] = {"const": f"{GROUP}/{version}"}
    props["kind"] = {"const": kind}
    props["metadata"] = _object_meta(crd["spec"]["scope"] == "Namespaced")
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def errors(obj: dict[str, Any]) -> list[str]:
    """Every schema violation of one Kueue object, as `path: message` strings (empty when valid)."""
    api_version = str(obj.get("apiVersion", ""))
    group, _, version = api_version.partition("/")
    kind = str(obj.get("kind", ""))
    if group != GROUP or kind not in crds():
        return [f"not a Kueue object: apiVersion={api_version!r} kind={kind!r}"]
    if version not in served_versions(kind):
        return [f"{kind} is not served at {api_version}; served: {sorted(served_versions(kind))}"]
    found = validator(kind, version).iter_errors(obj)
    return sorted(f"{'/'.join(str(p) for p in e.absolute_path) or '<root>'}: {e.message}" for e in found)
