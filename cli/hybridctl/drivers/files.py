"""Atomic file writes: write a sibling temp file, fsync it, rename it over the target, fsync the directory.

A reader sees the old file or the new one, never a torn one, even across a power cut.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp, mode)
        _before_rename_hook(temp)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
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
