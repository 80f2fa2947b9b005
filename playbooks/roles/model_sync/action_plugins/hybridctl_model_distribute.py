# Runs ON THE CONTROLLER: a host's whole model-sync in a single task (each task costs the
# controller a worker and templating per host, which at 100 hosts was most of the run):
#   1. checks the bundle directory without following any symlink: only regular files, exactly
#      those the manifest lists (plus manifest.json and manifest.sig), with the listed sizes; the
#      model and version names, and what the caller expects (model, version, manifest sha256).
#      Nothing is sent from a directory that fails this;
#   2. probe (hybridctl_model_host on the host): trust, lock, downgrade, installed copy, free
#      space; it answers which files are still missing in the upload dir (resumed uploads);
#   3. sends each missing file straight into the upload dir on the models filesystem, from a
#      descriptor opened with O_NOFOLLOW and checked with fstat (/proc/<pid>/fd/<n>), so what
#      was checked is what is sent even if the directory changes meanwhile. Small files (the
#      manifest, its signature, configs) travel inside the install's arguments instead: each
#      file transfer is an sftp session, which cost as much CPU as the whole module run;
#   4. install: the host writes the inlined files, verifies what it received (signature, list,
#      sizes, sha256), renames it into versions/<version>, switches `current`, prunes and
#      releases the lock.
# A failure releases the lock (abort) and reports `status`: refused, busy, no_space or failed.
# Either way the host's result is returned as the fact hybridctl_result.
from __future__ import annotations

import base64
import contextlib
import errno
import hashlib
import json
import os
import re
import shlex
import stat
import uuid

from ansible.errors import AnsibleError
from ansible.plugins.action import ActionBase

MODULE = "hybridctl_model_host"
METADATA = ("manifest.json", "manifest.sig")
# Files up to this size go inside the install's module arguments, up to this much in all.
INLINE_FILE_MAX_BYTES = 256 * 1024
INLINE_TOTAL_MAX_BYTES = 1024 * 1024
HOLD_DIR = re.compile(r"^/[A-Za-z0-9_./-]*/hybridctl-hold-[A-Za-z0-9_]+$")  # tempfile.mkdtemp's on the host


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


def _read_all(fd, size):
    """The file's bytes, up to one more than `size` (so that a grown file shows)."""
    chunks, left = [], size + 1
    while left > 0:
        chunk = os.read(fd, left)
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_manifest(source):
    """(bytes, parsed) of the bundle's manifest.json, read without following symlinks; or Refusal."""
    manifest_path = os.path.join(source, "manifest.json") if isinstance(source, str) else ""
    if not isinstance(source, str) or not source.startswith("/") or os.path.islink(source) \
            or not os.path.isdir(source) or os.path.islink(manifest_path) or not os.path.isfile(manifest_path):
        raise Refusal("hybridctl_bundle_dir must be the absolute path of a bundle directory on the controller that "
                      f"holds manifest.json (neither of them a symlink); got {source or 'nothing'}")
    fd = _open_regular(manifest_path)
    with os.fdopen(fd, "rb") as stream:
        manifest_bytes = stream.read()
    try:
        manifest = json.loads(manifest_bytes.decode("utf-8"))
    except ValueError as exc:
        raise Refusal(f"{manifest_path} is not JSON: {exc}") from None
    if not isinstance(manifest, dict):
        raise Refusal(f"{manifest_path} is not a bundle manifest")
    return manifest_bytes, manifest


def check_bundle_dir(source, manifest):
    """{relative path: size} of what may be sent, or Refusal naming every problem."""
    if not stat.S_ISDIR(os.lstat(source).st_mode):
        raise Refusal(f"{source} is not a directory (a symlink to one is not accepted)")
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


def check_names(source, manifest, digest, args):
    """Refusal unless the bundle names a valid model and version, and the one the caller expects."""
    pattern = re.compile(args["name_pattern"])
    model, version = manifest.get("model"), manifest.get("version")
    expected = {"model": args.get("expected_model"), "version": args.get("expected_version"),
                "sha256": args.get("expected_manifest_sha256")}
    if not (isinstance(model, str) and pattern.match(model) and isinstance(version, str) and pattern.match(version)
            and expected["model"] in (None, model) and expected["version"] in (None, version)
            and expected["sha256"] in (None, digest)):
        raise Refusal(f"the bundle in {source} is {model or '?'} {version or '?'}; expected "
                      f"{expected['model'] or 'any model'} {expected['version'] or 'any version'} "
                      f"(manifest sha256 {expected['sha256'] or 'any'}, found {digest}), "
                      "with names made of letters, digits and . _ + -")


class ActionModule(ActionBase):
    # Files go straight to the upload dir, never to a remote temporary dir: not asking Ansible
    # for one saves a round trip per host (modules are piped when pipelining is on).
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        host = args["host"]
        outcome = {"model": None, "version": None, "current": None}
        try:
            self._distribute(args, task_vars, result, outcome)
        except Refusal as refusal:
            result.update(failed=True, status="refused", msg=str(refusal))
        report = {"playbook": "model-sync", "model": outcome["model"], "version": outcome["version"]}
        if result.get("failed"):
            status = result.get("status") if result.get("status") in ("refused", "busy", "no_space") else "failed"
            reason = result.get("msg") or "verification failed"
            current = (result.get("probe") or {}).get("current_before") or None
            report.update(status=status, reason=reason, current=current, disk=result.get("disk"))
            result["msg"] = (f"{status.replace('_', ' ')} {outcome['model'] or '?'} {outcome['version'] or '?'} on "
                             f"{host}: {reason}. The host stays on {current or 'the version it had, if any'}.")
        else:
            probe = result["probe"]
            report.update(status=result.get("status"), current=outcome["version"], previous=result.get("previous"),
                          repaired=probe.get("repaired"), key_pinned=probe.get("key_pinned"), disk=probe.get("disk"),
                          sent_files=result.get("sent", 0), installed_check=probe.get("installed_check"),
                          pruned=result.get("pruned"), path=outcome["path"])
        result["ansible_facts"] = {"hybridctl_result": report}
        return result

    def _distribute(self, args, task_vars, result, outcome):
        source = args.pop("src", None)
        root, models_dir = args.pop("root"), args.pop("models_dir")
        if not isinstance(root, str) or not root.startswith("/"):
            raise Refusal(f"hybridctl_common_root must be an absolute path, got {root}")
        manifest_bytes, manifest = read_manifest(source)
        digest = hashlib.sha256(manifest_bytes).hexdigest()
        check_names(source, manifest, digest, args)
        for key in ("name_pattern", "expected_model", "expected_version", "expected_manifest_sha256"):
            args.pop(key, None)
        model, version = manifest["model"], manifest["version"]
        model_dir = os.path.join(models_dir, model)
        outcome.update(model=model, version=version, path=os.path.join(model_dir, "versions", version))
        try:
            files = check_bundle_dir(source, manifest)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise Refusal(f"{exc}") from None
        token = uuid.uuid4().hex
        common = dict(args, model=model, version=version, model_dir=model_dir, manifest_sha256=digest, token=token,
                      files=files)
        if self._play_context.become and self._play_context.remote_user not in (None, "root"):
            common["upload_owner"] = self._play_context.remote_user
        check = self._task.check_mode
        failure, inline = (None, {}) if check else self._read_small(source, files)
        if failure is not None:
            result.update(failed=True, **failure)
            return
        # The probe's module run stays on the host for the install (hybridctl_model_hold.py).
        probe = self._execute_module(MODULE, task_vars=task_vars, module_args=dict(
            common, phase="probe", inline_files=inline, hold_s=0 if check else max(60, int(self._task.timeout or 0))))
        probe.pop("invocation", None)  # its arguments: up to a megabyte of inlined files, masked
        result["probe"] = {k: probe.get(k) for k in ("current_before", "previous_version", "version_ok", "repaired",
                                                     "key_pinned", "disk", "installed_check")}
        if probe.get("failed"):
            result.update(probe)
            self._abort(common, task_vars, remove_upload=False)
            return
        held = probe.get("held")  # not in check mode, nor where the host has no temporary dir to hold in
        if not probe.get("version_ok") and not check:
            failure = self._send(source, files, probe["upload_dir"],
                                 [r for r in probe.get("send", []) if r not in inline], args["host"])
            if failure is not None:
                result.update(failed=True, **failure)
                # A cut link keeps the upload for the next run to resume; anything else removes it.
                stop = {"remove_upload": failure["status"] != "failed", "needed_bytes": failure.get("needed_bytes", 0)}
                aborted = (self._release(probe, "stop", stop) if held
                           else self._abort(common, task_vars, remove_upload=stop["remove_upload"],
                                            needed_bytes=stop["needed_bytes"]))
                if failure["status"] == "failed" and aborted.get("no_space"):
                    result.update(status="no_space", msg=f"no space left on {args['host']}: {failure['msg']}")
                if aborted.get("disk"):
                    result["disk"] = aborted["disk"]
                result.pop("needed_bytes", None)
                return
            result["sent"] = len(probe.get("send", []))
        if held:
            install = self._release(probe, "go")
        else:
            install = self._execute_module(MODULE, task_vars=task_vars, module_args=dict(
                common, phase="install", version_ok=bool(probe.get("version_ok")), inline_files=inline))
            install.pop("invocation", None)
            if install.get("failed"):
                # Writing the inlined files can fill the filesystem too: that upload is of no use.
                full = install.get("status") == "no_space"
                aborted = self._abort(common, task_vars, remove_upload=full,
                                      needed_bytes=sum(files[r] for r in inline) if full else 0)
                if aborted.get("disk"):
                    install["disk"] = aborted["disk"]
        result.update(install)
        result["changed"] = bool(install.get("changed") or probe.get("changed"))

    def _read_small(self, source, files):
        """(failure as {status, msg} or None, {relative path: base64}) of the small files, which
        travel inside the module's arguments: each file transfer is an sftp session of its own."""
        inline, inline_bytes = {}, 0
        for relative in sorted(files, key=lambda r: (files[r], r)):
            if files[relative] > INLINE_FILE_MAX_BYTES or inline_bytes + files[relative] > INLINE_TOTAL_MAX_BYTES:
                break
            try:
                fd = _open_regular(os.path.join(source, relative))
            except Refusal as exc:
                return {"status": "refused", "msg": f"{relative}: {exc}"}, {}
            try:
                data = _read_all(fd, files[relative])
            finally:
                os.close(fd)
            if len(data) != files[relative]:
                return {"status": "refused",
                        "msg": f"{relative} changed on the controller while the bundle was being sent"}, {}
            inline[relative] = base64.b64encode(data).decode("ascii")
            inline_bytes += len(data)
        return None, inline

    def _send(self, source, files, upload_dir, relatives, host):
        """Sends these files into the upload dir; a failure as {status, msg}, else None."""
        for relative in relatives:
            try:
                fd = _open_regular(os.path.join(source, relative))
            except Refusal as exc:
                return {"status": "refused", "msg": f"{relative}: {exc}"}
            try:
                if os.fstat(fd).st_size != files[relative]:
                    return {"status": "refused",
                            "msg": f"{relative} changed on the controller while the bundle was being sent"}
                remote = self._connection._shell.join_path(upload_dir, relative)
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

    def _release(self, probe, marker, arguments=None):
        """Tells the module run held on the host to go on (`go`: install; `stop`: abort, with these
        arguments) and returns its result; a failure result when it ended without one."""
        directory = probe.get("hold_dir")
        if not isinstance(directory, str) or not HOLD_DIR.match(directory):
            return {"failed": True, "status": "failed", "msg": f"the host holds its install in {directory!r}"}
        paths = {name: os.path.join(directory, name) for name in ("go", "stop", "result")}
        quoted = {name: shlex.quote(path) for name, path in paths.items()}
        staged = shlex.quote(paths[marker] + ".tmp")
        pid = int(probe["holder_pid"])
        script = (f"umask 077 && printf '%s' {shlex.quote(json.dumps(arguments or {}))} > {staged} && "
                  f"mv -f {staged} {quoted[marker]} && "
                  # The child exits once its result is written. GNU tail waits for that without
                  # a process per poll (a sleep loop cost 30 forks a second per host); else poll.
                  f"{{ tail --pid={pid} -s 0.05 -f /dev/null 2>/dev/null || "
                  f"while kill -0 {pid} 2>/dev/null; do sleep 0.2; done; }}; "
                  f"cat {quoted['result']}; rc=$?; rm -rf {shlex.quote(directory)}; exit $rc")
        command = f"{self._compute_environment_string()} /bin/sh -c {shlex.quote(script)}".strip()
        try:
            done = self._low_level_execute_command(command, sudoable=True)
        except AnsibleError as exc:
            return {"failed": True, "status": "failed", "msg": f"lost the host while it installed: {exc}"}
        try:
            answer = json.loads(done.get("stdout") or "")
        except ValueError:
            answer = None
        if done.get("rc") != 0 or not isinstance(answer, dict):
            return {"failed": True, "status": "failed",
                    "msg": f"the install on the host ended without a result ({(done.get('stderr') or '').strip()})"}
        return answer

    def _abort(self, common, task_vars, *, remove_upload, needed_bytes=0):
        """Releases the host's lock; returns the module's answer ({} when the host is gone)."""
        if self._task.check_mode:
            return {}
        # When the host is gone, its lock goes stale and is taken over by the next run.
        with contextlib.suppress(AnsibleError):
            return self._execute_module(MODULE, task_vars=task_vars, module_args=dict(
                common, phase="abort", remove_upload=remove_upload, needed_bytes=needed_bytes))
        return {}
