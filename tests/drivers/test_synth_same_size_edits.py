"""synth removes an earlier stack directory only when every file is still what it wrote (issue 45 item 8):
an edit that keeps the size, and even the modification time, is the user's and is kept. A planted check of
size (or size and mtime) alone, for the digest, removes the user's edit here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hybridctl.drivers.synth import ProgramRun, Registered
from hybridctl.drivers.synth_write import write_synth

NODE_GROUP = Path("aws") / "eks.NodeGroup" / "ng.json"


def _synth(out: Path, *stacks: str, notes: list[str] | None = None) -> None:
    runs = [ProgramRun("aws-gpu-pools", s, [Registered("aws:eks/nodeGroup:NodeGroup", "ng", {"x": 1}, {})], [])
            for s in stacks]
    write_synth(out, runs, plan_digest="sha256:x", inventory="test",
                **({"note": notes.append} if notes is not None else {}))


def _same_size(data: bytes) -> bytes:
    """One byte changed: the digit synth wrote becomes another digit."""
    at = data.index(b"1")
    return data[:at] + b"2" + data[at + 1:]


@pytest.mark.parametrize("edit", ["same-size", "same-size-and-mtime", "one-byte-longer", "one-byte-shorter"])
def test_an_edited_file_keeps_its_stack_directory(tmp_path: Path, edit: str) -> None:
    out = tmp_path / "synth"
    _synth(out, "mine")
    written = out / "mine" / NODE_GROUP
    before, stamp = written.read_bytes(), written.stat()
    changed = {"same-size": _same_size(before), "same-size-and-mtime": _same_size(before),
               "one-byte-longer": before + b"\n", "one-byte-shorter": before[:-1]}[edit]
    written.write_bytes(changed)
    if edit == "same-size-and-mtime":
        os.utime(written, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
    notes: list[str] = []
    _synth(out, "other", notes=notes)  # `mine` is no longer planned: removed only if still synth's
    assert written.read_bytes() == changed
    assert any(str(out / "mine") in n and "changed since synth wrote them" in n and NODE_GROUP.as_posix() in n
               for n in notes), notes
    assert [s["stack"] for s in json.loads((out / "index.json").read_text())["stacks"]] == ["other"]


def test_a_file_as_written_is_synths_and_goes(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    _synth(out, "mine")
    written = out / "mine" / NODE_GROUP
    written.write_bytes(written.read_bytes())  # rewritten with the same bytes: a new mtime, still synth's
    _synth(out, "other")
    assert not (out / "mine").exists()
