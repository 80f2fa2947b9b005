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
  daemonize out of it, and the tasks' processes on the hosts go on; every process of a run,
  here and on the hosts, carries a marker in its environment, and the run ends by killing
  whatever carries it (see ansible_cleanup);
- no task timeout, and the linear strategy: one hung host stalls every host; here every task
  is bounded and hosts run freely;
- runner gives ansible-playbook this process's whole environment, cloud credentials and
  passphrases included, and writes it to ``artifacts/*/command``; here it gets only a few
  harmless variables, and the private data dir is locked while the run lives and removed
  after it (by the next run, when this one was killed).
"""

from __future__ import annotations

import contextlib
import os
import queue
import shlex
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from hybridctl.core.deploy.ansible_inventory import ansible_value
from hybridctl.drivers import ansible_cleanup as cleanup
from hybridctl.drivers.ansible_events import (
    FAILURE_STATES,
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
from hybridctl.drivers.lockholder import HOLDER_ENV, control_dir_prefix
from hybridctl.errors import HybridctlError, PrerequisiteError, UsageError

__all__ = [
    "FAILURE_STATES",
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

DEFAULT_TASK_TIMEOUT_S = 600  # bounded, and long enough for a large model copy over a slow link
TASK_TIMEOUT_ENV = "HYBRIDCTL_TASK_TIMEOUT"
_REAP_TIMEOUT_S = 30
_MAX_FORKS = 50
_POLL_S = 0.1
PREFERRED_CIPHERS = "^aes128-gcm@openssh.com"  # "^": put at the head of ssh's default list


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
            # AES-GCM first (the rest of ssh's default list after it): with AES-NI it took 0.63
            # CPU-seconds for 64 MB on the lab hosts (client and server), chacha20-poly1305,
            # ssh's default, 0.81; model sync is CPU-bound.
            f"-o Ciphers={PREFERRED_CIPHERS}",
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
    task_timeout_s: int | None = None,
    work_dir: Path | None = None,
) -> PlaybookResult:
    """Run one playbook and wait for it; events stream to on_event in the calling thread.

    Every task is bounded by task_timeout_s (default: $HYBRIDCTL_TASK_TIMEOUT, else
    DEFAULT_TASK_TIMEOUT_S); hosts run freely, so a hung host holds up no other, and ends
    timed_out. Setting `cancel` (from another thread) or Ctrl-C ends the run, every process it
    started here and, on the hosts, the work of the tasks under way (those hosts end canceled);
    Ctrl-C then re-raises KeyboardInterrupt.
    """
    if not Path(playbook).is_file():
        raise HybridctlError(
            f"playbook {playbook} does not exist", hint="reinstall hybridctl or check the path"
        )
    run = _Run(inventory, ssh=ssh, limit=limit, forks=forks, work_dir=work_dir,
               task_timeout_s=task_timeout_s if task_timeout_s is not None else default_task_timeout())
    try:
        outcome = run.execute(str(Path(playbook).resolve()), extravars=dict(extravars or {}), check=check,
                              diff=diff, on_event=on_event, cancel=cancel, timeout_s=timeout_s)
    except KeyboardInterrupt:
        run.reap(run.collector.cancel_running())
        raise
    if outcome.status in (RunStatus.CANCELED, RunStatus.TIMEOUT):
        run.reap(run.collector.cancel_running())
    run.reap(tuple(sorted(run.collector.timed_out)))
    hosts = run.collector.results()
    explained = any(h.state in FAILURE_STATES for h in hosts)
    return PlaybookResult(
        playbook=str(playbook),
        status=outcome.status,
        rc=outcome.rc,
        hosts=hosts,
        elapsed_s=time.monotonic() - run.started,
        # An Ansible error before any host ran (syntax, missing file) is only in its output.
        error=None if outcome.status is RunStatus.SUCCESSFUL or explained else _tail(outcome.output),
    )


def default_task_timeout() -> int:
    """$HYBRIDCTL_TASK_TIMEOUT (whole seconds, 1 to 86400), else DEFAULT_TASK_TIMEOUT_S."""
    raw = os.environ.get(TASK_TIMEOUT_ENV, "").strip()
    if not raw:
        return DEFAULT_TASK_TIMEOUT_S
    if not raw.isdigit() or not 1 <= int(raw) <= 86400:
        raise UsageError(f"{TASK_TIMEOUT_ENV}={raw!r} is not a number of seconds from 1 to 86400",
                         hint=f"e.g. {TASK_TIMEOUT_ENV}=900, or unset it for {DEFAULT_TASK_TIMEOUT_S} s")
    return int(raw)


@dataclass(frozen=True)
class _Outcome:
    status: RunStatus
    rc: int
    output: str


class _Run:
    """One ansible-playbook run, and the reaping run that may follow it against the same hosts."""

    def __init__(self, inventory: InventorySource, *, ssh: SshOptions, limit: str | None, forks: int | None,
                 work_dir: Path | None, task_timeout_s: int) -> None:
        self.inventory, self.ssh, self.limit, self.work_dir = inventory, ssh, limit, work_dir
        self.forks = forks or _default_forks(inventory)
        self.task_timeout_s = task_timeout_s
        self.marker = uuid.uuid4().hex
        self.collector = Collector()
        self.started = time.monotonic()

    def execute(self, playbook: str | list[dict[str, object]], *, extravars: dict[str, object], check: bool,
                diff: bool, on_event: EventCallback | None, cancel: threading.Event | None,
                timeout_s: int | None, ssh: SshOptions | None = None, limit: str | None = None,
                task_timeout_s: int | None = None) -> _Outcome:
        import ansible_runner  # heavy: only when a playbook actually runs

        ssh = ssh or self.ssh
        parent = self.work_dir if self.work_dir is not None else Path(tempfile.gettempdir())
        cleanup.remove_stale(parent, cleanup.PRIVATE_PREFIX)  # what a SIGKILLed run left behind
        cleanup.remove_stale(Path(tempfile.gettempdir()), cleanup.CONTROL_PREFIX)
        binary = _ansible_playbook()
        private_dir = Path(tempfile.mkdtemp(prefix=cleanup.PRIVATE_PREFIX, dir=self.work_dir))
        # Unix socket paths are capped near 108 bytes, so control sockets get a short dir of their own,
        # named after the state lock's token so that the next run can clean up after a killed one.
        control_dir = Path(tempfile.mkdtemp(prefix=control_dir_prefix()))
        marker = self.marker if isinstance(playbook, str) else uuid.uuid4().hex
        stop = threading.Event()
        events: queue.Queue[dict[str, object]] = queue.Queue()
        collector = self.collector if isinstance(playbook, str) else Collector()

        def enqueue(event: dict[str, object]) -> bool:
            events.put(event)
            return False  # keep events out of the artifacts directory

        cmdline = [*(["--check"] if check else []), *(["--diff"] if diff else [])]
        try:
            with cleanup.held_dir(private_dir), cleanup.held_dir(control_dir):
                # Extravars go in a file runner passes as `-e @file`: given to runner as a dict, they
                # would also land on the command line, readable by anyone through `ps`.
                # Every string is tagged !unsafe (see ansible_value): a value from an inventory, a plan
                # or a bundle manifest is data, never a template Ansible would evaluate.
                variables = {**extravars, cleanup.RUN_ENV_VAR: {cleanup.RUN_MARKER: marker}}
                _write_private(private_dir / "env" / "extravars", ansible_value(variables))
                envvars = _environment(binary.parent, ssh, private_dir, control_dir, marker,
                                       task_timeout_s or self.task_timeout_s)
                runner = ansible_runner.interface.init_runner(
                    private_data_dir=str(private_dir),
                    playbook=playbook,
                    inventory=(str(Path(self.inventory).resolve()) if isinstance(self.inventory, Path)
                               else dict(self.inventory)),
                    envvars=envvars,
                    limit=limit or self.limit,
                    forks=self.forks,
                    cmdline=" ".join(cmdline) or None,
                    ident="run",
                    quiet=True,
                    timeout=timeout_s,
                    settings={"pexpect_timeout": _POLL_S},
                    suppress_env_files=True,
                    fact_cache_type="memory",
                    event_handler=enqueue,
                    cancel_callback=stop.is_set,
                )
                # Runner hands ansible-playbook (and writes to artifacts/run/command) the whole
                # environment of this process, cloud credentials and passphrases included.
                runner.config.env = _process_environment(runner.config.env, envvars)
                self._wait(runner, events, collector, stop, on_event, cancel)
                output = (private_dir / "artifacts" / "run" / "stdout").read_text(errors="replace")
        finally:
            cleanup.kill_local(marker, control_dir)
            shutil.rmtree(private_dir, ignore_errors=True)
            shutil.rmtree(control_dir, ignore_errors=True)
        return _Outcome(RunStatus(runner.status), int(runner.rc if runner.rc is not None else -1), output)

    def _wait(self, runner: Any, events: queue.Queue[dict[str, object]], collector: Collector,
              stop: threading.Event, on_event: EventCallback | None, cancel: threading.Event | None) -> None:
        failure: dict[str, BaseException] = {}

        def work() -> None:
            try:
                runner.run()
            except BaseException as exc:  # surfaced in the calling thread
                failure["error"] = exc

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
        if "error" in failure:
            raise HybridctlError(f"ansible-runner failed to run: {failure['error']}")

    def reap(self, hosts: tuple[str, ...]) -> None:
        """End, on these hosts, every process of the run (a cancel or a task timeout left them running)."""
        if not hosts:
            return
        with contextlib.suppress(HybridctlError):  # best effort: the host may be down for good
            self.execute(cleanup.reap_play(self.marker), extravars={}, check=False, diff=False, on_event=None,
                         cancel=None, timeout_s=_REAP_TIMEOUT_S * 2, ssh=replace(self.ssh, control_persist_s=0),
                         limit=",".join(hosts), task_timeout_s=_REAP_TIMEOUT_S)


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
    bindir: Path, ssh: SshOptions, private_dir: Path, control_dir: Path, marker: str, task_timeout_s: int
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
        "ANSIBLE_TASK_TIMEOUT": str(task_timeout_s),
        # Each host goes through the play at its own pace: one hung host holds up no other.
        "ANSIBLE_STRATEGY": "free",
        cleanup.RUN_MARKER: marker,
    }
    # The state lock's token, which every process of a run carries (drivers/lockholder.py): a run SIGKILLed
    # mid-playbook leaves ansible-playbook and its workers running, and the next holder's recovery finds them by
    # it. Cut from the environment below with the rest of this process's, it left them unfound (1 kill in 4).
    token = os.environ.get(HOLDER_ENV)
    if token:
        env[HOLDER_ENV] = token
    if ssh.private_key is not None:
        env["ANSIBLE_PRIVATE_KEY_FILE"] = str(ssh.private_key)
    return env


# What ansible-playbook keeps of this process's environment: nothing that could hold a secret.
_KEPT_ENVIRONMENT = frozenset({"PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "TERM",
                               "SSH_AUTH_SOCK"})


def _process_environment(prepared: Mapping[str, str], ours: Mapping[str, str]) -> dict[str, str]:
    """Runner's prepared environment without what it copied from ours, but for the harmless keys."""
    return {
        key: value for key, value in prepared.items()
        if key in ours or key in _KEPT_ENVIRONMENT or key.startswith("LC_") or os.environ.get(key) != value
    }


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
