"""Durability, observed: the state is written as write → fsync(temp) → rename → fsync(directory),
and every journal record is on disk (fsynced) before append() returns.

os.fsync and os.replace are wrapped to record what the process asks of the kernel, and, at each
fsync, what the file holds: so a missing fsync, one in the wrong order, or an fsync before the
data was written all fail here. Tested through the public API of drivers/files.py and the journal,
which the state store uses for every write.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest
from hybridctl.drivers.files import atomic_write_bytes, atomic_write_text
from hybridctl.drivers.journal import Journal

Event = tuple[str, str, bytes]  # (what, path, the file's bytes at that moment; b"" for a directory)


@pytest.fixture
def syscalls(monkeypatch: pytest.MonkeyPatch) -> list[Event]:
    events: list[Event] = []
    real_fsync: Callable[[int], None] = os.fsync
    real_replace = os.replace

    def fsync(fd: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            events.append(("fsync-dir", path, b""))
        else:
            events.append(("fsync", path, Path(path).read_bytes()))
        real_fsync(fd)

    def replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(("rename", os.fspath(src), os.fspath(dst).encode()))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    return events


class TestAtomicWrite:
    def test_write_fsync_rename_fsync_directory(self, tmp_path: Path, syscalls: list[Event]) -> None:
        target = tmp_path / "state" / "state.json"
        atomic_write_text(target, '{"serial": 7}')
        assert [what for what, _, _ in syscalls] == ["fsync", "rename", "fsync-dir"]
        (_, synced, content), (_, renamed, renamed_to), (_, directory, _) = syscalls
        assert content == b'{"serial": 7}'  # the data was written before the fsync, all of it
        assert Path(synced).parent == target.parent and Path(synced).name.startswith(".state.json.")
        assert renamed == synced and renamed_to == str(target).encode()  # the temp file that was fsynced
        assert directory == str(target.parent)
        assert target.read_text() == '{"serial": 7}' and not Path(synced).exists()

    def test_an_overwrite_keeps_the_old_file_until_the_rename(self, tmp_path: Path, syscalls: list[Event],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
        target = tmp_path / "state.json"
        atomic_write_bytes(target, b"old")
        syscalls.clear()
        seen: list[bytes] = []
        recording_replace = os.replace

        def replace(src: str, dst: str) -> None:
            seen.append(Path(dst).read_bytes())  # what a reader sees just before the rename
            recording_replace(src, dst)

        monkeypatch.setattr(os, "replace", replace)
        atomic_write_bytes(target, b"new")
        assert seen == [b"old"] and target.read_bytes() == b"new"
        assert [what for what, _, content in syscalls] == ["fsync", "rename", "fsync-dir"]
        assert syscalls[0][2] == b"new"

    def test_the_mode_is_set_before_the_rename(self, tmp_path: Path, syscalls: list[Event]) -> None:
        target = tmp_path / "secret.json"
        atomic_write_text(target, "{}", mode=0o600)
        assert stat.S_IMODE(target.stat().st_mode) == 0o600


class TestJournal:
    def test_every_append_is_fsynced_with_its_record_in_the_file(self, tmp_path: Path, syscalls: list[Event]) -> None:
        journal = Journal(tmp_path / "journal.jsonl")
        first = journal.append("run-1", "started", step="a")
        second = journal.append("run-1", "succeeded", step="a")
        assert [(what, path) for what, path, _ in syscalls] == [("fsync", str(journal.path))] * 2
        assert syscalls[0][2] == (first.to_json() + "\n").encode()
        assert syscalls[1][2] == (first.to_json() + "\n" + second.to_json() + "\n").encode()
        assert [r.event for r in journal.records()] == ["started", "succeeded"]

    def test_a_record_is_one_compact_line_of_utf_8_that_reads_back(self, tmp_path: Path) -> None:
        journal = Journal(tmp_path / "journal.jsonl")
        written = journal.append("run-1", "step-done", step="model-sync/dc/café", summary="synced ✓")
        line = journal.path.read_bytes()
        assert line.count(b"\n") == 1 and line.endswith(b"\n")
        assert "café".encode() in line and "✓".encode() in line  # UTF-8 as written, not \\u escapes
        assert b", " not in line and b": " not in line  # compact: one record per line, no padding
        assert journal.records() == [written]
