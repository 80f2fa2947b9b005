"""Secrets at rest (issue 10 item 4): a run SIGKILLed mid-step leaves no environment on disk.

Runs with the local connection (no SSH host needed): what is written under the state dir
does not depend on how hosts are reached.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest
from hybridctl.drivers import ansible_cleanup as cleanup
from hybridctl.drivers.ansible import SshOptions, run_playbook
from support.processes import command_line
from support.waiting import wait_for

pytestmark = pytest.mark.slow

PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
SENTINELS = {
    "AWS_SECRET_ACCESS_KEY": "sentinel-aws-secret-9f3a",
    "PULUMI_CONFIG_PASSPHRASE": "sentinel-pulumi-passphrase-51c2",
    "HYBRIDCTL_BUNDLE_KEY_PASSPHRASE": "sentinel-bundle-passphrase-77d0",
}

_RUN = """
import sys
from pathlib import Path
from hybridctl.drivers import ansible_cleanup as cleanup
from hybridctl.drivers.ansible import SshOptions, run_playbook
state = Path(sys.argv[1])
inventory = {"all": {"hosts": {"local1": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}
run_playbook(Path(sys.argv[2]), inventory, ssh=SshOptions(known_hosts=state / "known_hosts"),
             extravars={"sleep_s": 300}, work_dir=state / "ansible")
"""


def files_holding(directory: Path, secrets: list[str]) -> list[str]:
    found = []
    for path in directory.rglob("*"):
        if path.is_file() and not path.is_symlink():
            with contextlib.suppress(OSError):
                data = path.read_bytes()
                found += [f"{path}: {s}" for s in secrets if s.encode() in data]
    return found


def processes_under(directory: Path) -> list[psutil.Process]:
    """The processes of a run whose command line names the directory, and their descendants."""
    found: list[psutil.Process] = []
    for process in psutil.process_iter(["cmdline"]):
        if str(directory) in " ".join(process.info["cmdline"] or []):
            with contextlib.suppress(psutil.NoSuchProcess):
                found += [process, *process.children(recursive=True)]
    return found


def test_a_run_killed_mid_step_leaves_no_secret_under_the_state_dir_and_the_next_run_removes_its_files(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state"
    (state / "ansible").mkdir(parents=True)
    (state / "known_hosts").touch()
    env = {**os.environ, **SENTINELS}
    child = subprocess.Popen([sys.executable, "-c", _RUN, str(state), str(PLAYBOOKS / "slow.yml")], env=env,
                             start_new_session=True)  # fmt: skip
    try:
        # Mid-step: the task's `sleep 300` runs under ansible-playbook.
        wait_for(lambda: any("sleep 300" in command_line(p) for p in processes_under(state)
                             if p.is_running()) or child.poll() is not None, "the step to start", 120)  # fmt: skip
        assert child.poll() is None, "the run ended before it could be killed"
        ansible = [p for p in processes_under(state) if "ansible-playbook" in command_line(p)]
        assert ansible, "no ansible-playbook process found"
        # Neither on disk nor in the environment handed to ansible-playbook.
        assert files_holding(state, list(SENTINELS.values())) == []
        assert not set(SENTINELS) & set(ansible[0].environ())
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
    finally:
        for process in processes_under(state):  # runner's children live in a session of their own
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    assert files_holding(state, list(SENTINELS.values())) == []
    leftovers = [p.name for p in (state / "ansible").iterdir()]
    assert [name for name in leftovers if name.startswith("hybridctl-ansible-")] != []  # what the kill left

    inventory = {"all": {"hosts": {"local1": {"ansible_connection": "local",
                                               "ansible_python_interpreter": sys.executable}}}}  # fmt: skip
    again = run_playbook(PLAYBOOKS / "slow.yml", inventory, ssh=SshOptions(known_hosts=state / "known_hosts"),
                         extravars={"sleep_s": 0}, work_dir=state / "ansible")  # fmt: skip
    assert again.succeeded
    assert list((state / "ansible").iterdir()) == []  # the killed run's private dir went with the next run


def test_a_live_runs_private_dir_is_left_alone_and_a_dead_ones_removed(tmp_path: Path) -> None:
    live, dead, young = (tmp_path / f"{cleanup.PRIVATE_PREFIX}{name}" for name in ("live", "dead", "young"))
    for directory in (live, dead, young):
        directory.mkdir()
    (dead / ".in-use").touch()  # its run held the lock, and died
    with cleanup.held_dir(live):
        # young: no lock file yet (a run creating it right now)
        assert cleanup.remove_stale(tmp_path, cleanup.PRIVATE_PREFIX) == [dead]
        assert live.is_dir() and young.is_dir()
    assert cleanup.remove_stale(tmp_path, cleanup.PRIVATE_PREFIX) == [live]


def test_a_parallel_steps_sweep_between_creating_and_locking_a_runs_dir_leaves_it_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Two steps of one apply run playbooks at once; each run first sweeps dead runs' dirs. A
    # sweep landing between the other run's lock-file create and its flock removed that run's
    # ssh control dir, and its first ssh exited 255: the host read as unreachable.
    mine = tmp_path / f"{cleanup.CONTROL_PREFIX}mine"
    mine.mkdir()
    swept: list[list[Path]] = []
    real_flock = cleanup.fcntl.flock

    def flock_after_a_sweep(descriptor: int, operation: int) -> None:
        if not swept:
            swept.append(cleanup.remove_stale(tmp_path, cleanup.CONTROL_PREFIX))
        real_flock(descriptor, operation)

    monkeypatch.setattr(cleanup.fcntl, "flock", flock_after_a_sweep)
    with cleanup.held_dir(mine):
        assert swept == [[]] and mine.is_dir()
        assert [p.name for p in mine.iterdir()] == [".in-use"]
