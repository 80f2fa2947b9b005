"""Reading an inventory's files: what the user is told, and how to fix it, when they cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.core.inventory.loader import MAX_FILE_BYTES, read_sources
from hybridctl.errors import UsageError


def test_a_directory_without_yaml_files_says_what_one_holds(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an inventory\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        read_sources(tmp_path)
    assert caught.value.message == f"{tmp_path}: the directory holds no *.yaml or *.yml files"
    assert caught.value.hint == "an inventory directory holds one or more YAML files"


def test_a_file_over_the_size_limit_is_refused_with_its_size_and_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(MAX_FILE_BYTES + 1)  # sparse: nothing is written
    with pytest.raises(UsageError) as caught:
        read_sources(path)
    assert caught.value.message == (f"{path}: 67,108,865 bytes is larger than the 67,108,864-byte limit for an "
                                     "inventory file")
    assert caught.value.location is not None and caught.value.location.file == str(path)
    assert caught.value.hint == "split the inventory into several files in one directory"


def test_a_directory_s_files_are_read_in_sorted_order(tmp_path: Path) -> None:
    for name in ("b.yml", "a.yaml", "c.txt"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    assert [(Path(s.name).name, s.text) for s in read_sources(tmp_path)] == [
        ("a.yaml", "# a.yaml\n"), ("b.yml", "# b.yml\n")]


def test_a_missing_path_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        read_sources(tmp_path / "nope.yaml")
    assert caught.value.message == f"{tmp_path / 'nope.yaml'}: no such file or directory"
    assert caught.value.hint == "pass the inventory file or directory"
