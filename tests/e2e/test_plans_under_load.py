"""The same inputs give the same plan file on a quiet machine and beside three busy processes (spec, "Plans
are reproducible"): `plan --out` run as a user runs it, twice, the second time with every core taken.

The work-bounded solver is what makes it so (core/solver/effort.py); tests/core/solver/test_reproducible_plans.py
shows the old time budgets failing it on a clock that runs fast.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from inventory_gen import generate

# spins for at most a minute of its own clock, should the test die before it is killed
BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end:\n    pass\n"


@contextmanager
def _busy(processes: int) -> Iterator[None]:
    """`processes` spinning interpreters, killed when the block ends (each the spinning process itself: a
    `timeout` wrapper, killed, would leave its child spinning)."""
    spinning = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(processes)]
    try:
        yield
    finally:
        for process in spinning:
            process.kill()
            process.wait()


def _plan(inventory: Path, out: Path) -> bytes:
    env = dict(os.environ, NO_COLOR="1")
    done = subprocess.run([sys.executable, "-m", "hybridctl", "plan", str(inventory), "--week", "2026-W48",
                           "--out", str(out), "--allow-unplaced"], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return out.read_bytes()


@pytest.mark.slow
def test_a_plan_file_is_the_same_beside_three_busy_processes(tmp_path: Path) -> None:
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text(yaml.safe_dump(generate(1000, 100, 4, 0.3), sort_keys=False))
    quiet = _plan(inventory, tmp_path / "quiet.json")
    with _busy(3):
        loaded = _plan(inventory, tmp_path / "loaded.json")
    assert loaded == quiet


@pytest.mark.slow
def test_a_plan_the_safety_net_cuts_short_says_so_and_exits_5(tmp_path: Path) -> None:
    inventory = tmp_path / "fleet.yaml"
    inventory.write_text(yaml.safe_dump(generate(1000, 100, 4, 0.3), sort_keys=False))
    done = subprocess.run([sys.executable, "-m", "hybridctl", "plan", str(inventory), "--week", "2026-W48",
                           "--out", str(tmp_path / "plan.json"), "--allow-unplaced", "--time-limit", "0.5"],
                          capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1", COLUMNS="200"),
                          timeout=600, check=False)
    assert done.returncode == 5, done.stderr
    assert "the solver's safety net (--time-limit 0.5 s) cut this plan short" in done.stderr
    assert (tmp_path / "plan.json").exists()  # a valid plan: written, and said to be cut short
