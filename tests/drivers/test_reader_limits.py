"""Every reader at its documented size limit (docs/security.md: 64 MiB for an inventory file, a scenario file
or a manifest, 1 GiB for a plan, the state or the journal; 64 KiB for a key): a file one byte over is refused
by the reader that reads it, naming the limit, and a file exactly at the limit is not refused for its size
(issue 45 item 8: a planted bug at "a file one byte over the limit" survived). Files over the limit are sparse:
the size is refused before a byte is read."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hybridctl.drivers import filereader
from hybridctl.drivers.filereader import KIB, MIB

DOCUMENTED = {"INVENTORY_FILE_LIMIT": 64 * MIB, "SCENARIO_LIMIT": 64 * MIB, "MANIFEST_LIMIT": 64 * MIB,
              "DOCUMENT_LIMIT": 1024 * MIB, "KEY_LIMIT": 64 * KIB}


def test_the_limits_are_the_documented_ones() -> None:
    docs = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    assert "64 MiB for an\ninventory file, a scenario file or a manifest, 1 GiB for a plan, the state or the journal" in docs
    assert {name: getattr(filereader, name) for name in DOCUMENTED} == DOCUMENTED


def sparse(path: Path, size: int, head: bytes = b"") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(head)
    os.truncate(path, size)
    return path


def _inventory(path: Path) -> object:
    from hybridctl.drivers.inventory_files import read_inventory_sources

    return read_inventory_sources(path)


def _plan(path: Path) -> object:
    from hybridctl.operations.common import read_plan

    return read_plan(path)


def _state(path: Path) -> object:
    from hybridctl.drivers.state import DirectoryBackend

    return DirectoryBackend(path.parent).load()


def _journal(path: Path) -> object:
    from hybridctl.drivers.journal import Journal

    return Journal(path, guard=lambda: None).records()


def _manifest(path: Path) -> object:
    from hybridctl.drivers.bundle import read_manifest

    return read_manifest(path.parent)


def _key(path: Path) -> object:
    from hybridctl.drivers.bundle import load_public_key

    return load_public_key(path)


READERS: list[tuple[str, str, int, Callable[[Path], object]]] = [
    ("inventory.yaml", "an inventory file", 64 * MIB, _inventory),
    ("plan.json", "a plan file", 1024 * MIB, _plan),
    ("state/state.json", "the state file", 1024 * MIB, _state),
    ("state/journal.jsonl", "the journal", 1024 * MIB, _journal),
    ("bundle/manifest.json", "manifest.json", 64 * MIB, _manifest),
    ("key.pub", "public key file", 64 * KIB, _key),
]


@pytest.mark.parametrize(("name", "what", "limit", "read"), READERS, ids=[r[0] for r in READERS])
def test_one_byte_over_the_limit_is_refused_by_its_reader(tmp_path: Path, name: str, what: str, limit: int,
                                                          read: Callable[[Path], object]) -> None:
    path = sparse(tmp_path / name, limit + 1)
    with pytest.raises(Exception) as refused:  # each reader's own error: all are usage errors naming the limit
        read(path)
    message = str(getattr(refused.value, "message", refused.value))
    assert f"{limit + 1:,} bytes is larger than the {limit:,}-byte limit" in message and what in message, message
    location = getattr(refused.value, "location", None)  # the file named where a diagnostic points
    assert location is not None and location.file == str(path), location


@pytest.mark.parametrize(("name", "limit", "read"), [("inventory.yaml", 64 * MIB, _inventory), ("key.pub", 64 * KIB, _key)])
def test_exactly_at_the_limit_is_read(tmp_path: Path, name: str, limit: int, read: Callable[[Path], object]) -> None:
    """Read whole (an inventory of spaces after a comment: read, then for the core to judge; a key file of
    that size: read, then refused as no PEM key, not for its size)."""
    path = tmp_path / name
    path.write_bytes(b"#" + b" " * (limit - 1))
    try:
        read(path)
    except Exception as error:  # any refusal but the size's
        assert "-byte limit" not in str(getattr(error, "message", error)), error


def test_a_loop_of_links_is_refused_at_its_path_with_a_hint(tmp_path: Path) -> None:
    from hybridctl.drivers.filereader import FileRefusedError, read_bounded

    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    with pytest.raises(FileRefusedError, match="a loop of symbolic links") as refused:
        read_bounded(tmp_path / "a", 10, what="a test file", hint="replace it")
    assert refused.value.location is not None and refused.value.location.file == str(tmp_path / "a")
    assert refused.value.hint == "replace it"
