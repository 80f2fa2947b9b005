"""A CloudDriver test double that records every call and keeps stacks in files. Tests only.

`hybridctl apply` subprocesses load it through the test seam
HYBRIDCTL_CLOUD_DRIVER=recording_cloud:factory (with tests/support on PYTHONPATH).

Files, under <state dir>/recording-cloud/ (or $HYBRIDCTL_RECORDING_CLOUD_DIR):
  calls.jsonl    one line per call: operation, project, stack, config digest, pid
  stacks.json    stack name -> the config it was last brought up with (deleted on destroy)
  drift/<stack>  present: a refresh reports that stack as drifted (a test creates it)
Knobs: HYBRIDCTL_RECORDING_CLOUD_FAIL=<stack name>[,<stack name>] makes `up` of those stacks
fail; HYBRIDCTL_RECORDING_CLOUD_DELAY_S=<seconds> makes every call take that long;
HYBRIDCTL_RECORDING_CLOUD_HOLD=<path> makes every call wait until that file exists (a test that needs
a run to be still at work while it does something else releases it when done: no race with a loaded
machine's start-up times, as a fixed delay has).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from hybridctl.drivers.pulumi import EventCallback, StackChange, StackEvent, StackResult, StackSpec
from hybridctl.errors import HybridctlError


def _digest(config: Mapping[str, object]) -> str:
    text = json.dumps(dict(config), sort_keys=True, default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


class RecordingCloud:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)

    # the CloudDriver protocol

    def preview(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        self._record("preview", spec)
        before = self._stacks().get(spec.stack_name)
        op = "same" if before == _digest(spec.config) else ("update" if before else "create")
        return StackResult(spec.project, spec.stack_name, "preview", {op: 1})

    def up(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        self._record("up", spec)
        failing = {s for s in os.environ.get("HYBRIDCTL_RECORDING_CLOUD_FAIL", "").split(",") if s}
        if spec.stack_name in failing:
            raise HybridctlError(f"pulumi up failed for stack {spec.project}/{spec.stack_name}: injected failure")
        urn = f"urn:pulumi:{spec.stack_name}::{spec.project}::hybridctl:test:Stack::{spec.stack_name}"
        if on_event is not None:
            on_event(StackEvent(spec.stack_name, urn, "hybridctl:test:Stack", spec.stack_name, "create", "started"))
        with self._exclusive():
            stacks = self._stacks()
            before = stacks.get(spec.stack_name)
            stacks[spec.stack_name] = _digest(spec.config)
            self._write_stacks(stacks)
        (self.root / "drift" / spec.stack_name).unlink(missing_ok=True)  # up converges drift away
        op = "same" if before == stacks[spec.stack_name] else ("update" if before else "create")
        return StackResult(spec.project, spec.stack_name, "up", {op: 1}, (StackChange(urn, "stack", spec.stack_name, op),))

    def refresh(self, spec: StackSpec, on_event: EventCallback | None = None, *, preview_only: bool = False) -> StackResult:
        self._record("preview-refresh" if preview_only else "refresh", spec)
        drifted = (self.root / "drift" / spec.stack_name).exists()
        urn = f"urn:pulumi:{spec.stack_name}::{spec.project}::hybridctl:test:Stack::{spec.stack_name}"
        changes = (StackChange(urn, "stack", spec.stack_name, "update"),) if drifted else ()
        return StackResult(spec.project, spec.stack_name, "preview-refresh" if preview_only else "refresh",
                           {"update": 1} if drifted else {"same": 1}, changes)

    def destroy(self, spec: StackSpec, on_event: EventCallback | None = None) -> StackResult:
        self._record("destroy", spec)
        with self._exclusive():
            stacks = self._stacks()
            existed = stacks.pop(spec.stack_name, None) is not None
            self._write_stacks(stacks)
        return StackResult(spec.project, spec.stack_name, "destroy", {"delete": 1} if existed else {})

    # files

    def calls(self) -> list[dict[str, object]]:
        path = self.root / "calls.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []

    def _record(self, operation: str, spec: StackSpec) -> None:
        hold = os.environ.get("HYBRIDCTL_RECORDING_CLOUD_HOLD", "")
        deadline = time.monotonic() + 600  # a test that never releases fails by its own timeout first
        while hold and not os.path.exists(hold) and time.monotonic() < deadline:
            time.sleep(0.05)
        delay = float(os.environ.get("HYBRIDCTL_RECORDING_CLOUD_DELAY_S", "0") or 0)
        if delay:
            time.sleep(delay)
        line = json.dumps({"operation": operation, "project": spec.project, "stack": spec.stack_name,
                           "config": _digest(spec.config), "pid": os.getpid()}, sort_keys=True)
        with open(self.root / "calls.jsonl", "a") as out:
            fcntl.flock(out, fcntl.LOCK_EX)  # cloud steps of different sites run in parallel threads
            out.write(line + "\n")
            out.flush()
            os.fsync(out.fileno())

    @contextlib.contextmanager
    def _exclusive(self) -> Iterator[None]:
        """stacks.json is read, changed and written by parallel steps: one at a time."""
        with open(self.root / "stacks.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _stacks(self) -> dict[str, str]:
        path = self.root / "stacks.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def _write_stacks(self, stacks: Mapping[str, str]) -> None:
        path = self.root / "stacks.json"
        partial = path.with_name(f".stacks.{os.getpid()}.{time.monotonic_ns()}")
        partial.write_text(json.dumps(dict(stacks), sort_keys=True))
        partial.replace(path)


def recording_dir(state_dir: Path) -> Path:
    override = os.environ.get("HYBRIDCTL_RECORDING_CLOUD_DIR")
    return Path(override) if override else state_dir / "recording-cloud"


def factory(state_dir: Path) -> RecordingCloud:
    return RecordingCloud(recording_dir(state_dir))
