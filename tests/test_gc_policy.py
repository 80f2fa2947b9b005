"""The process's one garbage-collection policy (hybridctl/__main__.py): set at entry, before any command."""

from __future__ import annotations

import subprocess
import sys


def test_the_console_script_sets_rare_full_collections_before_any_command_runs() -> None:
    probe = ("import gc, sys\n"
             "from hybridctl import __main__ as entry\n"
             "from hybridctl.commands import app\n"
             "seen = []\n"
             "app.run = lambda argv=None: seen.append(gc.get_threshold())\n"
             "try:\n"
             "    entry.main()\n"
             "except SystemExit:\n"
             "    pass\n"
             "print(seen[0])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    from hybridctl.__main__ import GC_THRESHOLDS

    assert out.strip() == str(GC_THRESHOLDS)
    assert GC_THRESHOLDS[0] > 700 and GC_THRESHOLDS[2] > 10  # rarer than the interpreter's defaults
