# Runs ON THE HOST (imported by library/hybridctl_model_host.py): one module run for a whole
# model sync. Each module run costs the host about 0.4 CPU-seconds (Ansible's module_utils are
# compiled from the module's zip every time) and the controller a payload and a round trip, as
# much as copying a 64 MB bundle; probe and install were two. Now the probe holds:
#   - the module forks after a successful probe; the parent reports the probe and exits, the
#     child (same run marker in its environment, so a cancel or a task timeout ends it) waits;
#   - the controller sends the files, then writes go (install) or stop (abort, its JSON
#     arguments) as root into the child's private dir, and waits for the child's result there.
#     That dir is a fresh 0700 dir in the host's temporary dir, not on the models filesystem,
#     which may be the one that is full; where none can be made, the probe does not hold;
# A child that hears nothing for hold_s seconds aborts (releases the lock, keeps the upload).
# A child killed meanwhile (a cancel, a task timeout) leaves its dir: the next hold removes the
# dirs whose recorded holder no longer runs and that hold no result still to be read.
from __future__ import annotations

import json
import os
import stat
import tempfile
import time

from ansible.module_utils.hybridctl_models import remove, write_atomic

_POLL_S = 0.05


HOLD_PREFIX = "hybridctl-hold-"
_HOLDER = "holder"  # the child's pid, written by the parent
# A dir without a holder is being made now; a result is read by the controller at once: either,
# an hour old, is left over.
_UNRECORDED_GRACE_S = 3600.0


def hold(host, probe_result, hold_s, run_phase):
    """In the parent: returns at once (probe_result says held, the child's pid and dir). The
    child never returns: it runs install or abort through run_phase(phase, result) -> failure."""
    _sweep(tempfile.gettempdir())
    try:
        directory = tempfile.mkdtemp(prefix=HOLD_PREFIX)
    except OSError:
        return  # the controller installs with a module run of its own
    paths = {name: os.path.join(directory, name) for name in ("go", "stop", "result")}
    child = os.fork()
    if child:
        write_atomic(os.path.join(directory, _HOLDER), str(child).encode(), 0o600)
        probe_result.update(held=True, holder_pid=child, hold_dir=directory)
        return
    try:
        os.setsid()
        # Detached from the ssh channel: the parent's exit ends the module run for Ansible.
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        result = {"changed": False, "status": "unchanged"}
        try:
            phase, told = _wait(host, paths, hold_s, probe_result)
            failure = run_phase(phase, result)
            if failure is not None:
                result.update(failed=True, msg=failure)
                if phase == "install":
                    _abort_after(host, result, run_phase)
        except Exception as exc:  # reported to the controller rather than lost with the child
            result.update(failed=True, status="failed", msg=f"{type(exc).__name__}: {exc}")
        if told:
            write_atomic(paths["result"], json.dumps(result).encode(), 0o600)
        else:
            remove(directory)  # nobody is left to read a result
    finally:
        os._exit(0)


def _sweep(parent):
    """Removes the hold dirs of children that were killed: their holder no longer runs."""
    try:
        names = [n for n in os.listdir(parent) if n.startswith(HOLD_PREFIX)]
    except OSError:
        return
    for name in names:
        path = os.path.join(parent, name)
        try:
            info = os.lstat(path)
            # never a link, nor another user's dir, in a directory everyone may write to
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
                continue
            try:
                with open(os.path.join(path, _HOLDER), "rb") as stream:
                    pid = int(stream.read())
            except (OSError, ValueError):
                if time.time() - info.st_mtime < _UNRECORDED_GRACE_S:
                    continue
            else:
                if _alive(pid) or _unread_result(path):
                    continue
            remove(path)
        except OSError:
            continue


def _unread_result(path):
    """A child ends once it has written its result, which the controller reads just after: until
    then its dir is still in use, though its holder no longer runs."""
    try:
        written = os.lstat(os.path.join(path, "result")).st_mtime
    except OSError:
        return False
    return time.time() - written < _UNRECORDED_GRACE_S


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _abort_after(host, result, run_phase):
    """Releases the lock after a failed install; writing the inlined files can fill the filesystem
    too, and then the upload is of no use."""
    full = result.get("status") == "no_space"
    host.p["remove_upload"] = full
    host.p["needed_bytes"] = sum(host.p["files"].get(r, 0) for r in host.p["inline_files"]) if full else 0
    aborted = {}
    if run_phase("abort", aborted) is None and aborted.get("disk"):
        result["disk"] = aborted["disk"]


def _wait(host, paths, hold_s, probe_result):
    deadline = time.monotonic() + hold_s
    while time.monotonic() < deadline:
        if os.path.isfile(paths["go"]):
            remove(paths["go"])
            host.p["version_ok"] = bool(probe_result.get("version_ok"))
            return "install", True
        if os.path.isfile(paths["stop"]):
            with open(paths["stop"], "rb") as stream:
                arguments = json.loads(stream.read() or b"{}")
            remove(paths["stop"])
            host.p["remove_upload"] = bool(arguments.get("remove_upload"))
            host.p["needed_bytes"] = int(arguments.get("needed_bytes") or 0)
            return "abort", True
        time.sleep(_POLL_S)
    return "abort", False  # the controller is gone: release the lock, keep the upload for the next run
