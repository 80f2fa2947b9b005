"""Reading other processes' command lines in tests that watch a run's processes."""

from __future__ import annotations

import psutil


def command_line(process: psutil.Process) -> str:
    """The process's command line; "" once it is gone, or a zombie (psutil cannot read a zombie's)."""
    try:
        return " ".join(process.cmdline())
    except psutil.Error:
        return ""
