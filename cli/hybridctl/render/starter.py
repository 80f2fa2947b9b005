"""`hybridctl init`: a starter inventory, rendered from templates/init/ around an example."""

from __future__ import annotations

import re
from pathlib import Path

from hybridctl.errors import UsageError
from hybridctl.paths import inventories_dir
from hybridctl.render.templates import render

PATTERNS = ("cloud-burst", "split-inference", "train-onprem-serve-cloud", "federated", "enterprise",
            "multi-cloud-inference")


def _example_text(pattern: str) -> str:
    example = inventories_dir() / pattern
    if example.is_dir():
        return "\n".join(f.read_text(encoding="utf-8") for f in sorted(example.glob("*.yaml")))
    return (inventories_dir() / f"{pattern}.yaml").read_text(encoding="utf-8")


def write_starter(directory: Path, pattern: str, *, force: bool) -> Path:
    if pattern not in PATTERNS:
        raise UsageError(f"unknown pattern '{pattern}'", hint=f"choose one of: {', '.join(PATTERNS)}")
    if directory.exists() and not directory.is_dir():
        raise UsageError(f"{directory} is a file: init takes the directory to write inventory.yaml into",
                         hint=f"run `hybridctl init {directory.parent}` to write {directory.parent / 'inventory.yaml'},"
                              " or name a new directory")
    target = directory / "inventory.yaml"
    if target.exists() and not force:
        raise UsageError(f"{target} already exists", hint="pass --force to overwrite it, or choose another directory")
    name = re.sub(r"[^a-z0-9-]+", "-", directory.resolve().name.lower()).strip("-")[:63] or "my-inventory"
    body = _example_text(pattern)
    # a directory example repeats `version` and `name` in each file; keep the first of each
    seen: set[str] = set()
    lines = []
    for line in body.splitlines():
        key = line.split(":", 1)[0]
        if key in ("version", "name") and not line.startswith(" "):
            if key in seen:
                continue
            seen.add(key)
            line = f"name: {name}" if key == "name" else line
        lines.append(line)
    directory.mkdir(parents=True, exist_ok=True)
    target.write_text(render("init/starter.yaml.j2", pattern=pattern, body="\n".join(lines)), encoding="utf-8")
    return target
