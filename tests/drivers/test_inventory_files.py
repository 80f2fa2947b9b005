"""Reading an inventory's files (drivers/inventory_files.py): what the user is told, and how to fix it, when they cannot be used."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.drivers.filereader import INVENTORY_FILE_LIMIT
from hybridctl.drivers.inventory_files import read_inventory_sources
from hybridctl.errors import UsageError


def test_a_directory_without_yaml_files_says_what_one_holds(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not an inventory\n", encoding="utf-8")
    with pytest.raises(UsageError) as caught:
        read_inventory_sources(tmp_path)
    assert caught.value.message == f"{tmp_path}: the directory holds no *.yaml or *.yml files"
    assert caught.value.hint == "an inventory directory holds one or more YAML files"


def test_a_file_over_the_size_limit_is_refused_with_its_size_and_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as f:
        f.truncate(INVENTORY_FILE_LIMIT + 1)  # sparse: nothing is written
    with pytest.raises(UsageError) as caught:
        read_inventory_sources(path)
    assert caught.value.message == (f"{path}: 67,108,865 bytes is larger than the 67,108,864-byte limit for an "
                                     "inventory file")
    assert caught.value.location is not None and caught.value.location.file == str(path)
    assert caught.value.hint == "split the inventory into several files in one directory"


def test_a_directory_s_files_are_read_in_sorted_order(tmp_path: Path) -> None:
    for name in ("b.yml", "a.yaml", "c.txt"):
        (tmp_path / name).write_text(f"# {name}\n", encoding="utf-8")
    assert [(Path(s.name).name, s.text) for s in read_inventory_sources(tmp_path)] == [
        ("a.yaml", "# a.yaml\n"), ("b.yml", "# b.yml\n")]


def test_a_missing_path_says_what_to_pass(tmp_path: Path) -> None:
    with pytest.raises(UsageError) as caught:
        read_inventory_sources(tmp_path / "nope.yaml")
    assert caught.value.message == f"{tmp_path / 'nope.yaml'}: no such file or directory"
    assert caught.value.hint == "pass the inventory file or directory"


@pytest.mark.parametrize("kind", ["dangling-link", "fifo", "device", "directory", "link-loop"])
def test_a_directory_entry_that_is_not_a_regular_file_is_an_error_not_skipped(tmp_path: Path, kind: str) -> None:
    """Issue 34, finding 5: such an entry was skipped, and an inventory without its workloads validated."""
    import os

    (tmp_path / "a.yaml").write_text("version: 1\n", encoding="utf-8")
    entry = tmp_path / "workloads.yaml"
    if kind == "dangling-link":
        entry.symlink_to(tmp_path / "moved.yaml")
    elif kind == "fifo":
        os.mkfifo(entry)
    elif kind == "device":
        entry.symlink_to("/dev/null")
    elif kind == "directory":
        entry.mkdir()
    else:
        entry.symlink_to("partner")
        (tmp_path / "partner").symlink_to(entry.name)
    with pytest.raises(UsageError) as caught:
        read_inventory_sources(tmp_path)
    words = {"dangling-link": f"a symbolic link to {tmp_path / 'moved.yaml'}, which does not exist",
             "fifo": "a FIFO (named pipe), not a regular file", "device": "a character device, not a regular file",
             "directory": "cannot read: Is a directory", "link-loop": "a loop of symbolic links"}[kind]
    assert caught.value.message == f"{entry}: {words}"
    assert caught.value.location is not None and caught.value.location.file == str(entry)
    if kind != "directory":
        assert caught.value.hint is not None and f"replace {entry} with a regular file, or remove it" in caught.value.hint


def test_a_symbolic_link_to_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "elsewhere.txt").write_text("version: 1\n", encoding="utf-8")
    (tmp_path / "a.yaml").symlink_to("elsewhere.txt")
    assert [s.text for s in read_inventory_sources(tmp_path)] == ["version: 1\n"]
