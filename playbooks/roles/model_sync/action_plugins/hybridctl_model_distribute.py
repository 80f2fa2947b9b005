# Runs ON THE CONTROLLER: distributes one bundle to one host in a single task:
#   1. checks the bundle directory without following any symlink: only regular files, exactly
#      those the manifest lists (plus manifest.json and manifest.sig), with the listed sizes.
#      Nothing is sent from a directory that fails this;
#   2. probe (hybridctl_model_host on the host): trust, lock, downgrade, installed copy, free
#      space; it answers which files are still missing in the upload dir (resumed uploads);
#   3. sends each missing file straight into the upload dir on the models filesystem, from a
#      descriptor opened with O_NOFOLLOW and checked with fstat (/proc/<pid>/fd/<n>), so what
#      was checked is what is sent even if the directory changes meanwhile;
#   4. install: the host verifies what it received (signature, list, sizes, sha256), renames it
#      into versions/<version>, switches `current`, prunes and releases the lock.
# A failure releases the lock (abort) and reports `status`: refused, busy, no_space or failed.
from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import uuid

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

MODULE = "hybridctl_model_host"
METADATA = ("manifest.json", "manifest.sig")


class Refusal(Exception):
    pass


def _open_regular(path):
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refusal("not a regular file (symlinks are not allowed in a bundle)") from None
        raise Refusal(exc.strerror) from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Refusal("not a regular file")
    return fd


def check_bundle_dir(source):
    """{relative path: size} of what may be sent, or Refusal naming every problem."""
    if not stat.S_ISDIR(os.lstat(source).st_mode):
        raise Refusal(f"{source} is not a directory (a symlink to one is not accepted)")
    fd = _open_regular(os.path.join(source, "manifest.json"))
    with os.fdopen(fd, "rb") as stream:
        manifest = json.loads(stream.read().decode("utf-8"))
    listed = {f["path"]: f["size_bytes"] for f in manifest.get("files", [])}
    problems, present = [], {}
    for parent, dirs, names in os.walk(source, followlinks=False):
        for name in sorted(dirs + names):
            path = os.path.join(parent, name)
            relative = os.path.relpath(path, source)
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                problems.append(f"{relative}: not a regular file (symlinks are not allowed in a bundle)")
            elif relative not in listed and relative not in METADATA:
                problems.append(f"{relative}: present but not listed in the manifest")
            else:
                present[relative] = os.lstat(path).st_size
    for relative, size in sorted(listed.items()):
        if relative not in present and not any(p.startswith(relative + ":") for p in problems):
            problems.append(f"{relative}: listed in the manifest but missing")
        elif relative in present and present[relative] != size:
            problems.append(f"{relative}: size is {present[relative]}, the manifest says {size}")
    if problems:
        raise Refusal(f"bundle in {source} does not match its signed manifest: {'; '.join(sorted(problems))}")
    return present


class ActionModule(ActionBase):
    # Files go straight to the upload dir, never to a remote temporary dir: not asking Ansible
    # for one saves a round trip per host (modules are piped when pipelining is on).
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        source = args.pop("src", None)
        host = args.get("host")
        try:
            files = check_bundle_dir(source)
        except (Refusal, OSError, ValueError, KeyError, TypeError) as exc:
            result.update(failed=True, status="refused", msg=f"{exc}")
            return result
        token = uuid.uuid4().hex
        common = dict(args, token=token, files=files)
        if self._play_context.become and self._play_context.remote_user not in (None, "root"):
            common["upload_owner"] = self._play_context.remote_user
        probe = self._execute_module(MODULE, module_args=dict(common, phase="probe"), task_vars=task_vars)
        result["probe"] = {k: probe.get(k) for k in ("current_before", "previous_version", "version_ok", "repaired",
                                                     "key_pinned", "disk", "installed_check")}
        if probe.get("failed"):
            result.update(probe)
            self._abort(common, task_vars, remove_upload=False)
            return result
        if not probe.get("version_ok") and not self._task.check_mode:
            failure = self._send(source, files, probe, host)
            if failure is not None:
                result.update(failed=True, **failure)
                # A cut link keeps the upload for the next run to resume; anything else removes it.
                aborted = self._abort(common, task_vars, remove_upload=failure["status"] != "failed",
                                      needed_bytes=failure.get("needed_bytes", 0))
                if failure["status"] == "failed" and aborted.get("no_space"):
                    result.update(status="no_space", msg=f"no space left on {host}: {failure['msg']}")
                if aborted.get("disk"):
                    result["disk"] = aborted["disk"]
                result.pop("needed_bytes", None)
                return result
            result["sent"] = len(probe.get("send", []))
        install = self._execute_module(
            MODULE, task_vars=task_vars,
            module_args=dict(common, phase="install", version_ok=bool(probe.get("version_ok"))))
        if install.get("failed"):
            self._abort(common, task_vars, remove_upload=False)
        result.update(install)
        result["changed"] = bool(install.get("changed") or probe.get("changed"))
        return result

    def _send(self, source, files, probe, host):
        """Sends the files the host is missing; a failure as {status, msg}, else None."""
        for relative in probe.get("send", []):
            try:
                fd = _open_regular(os.path.join(source, relative))
            except Refusal as exc:
                return {"status": "refused", "msg": f"{relative}: {exc}"}
            try:
                if os.fstat(fd).st_size != files[relative]:
                    return {"status": "refused",
                            "msg": f"{relative} changed on the controller while the bundle was being sent"}
                remote = self._connection._shell.join_path(probe["upload_dir"], relative)
                self._transfer_file(f"/proc/{os.getpid()}/fd/{fd}", remote)
            except AnsibleError as exc:
                if "No space left on device" in str(exc) or "Disk quota exceeded" in str(exc):
                    return {"status": "no_space", "msg": f"no space left on {host} while copying {relative}",
                            "needed_bytes": files[relative]}
                return {"status": "failed", "msg": f"copying {relative} to {host} failed: {exc}",
                        "needed_bytes": files[relative]}
            finally:
                os.close(fd)
        return None

    def _abort(self, common, task_vars, *, remove_upload, needed_bytes=0):
        """Releases the host's lock; returns the module's answer ({} when the host is gone)."""
        if self._task.check_mode:
            return {}
        # When the host is gone, its lock goes stale and is taken over by the next run.
        with contextlib.suppress(AnsibleError):
            return self._execute_module(MODULE, task_vars=task_vars, module_args=dict(
                common, phase="abort", remove_upload=remove_upload, needed_bytes=needed_bytes))
        return {}
