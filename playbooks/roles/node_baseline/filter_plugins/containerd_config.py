"""Filters for node_baseline: the NVIDIA runtime merged into containerd's full configuration.

containerd 1.x (config version 2) replaces a whole plugin section with an imported file's, so a
drop-in that only names the nvidia runtime drops the main file's sandbox_image, runc options and
registry mirrors. The role therefore writes one full config: what `containerd config dump` says
containerd loads today (defaults, main file and imports resolved), plus the nvidia runtime.
Runs on the controller (Python >= 3.11: tomllib), so the host needs no TOML library.
"""

from __future__ import annotations

import copy
import json
import math
import re
import tomllib
from collections.abc import Mapping
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
# Where the CRI plugin keeps its runtimes, by config version.
_CRI = {2: ("io.containerd.grpc.v1.cri", "containerd"), 3: ("io.containerd.cri.v1.runtime", "containerd")}


class ContainerdConfigError(ValueError):
    pass


def _key(name: str) -> str:
    return name if _BARE_KEY.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a JSON string is a valid TOML basic string (ASCII, \\uXXXX escapes)
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    raise ContainerdConfigError(f"cannot write a {type(value).__name__} value to TOML: {value!r}")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def to_toml(data: Mapping[str, Any]) -> str:
    """TOML text for data (tables, arrays of tables, strings, numbers, booleans, arrays), keys sorted."""
    lines: list[str] = []

    def table(path: list[str], body: Mapping[str, Any], header: str | None) -> None:
        if header is not None:
            lines.extend(["", header])
        for name in sorted(body):
            value = body[name]
            if not isinstance(value, Mapping) and not _is_table_array(value):
                lines.append(f"{_key(name)} = {_value(value)}")
        for name in sorted(body):
            value, inner = body[name], [*path, _key(name)]
            if isinstance(value, Mapping):
                table(inner, value, "[" + ".".join(inner) + "]")
            elif _is_table_array(value):
                for item in value:
                    table(inner, item, "[[" + ".".join(inner) + "]]")

    table([], data, None)
    return "\n".join(lines).lstrip("\n") + "\n"


def _cri_containerd(config: dict[str, Any]) -> dict[str, Any]:
    version = config.get("version", 1)
    if version not in _CRI:
        raise ContainerdConfigError(f"containerd config version {version} is not supported (2 or 3)")
    plugin, section = _CRI[version]
    cri = config.setdefault("plugins", {}).setdefault(plugin, {})
    found: dict[str, Any] = cri.setdefault(section, {})
    return found


def hybridctl_containerd_merge(dump: str, binary: str, make_default: bool, systemd_cgroup: bool,
                               main_config: str) -> dict[str, Any]:
    """The full config to write: the dumped one with the nvidia runtime (runc's settings, its binary).

    Returns {text, folded_imports}: the imports other than the main file itself are resolved into
    the text (containerd 1.x would otherwise let them replace whole sections again).
    """
    try:
        config = tomllib.loads(dump)
    except tomllib.TOMLDecodeError as exc:
        raise ContainerdConfigError(f"`containerd config dump` printed no valid TOML: {exc}") from exc
    imports = [str(i) for i in config.pop("imports", []) if str(i) != main_config]
    cri = _cri_containerd(config)
    runtimes = cri.setdefault("runtimes", {})
    runc = runtimes.get("runc", {})
    nvidia: dict[str, Any] = copy.deepcopy(dict(runc)) if isinstance(runc, Mapping) else {}
    if not nvidia.get("runtime_type"):  # a runc table without one is dumped with ""
        nvidia["runtime_type"] = "io.containerd.runc.v2"
    options = nvidia.setdefault("options", {})
    options["BinaryName"] = binary
    options.setdefault("SystemdCgroup", systemd_cgroup)
    runtimes["nvidia"] = nvidia
    if make_default:
        cri["default_runtime_name"] = "nvidia"
    return {"text": to_toml(config), "folded_imports": imports}


def hybridctl_containerd_runtimes(dump: str) -> dict[str, Any]:
    """What containerd loads, in short: {version, default_runtime, runtimes: {name: BinaryName or ''}}."""
    config = tomllib.loads(dump)
    cri = _cri_containerd(config)
    runtimes = cri.get("runtimes", {})
    return {
        "version": config.get("version", 1),
        "default_runtime": cri.get("default_runtime_name", ""),
        "runtimes": {name: str(r.get("options", {}).get("BinaryName", "")) for name, r in runtimes.items()
                     if isinstance(r, Mapping)},
    }


class FilterModule:
    def filters(self) -> dict[str, Any]:
        return {
            "hybridctl_containerd_merge": hybridctl_containerd_merge,
            "hybridctl_containerd_runtimes": hybridctl_containerd_runtimes,
        }
