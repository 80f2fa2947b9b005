"""Run Ansible playbooks through ansible-runner; return what happened on each host as values.

A playbook hands data back per host by setting the fact ``hybridctl_result`` (a mapping;
later ``set_fact`` calls merge into it), e.g.::

    - ansible.builtin.set_fact:
        hybridctl_result: {gpus: "{{ gpu_rows | length }}"}

Defaults that ansible-runner gets wrong for us, and why they are overridden here:
- runner turns host-key checking off; we turn it on, against a known_hosts file we are given;
- without ConnectTimeout and ssh keepalives a host whose link drops mid-run hangs the run for
  ever; with them it is reported unreachable within seconds;
- runner's cancel kills ansible-playbook's process group, but ssh ControlPersist masters
  daemonize out of it; every process of a run carries a marker in its environment (masters:
  their control socket path in their title), and the run ends by killing whatever carries it;
- the private data dir (inventory, extravars, and an ``artifacts/*/command`` file holding the
  whole process environment) is a fresh directory removed after the run.
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from hybridctl.core.ansible_inventory import ansible_value
from hybridctl.drivers.ansible_events import (
    RESULT_FACT,
    AnsibleEvent,
    Collector,
    EventCallback,
    EventKind,
    HostResult,
    HostState,
    PlaybookResult,
    RunStatus,
    dispatch,
)
from hybridctl.errors import HybridctlError, PrerequisiteError

__all__ = [
    "RESULT_FACT",
    "AnsibleEvent",
    "EventCallback",
    "EventKind",
    "HostResult",
    "HostState",
    "PlaybookResult",
    "RunStatus",
    "SshOptions",
    "run_playbook",
]

_RUN_MARKER = "HYBRIDCTL_ANSIBLE_RUN"
_MAX_FORKS = 50
_POLL_S = 0.1


@dataclass(frozen=True)
class SshOptions:
    """How to reach hosts. Host keys are always verified against known_hosts."""

    known_hosts: Path
    private_key: Path | None = None
    connect_timeout_s: int = 10
    keepalive_interval_s: int = 1  # a dead link is noticed after interval x count_max seconds
    keepalive_count_max: int = 3
    control_persist_s: int = 15  # 0: one ssh connection per task, nothing left to kill

    def ssh_args(self, control_dir: Path) -> str:
        args = [
            f"-o UserKnownHostsFile={shlex.quote(str(self.known_hosts))}",
            "-o GlobalKnownHostsFile=/dev/null",
            "-o StrictHostKeyChecking=yes",
            "-o BatchMode=yes",
            f"-o ConnectTimeout={self.connect_timeout_s}",
            f"-o ServerAliveInterval={self.keepalive_interval_s}",
            f"-o ServerAliveCountMax={self.keepalive_count_max}",
        ]
        if self.control_persist_s > 0:
            args += [
                "-o ControlMaster=auto",
                f"-o ControlPersist={self.control_persist_s}s",
                f"-o ControlPath={control_dir}/%C",
            ]
        else:
            args.append("-o ControlMaster=no")
        return " ".join(args)


InventorySource = Path | Mapping[str, object]


def run_playbook(
    playbook: Path,
    inventory: InventorySource,
    *,
    ssh: SshOptions,
    extravars: Mapping[str, object] | None = None,
    limit: str | None = None,
    check: bool = False,
    diff: bool = False,
    forks: int | None = None,
    on_event: EventCallback | None = None,
    cancel: threading.Event | None = None,
    timeout_s: int | None = None,
    work_dir: Path | None = None,
) -> PlaybookResult:
    """Run one playbook and wait for it; events stream to on_event in the calling thread.

    Setting `cancel` (from another thread) or Ctrl-C ends the run and every process it
    started; Ctrl-C then re-raises KeyboardInterrupt.
    """
    import ansible_runner  # heavy: only when a playbook actually runs

    if not Path(playbook).is_file():
        raise HybridctlError(
            f"playbook {playbook} does not exist", hint="reinstall hybridctl or check the path"
        )
    binary = _ansible_playbook()
    private_dir = Path(tempfile.mkdtemp(prefix="hybridctl-ansible-", dir=work_dir))
    # Unix socket paths are capped near 108 bytes, so control sockets get a short dir of their own.
    control_dir = Path(tempfile.mkdtemp(prefix="hctl-cp-"))
    marker = uuid.uuid4().hex
    stop = threading.Event()
    events: queue.Queue[dict[str, object]] = queue.Queue()
    collector = Collector()
    started = time.monotonic()

    def enqueue(event: dict[str, object]) -> bool:
        events.put(event)
        return False  # keep events out of the artifacts directory

    cmdline = [*(["--check"] if check else []), *(["--diff"] if diff else [])]
    try:
        # Extravars go in a file runner passes as `-e @file`: given to runner as a dict, they
        # would also land on the command line, readable by anyone through `ps`.
        # Every string is tagged !unsafe (see ansible_value): a value from an inventory, a plan or
        # a bundle manifest is data, never a template Ansible would evaluate.
        _write_private(private_dir / "env" / "extravars", ansible_value(dict(extravars or {})))
        runner = ansible_runner.interface.init_runner(
            private_data_dir=str(private_dir),
            playbook=str(Path(playbook).resolve()),
            inventory=str(Path(inventory).resolve()) if isinstance(inventory, Path) else dict(inventory),
            envvars=_environment(binary.parent, ssh, private_dir, control_dir, marker),
            limit=limit,
            forks=forks or _default_forks(inventory),
            cmdline=" ".join(cmdline) or None,
            ident="run",
            quiet=True,
            timeout=timeout_s,
            settings={"pexpect_timeout": _POLL_S},
            event_handler=enqueue,
            cancel_callback=stop.is_set,
        )
        outcome: dict[str, BaseException] = {}

        def work() -> None:
            try:
                runner.run()
            except BaseException as exc:  # surfaced in the calling thread
                outcome["error"] = exc

        thread = threading.Thread(target=work, name="ansible-runner", daemon=True)
        thread.start()
        try:
            while thread.is_alive() or not events.empty():
                if cancel is not None and cancel.is_set():
                    stop.set()
                with contextlib.suppress(queue.Empty):
                    dispatch(events.get(timeout=_POLL_S), collector, on_event)
        except KeyboardInterrupt:
            stop.set()
            thread.join()
            raise
        if "error" in outcome:
            raise HybridctlError(f"ansible-runner failed to run {playbook}: {outcome['error']}")
        output = (private_dir / "artifacts" / "run" / "stdout").read_text(errors="replace")
    finally:
        _kill_leftovers(marker, control_dir)
        shutil.rmtree(private_dir, ignore_errors=True)
        shutil.rmtree(control_dir, ignore_errors=True)
    status = RunStatus(runner.status)
    hosts = collector.results()
    explained = any(h.state in (HostState.FAILED, HostState.UNREACHABLE) for h in hosts)
    return PlaybookResult(
        playbook=str(playbook),
        status=status,
        rc=int(runner.rc if runner.rc is not None else -1),
        hosts=hosts,
        elapsed_s=time.monotonic() - started,
        # An Ansible error before any host ran (syntax, missing file) is only in its output.
        error=None if status is RunStatus.SUCCESSFUL or explained else _tail(output),
    )


def _tail(output: str, lines: int = 30) -> str | None:
    kept = [line for line in output.splitlines() if line.strip()][-lines:]
    return "\n".join(kept) or None


def _write_private(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as out:
        out.write(text)


def _ansible_playbook() -> Path:
    """ansible-playbook from the interpreter's own environment first (a venv need not be on PATH)."""
    beside = Path(sys.executable).parent / "ansible-playbook"
    if beside.is_file():
        return beside
    found = shutil.which("ansible-playbook")
    if found is None:
        raise PrerequisiteError(
            "ansible-playbook is not installed", hint="install hybridctl with its dependencies (ansible-core)"
        )
    return Path(found)


def _environment(
    bindir: Path, ssh: SshOptions, private_dir: Path, control_dir: Path, marker: str
) -> dict[str, str]:
    env = {
        "PATH": os.pathsep.join([str(bindir), os.environ.get("PATH", os.defpath)]),
        "ANSIBLE_HOST_KEY_CHECKING": "True",
        "ANSIBLE_SSH_ARGS": ssh.ssh_args(control_dir),
        "ANSIBLE_SSH_CONTROL_PATH_DIR": str(control_dir),
        "ANSIBLE_TIMEOUT": str(ssh.connect_timeout_s),
        "ANSIBLE_SSH_RETRIES": "0",
        "ANSIBLE_PIPELINING": "True",
        "ANSIBLE_LOCAL_TEMP": str(private_dir / "tmp"),
        "ANSIBLE_INTERPRETER_PYTHON": "auto_silent",
        "ANSIBLE_DEPRECATION_WARNINGS": "False",
        "ANSIBLE_NOCOLOR": "True",
        _RUN_MARKER: marker,
    }
    if ssh.private_key is not None:
        env["ANSIBLE_PRIVATE_KEY_FILE"] = str(ssh.private_key)
    return env


def _default_forks(inventory: InventorySource) -> int:
    """One fork per host, so a slow host never queues the others; capped for the controller's sake."""
    if isinstance(inventory, Path):
        try:
            from ruamel.yaml import YAML
            from ruamel.yaml.constructor import SafeConstructor

            yaml = YAML(typ="safe", pure=True)
            yaml.constructor.add_constructor("!unsafe", SafeConstructor.construct_yaml_str)
            loaded = yaml.load(inventory.read_text())
        except Exception:  # an INI or script inventory: we cannot count it cheaply
            return 20
        inventory = loaded if isinstance(loaded, Mapping) else {}
    return max(1, min(_MAX_FORKS, len(_host_names(inventory))))


def _host_names(group: Mapping[str, object]) -> set[str]:
    names: set[str] = set()
    for key, value in group.items():
        if key == "hosts" and isinstance(value, Mapping):
            names.update(str(name) for name in value)
        elif key == "children" and isinstance(value, Mapping):
            for child in value.values():
                if isinstance(child, Mapping):
                    names |= _host_names(child)
        elif key not in ("vars", "hosts", "children") and isinstance(value, Mapping):
            names |= _host_names(value)  # a top-level group such as `all`
    return names


def _kill_leftovers(marker: str, control_dir: Path) -> None:
    """SIGKILL every process of this run still alive.

    Found by the marker in its environment, or, for ssh ControlPersist masters (whose
    process title overwrites the environment), by their control socket path.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return  # no procfs (macOS): runner's process-group kill is all we have
    in_environ = f"{_RUN_MARKER}={marker}".encode()
    in_cmdline = str(control_dir).encode()
    for _ in range(3):  # a dying worker may still fork an ssh
        found = False
        for entry in proc.iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                mine = in_cmdline in (entry / "cmdline").read_bytes()
                mine = mine or in_environ in (entry / "environ").read_bytes().split(b"\0")
                if mine:
                    os.kill(int(entry.name), signal.SIGKILL)
                    found = True
            except OSError:
                continue
        if not found:
            return
        time.sleep(0.05)
