"""Atomic file writes: write a sibling temp file, fsync it, rename it over the target, fsync the directory.

A reader sees the old file or the new one, never a torn one, even across a power cut.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    temp = reserve_sibling(path)
    try:
        fill(temp, data, mode)
        replace_atomically(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


# atomic_write_bytes in three steps, for a writer that fills the file elsewhere (a forked child) and
# renames it into place only once it may (`plan --out`: after the checker's verdict).

def reserve_sibling(path: Path) -> str:
    """A new, empty temp file beside `path` (same file system, so the rename is atomic): its name."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    return temp


def fill(temp: str, data: bytes, mode: int = 0o644) -> None:
    """`data` as the whole content of the reserved temp file, fsynced, with `mode`."""
    with open(temp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.chmod(temp, mode)


def replace_atomically(temp: str, path: Path) -> None:
    """The filled temp file renamed over `path`, and the directory fsynced."""
    _before_rename_hook(temp)
    os.replace(temp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def atomic_write_text(path: Path, text: str, mode: int = 0o644) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), mode)


def _before_rename_hook(temp: str) -> None:
    """Fault injection for the power-cut test: HYBRIDCTL_TEST_KILL_BEFORE_RENAME=<file name> kills us here."""
    target = os.environ.get("HYBRIDCTL_TEST_KILL_BEFORE_RENAME")
    if target and Path(temp).name.startswith(f".{target}."):
        os.kill(os.getpid(), 9)
