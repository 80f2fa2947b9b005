"""Running `hybridctl` as a subprocess the way users do, with the recording cloud driver wired in."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import IO

SUPPORT_DIR = Path(__file__).resolve().parent
# `hybridctl` with the apply commands registered, whether or not the lead's _register() lists them yet.
_BOOT = ("import sys; import hybridctl.commands.apply_cmds; from hybridctl.commands.app import run; "
         "sys.argv[0] = 'hybridctl'; run()")


def hybridctl_argv(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", _BOOT, *map(str, args)]


def cli_env(*, recording_cloud: bool = True, **extra: str) -> dict[str, str]:
    """The environment for a CLI subprocess: no colour, wide lines, the test double for the cloud."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDCTL_")}
    env.update({"NO_COLOR": "1", "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(
        [str(SUPPORT_DIR), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])})
    if recording_cloud:
        env["HYBRIDCTL_CLOUD_DRIVER"] = "recording_cloud:factory"
    env.update(extra)
    return env


def run_cli(*args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout_s: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(hybridctl_argv(*args), env=dict(env if env is not None else cli_env()), cwd=cwd,
                          capture_output=True, text=True, timeout=timeout_s, stdin=subprocess.DEVNULL, check=False)


def start_cli(*args: str | Path, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(hybridctl_argv(*args), env=dict(env if env is not None else cli_env()), cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)


class StreamTail:
    """Everything a running process has written to one of its pipes so far, read by a thread (a test
    waits for a line without blocking on the pipe)."""

    def __init__(self, stream: IO[str]) -> None:
        self._parts: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self._parts.append(line)

    def text(self) -> str:
        return "".join(self._parts)

    def finish(self, timeout_s: float = 120) -> str:
        self._thread.join(timeout_s)
        return self.text()


def write_inventory(path: Path, document: Mapping[str, object]) -> Path:
    """JSON is YAML: the loader reads it as an inventory file."""
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path
