"""The console script's hard exit after `plan` (os._exit once the output is flushed): the exit code is
the command's, and every byte reaches a pipe, though nothing is freed and no atexit handler runs."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from support.examples import EXAMPLE_PATHS

# The console script's main(), with an atexit handler that says whether the interpreter's own exit ran.
PROBE = ("import atexit, sys\n"
         "atexit.register(lambda: print('INTERPRETER-EXIT', file=sys.stderr))\n"
         "from hybridctl.__main__ import main\n"
         "sys.argv = ['hybridctl', *sys.argv[1:]]\n"
         "main()\n")

UNPLACED = """\
version: 1
name: u
sites:
  - {name: dc, kind: onprem, jurisdiction: EU, egress_usd_per_gb: 0, latency_ms: {},
     pools: [{name: l4, gpu: L4, gpus: 2, capacity_type: reserved, usd_per_gpu_hour: 1}]}
workloads:
  - {name: api, type: realtime_inference, gpu: {types: [L4], count: 1}, replicas: 3}
"""


# ... with a thread that is still at work when the command ends, however long the command takes (it works
# until the main thread has ended): the exit must wait for it.
THREADED = PROBE.replace("from hybridctl", "import threading, time\n"
                         "def work():\n"
                         "    while threading.main_thread().is_alive():\n"
                         "        time.sleep(0.01)\n"
                         "    print('THREAD-DONE', file=sys.stderr)\n"
                         "threading.Thread(target=work).start()\n"
                         "from hybridctl", 1)


def console(*args: str, probe: str = PROBE) -> subprocess.CompletedProcess[str]:
    # stdout and stderr are pipes, block-buffered (no PYTHONUNBUFFERED): only a flush gets them out
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"} | {"NO_COLOR": "1"}
    return subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env,
                          timeout=120)


def test_plan_output_is_whole_and_the_process_ends_at_once(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = console("plan", str(EXAMPLE_PATHS[0]), "--format", "json", "--out", str(out),
                     "--state", str(tmp_path / "state"))
    assert result.returncode == 0, result.stderr
    assert len(result.stdout) > io.DEFAULT_BUFFER_SIZE  # more than a buffer holds
    assert json.loads(result.stdout)["placements"]  # the whole document, up to its last brace
    assert f"plan written to {out}" in result.stderr
    assert json.loads(out.read_bytes())["placements"]
    assert "INTERPRETER-EXIT" not in result.stderr  # os._exit: the interpreter's exit was skipped


def test_plan_keeps_its_exit_code(tmp_path: Path) -> None:
    inventory = tmp_path / "unplaced.yaml"
    inventory.write_text(UNPLACED)
    out = tmp_path / "plan.json"
    result = console("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "state"))
    assert result.returncode == 1, result.stdout + result.stderr
    assert "fixed-tier workload(s) left with 1 replica(s) unplaced: api" in result.stderr
    assert "Unplaced" in result.stdout
    assert "INTERPRETER-EXIT" not in result.stderr
    assert not out.exists()  # a failing plan writes no plan file (apply would refuse it)


def test_other_commands_and_errors_exit_as_before(tmp_path: Path) -> None:
    missing = console("plan", str(tmp_path / "missing.yaml"))
    assert missing.returncode == 2 and "no such file or directory" in missing.stderr
    assert "INTERPRETER-EXIT" in missing.stderr  # nothing was left to the exit: the interpreter's own
    validated = console("validate", str(EXAMPLE_PATHS[0]))
    assert validated.returncode == 0 and "✓" in validated.stdout
    assert "INTERPRETER-EXIT" in validated.stderr


def test_a_thread_still_at_work_is_waited_for(tmp_path: Path) -> None:
    result = console("plan", str(EXAMPLE_PATHS[0]), "--state", str(tmp_path / "state"), probe=THREADED)
    assert result.returncode == 0, result.stderr
    assert "THREAD-DONE" in result.stderr and "INTERPRETER-EXIT" in result.stderr
