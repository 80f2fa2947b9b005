"""Helpers for the playbook tests: signed bundles, local "hosts" under tmp dirs, host state.

Local runs use ``ansible_connection: local`` with every host rooted at its own directory
(``hybridctl_common_root``); they go through the same driver (hybridctl.drivers.ansible) as runs
against the real SSH test hosts, so results arrive the same way.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hybridctl.core.deploy.bundle import MANIFEST_NAME, SIGNATURE_NAME
from hybridctl.drivers.ansible import PlaybookResult
from hybridctl.drivers.bundle import create_bundle, sign_bundle

MODEL = "fraud-scorer"
RunPlaybook = Callable[..., PlaybookResult]


@dataclass(frozen=True)
class Bundles:
    """Signed bundles of MODEL: good ones by version, and broken variants of v3 by kind."""

    public_key: Path
    other_public_key: Path
    good: Mapping[str, Path]
    broken: Mapping[str, Path]


def payload(version: str) -> dict[str, bytes]:
    # The weights are larger than what model-sync sends inline with the install (256 KiB), so
    # that every sync uses both ways: a file transfer for them, the arguments for the rest.
    return {
        "config.json": f'{{"version": "{version}"}}'.encode(),
        "weights/model.safetensors": version.encode() * (160 * 1024),
        "tokenizer/vocab.txt": b"a\nb\nc\n",
    }


def make_bundle(directory: Path, version: str, private_key: Path, *, rollback_to: str | None,
                files: Mapping[str, bytes] | None = None) -> Path:
    for relative, data in (files or payload(version)).items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_bytes(data)
    create_bundle(directory, model=MODEL, version=version, source_commit=f"commit-{version}",
                  evaluation={"auc": 0.9}, rollback_to=rollback_to)
    sign_bundle(directory, private_key)
    return directory


def break_bundle(directory: Path, kind: str) -> None:
    if kind == "tampered":
        weights = directory / "weights/model.safetensors"
        weights.write_bytes(b"e" * weights.stat().st_size)  # same size: only the digest differs
    elif kind == "unsigned":
        (directory / SIGNATURE_NAME).unlink()
    elif kind == "extra":
        (directory / "tokenizer/loader.py").write_text("import os\n")
    elif kind == "manifest":
        manifest = directory / MANIFEST_NAME
        manifest.write_bytes(manifest.read_bytes().replace(b'"auc":0.9', b'"auc":0.99'))
    elif kind != "wrong_key":
        raise ValueError(kind)


BROKEN_KINDS = ("tampered", "unsigned", "wrong_key", "extra", "manifest")


def local_inventory(roots: Mapping[str, Path], host_vars: Mapping[str, Mapping[str, object]] | None = None,
                    group_vars: Mapping[str, object] | None = None) -> dict[str, object]:
    """Hosts that are directories on this machine, reached with the local connection."""
    return {"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable, **(group_vars or {})},
        "hosts": {name: {"hybridctl_common_root": str(root), **(host_vars or {}).get(name, {})}
                  for name, root in roots.items()},
    }}


def model_dir(root: Path) -> Path:
    return root / "var/lib/hybridctl/models" / MODEL


def current_version(root: Path) -> str | None:
    link = model_dir(root) / "current"
    return Path(link.readlink()).name if link.is_symlink() else None


def previous_version(root: Path) -> str | None:
    link = model_dir(root) / "previous"
    return Path(link.readlink()).name if link.is_symlink() else None


def versions(root: Path) -> list[str]:
    directory = model_dir(root) / "versions"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def copy_roots(source: Path, names: list[str], destination: Path) -> dict[str, Path]:
    """Give each named host its own copy of a prepared host root (symlinks kept as they are)."""
    roots = {}
    for name in names:
        roots[name] = destination / name
        shutil.copytree(source, roots[name], symlinks=True)
    return roots


def describe(result: PlaybookResult) -> str:
    """Enough of a run for an assertion message."""
    lines = [f"{result.playbook}: {result.status} rc={result.rc}"]
    lines += [f"  {h.host}: {h.state} changed={h.changed} task={h.failed_task!r} msg={h.message!r}"
              for h in result.hosts]
    if result.error:
        lines.append(result.error)
    return "\n".join(lines)
