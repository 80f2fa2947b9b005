#!/usr/bin/python
# Runs ON THE HOST: every host-side step of model-sync.yml, rollback.yml, trust.yml and
# model-status.yml, one module run per phase (each task is a round trip):
#   probe:    check trust (pinned keys), take the model's lock, clean up what earlier runs left,
#             refuse a downgrade, check an installed copy of this version (by its recorded file
#             metadata, or a full re-hash), prepare the upload dir and check free space for it.
#   install:  write the small files sent inline, verify the uploaded copy, rename it into
#             versions/<version>, record its metadata, switch `current` (and `previous`), prune,
#             release the lock.
#   abort:    release the lock after a failure, removing the upload when it is useless.
#   rollback: switch `current` to an installed older version (verified first).
#   trust:    pin, unpin or list model-signing keys.
#   status:   the active version of each model and when it was activated.
# Rules shared by the phases are in module_utils/hybridctl_models.py; the model's directory, the
# verification of a copy and the trusted keys in module_utils/hybridctl_model_store.py.
from __future__ import annotations

import errno
import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.hybridctl_model_hold import hold
from ansible.module_utils.hybridctl_model_store import ModelStore, sha256_hex
from ansible.module_utils.hybridctl_models import (
    MANIFEST,
    ModelLock,
    Refused,
    entries,
    file_record,
    key_id_of_pem,
    mount_point,
    own_by_root,
    pin_key,
    pinned_keys,
    read_link,
    read_regular,
    remove,
    switch_link,
    unpin_key,
    version_key,
    write_atomic,
)

DOCUMENTATION = r"""
module: hybridctl_model_host
short_description: Host-side steps of hybridctl's model playbooks (probe, install, abort, rollback, trust, status)
description: See playbooks/README.md.
"""


class Host(ModelStore):
    """The phases of the module, on one model's directory."""

    # --- phases ----------------------------------------------------------------------------

    def upload_dir(self):
        return os.path.join(self.incoming, f"{self.p['version']}-{self.p['manifest_sha256'][:16]}")

    def lock(self):
        return ModelLock(self.model_dir, self.p["stale_s"])

    def probe(self, result):
        p, check = self.p, self.module.check_mode
        keys = self.trusted_keys(result)
        if not os.path.isdir(self.versions):
            result["changed"] = True
            if check:
                result.update(current_before="", previous_version=None, version_ok=False, send=sorted(p["files"]))
                return
            os.makedirs(self.versions, mode=0o755, exist_ok=True)
        with self.lock() as lock:
            current = read_link(os.path.join(self.model_dir, "current"))
            result.update(current_before=current,
                          previous_version=read_link(os.path.join(self.model_dir, "previous")) or None)
            self.refuse_downgrade(current)
            upload = self.upload_dir()
            if not check:
                lock.claim(p["token"], upload, p["version"], p["model"], p["host"])
                self.clean_leftovers(keep=upload)
            manifest = os.path.join(self.versions, p["version"], MANIFEST)
            result["version_ok"] = False
            if os.path.lexists(manifest):
                if sha256_hex(read_regular(manifest)) != p["manifest_sha256"]:
                    raise Refused(f"{p['model']} {p['version']} is already on {p['host']} with a different "
                                  "manifest; versions are immutable: publish the new content under a new version")
                record, damaged = self.installed_ok(p["version"], keys, p["manifest_sha256"])
                result.update(version_ok=record is not None, installed_check=self.checked_by)
                if damaged:
                    result["repaired"] = damaged
            if not result["version_ok"]:
                result["send"] = [] if check else self.prepare_upload(upload)
                result["upload_dir"] = upload

    def refuse_downgrade(self, current):
        version = self.p["version"]
        if current and current != version and version_key(version) <= version_key(current):
            raise Refused(f"{version} is older than the active version {current} (or orders the same): a sync never "
                          f"goes back; roll back explicitly (rollback.yml -e hybridctl_model={self.p['model']} "
                          f"-e hybridctl_rollback_version={version}) once the version is on the host")

    def clean_leftovers(self, keep):
        """What killed or refused runs left: other uploads, half-renamed copies, temporary links."""
        cleaned = []
        if os.path.isdir(self.incoming):
            for name in os.listdir(self.incoming):
                path = os.path.join(self.incoming, name)
                if path != keep:
                    remove(path)
                    cleaned.append(path)
        for directory in (self.versions, self.model_dir):
            for name in os.listdir(directory):
                if name.startswith((".staging-", ".trash-")) or name.endswith(".hybridctl-tmp"):
                    remove(os.path.join(directory, name))
                    cleaned.append(os.path.join(directory, name))
        return cleaned

    def prepare_upload(self, upload):
        """Creates the upload dir (resuming an earlier one) and checks free space; returns what to send."""
        p = self.p
        os.makedirs(upload, mode=0o700, exist_ok=True)
        expected = p["files"]
        present = entries(upload)
        complete = set()
        for relative, info in sorted(present.items(), reverse=True):
            path = os.path.join(upload, relative)
            if os.path.isdir(path) and not os.path.islink(path):
                continue
            if relative in expected and os.path.isfile(path) and not os.path.islink(path) \
                    and info.st_size == expected[relative]:
                complete.add(relative)
            else:
                remove(path)  # partial, unknown or not a regular file: sent again
        send = sorted(set(expected) - complete)
        for relative in send:
            os.makedirs(os.path.dirname(os.path.join(upload, relative)), mode=0o700, exist_ok=True)
        if p["upload_owner"]:
            import pwd

            account = pwd.getpwnam(p["upload_owner"])
            for parent, _dirs, _files in os.walk(upload):
                os.chown(parent, account.pw_uid, account.pw_gid)
        needed = sum(expected[r] for r in send)
        fs = os.statvfs(upload)
        free = fs.f_bavail * fs.f_frsize
        self.module_result_disk = {"filesystem": mount_point(upload), "free_bytes": free, "needed_bytes": needed}
        if free < needed + p["reserve_bytes"]:
            remove(upload)
            self.drop_empty_incoming()
            raise Refused(f"not enough space on {p['host']} for {p['model']} {p['version']}: "
                          f"{mount_point(upload)} has {free:,} bytes free, the bundle needs {needed:,} more"
                          + (f" plus a reserve of {p['reserve_bytes']:,}" if p["reserve_bytes"] else ""),
                          status="no_space")
        return send

    def install(self, result):
        p, check = self.p, self.module.check_mode
        keys = self.trusted_keys(result)
        version_dir = os.path.join(self.versions, p["version"])
        with self.lock() as lock:
            if not check:
                lock.check(p["token"], p["model"], p["host"])
            if not p["version_ok"]:
                result.update(changed=True, status="installed")
                if not check:
                    upload = self.upload_dir()
                    # Root-owned first (the upload may belong to the connection user), then verified:
                    # nobody else can change the files between the check and the rename.
                    own_by_root(upload)
                    try:
                        self.write_inline(upload)
                        record = self.verify(upload, p["version"], keys)
                    except Refused:
                        remove(upload)
                        raise
                    trash = os.path.join(self.versions, ".trash-" + p["version"])
                    remove(trash)
                    if os.path.lexists(version_dir):
                        os.rename(version_dir, trash)
                    os.rename(upload, version_dir)
                    remove(trash)
                    record["files"] = {r: file_record(os.lstat(os.path.join(version_dir, r))) for r in record["files"]}
                    os.makedirs(self.records, mode=0o700, exist_ok=True)
                    write_atomic(os.path.join(self.records, p["version"] + ".json"), json.dumps(record).encode(), 0o600)
            current = read_link(os.path.join(self.model_dir, "current"))
            previous = read_link(os.path.join(self.model_dir, "previous")) or None
            if current != p["version"]:
                self.refuse_downgrade(current)
                result.update(changed=True, status="activated")
                if not check:
                    if current:
                        switch_link(os.path.join(self.model_dir, "previous"), "versions/" + current)
                    switch_link(os.path.join(self.model_dir, "current"), "versions/" + p["version"])
                previous = current or previous
            result["previous"] = previous
            result["pruned"] = self.prune(p["version"], previous, result)
            if not check:
                lock.release(p["token"])
                self.drop_empty_incoming()

    def drop_empty_incoming(self):
        if os.path.isdir(self.incoming) and not os.listdir(self.incoming):
            os.rmdir(self.incoming)

    def installed_versions(self):
        if not os.path.isdir(self.versions):
            return []
        return [e.name for e in os.scandir(self.versions) if e.is_dir(follow_symlinks=False)
                and not e.name.startswith(".")]

    def prune(self, current, previous, result):
        # Keeps `current`, `previous` (always) and the newest others up to keep_previous in all.
        others = sorted((v for v in self.installed_versions() if v not in (current, previous)),
                        key=version_key, reverse=True)
        kept = [previous] if previous else []
        kept += others[:max(0, self.p["keep_previous"] - len(kept))]
        pruned = sorted((v for v in others if v not in kept), key=version_key)
        if pruned:
            result["changed"] = True
        if not self.module.check_mode:
            for name in pruned:
                remove(os.path.join(self.versions, name))
                remove(os.path.join(self.records, name + ".json"))
        return pruned

    def abort(self, result):
        if not os.path.isdir(self.model_dir) or self.module.check_mode:
            return
        with self.lock() as lock:
            owner = lock.owner()
            if owner and owner.get("token") == self.p["token"]:
                # A copy that failed on a full filesystem (sftp reports only "Failure") is told
                # apart here: too few bytes or no inodes left for what was still to come.
                if self.p["needed_bytes"]:
                    fs = os.statvfs(self.model_dir)
                    free = fs.f_bavail * fs.f_frsize
                    result.update(no_space=free < self.p["needed_bytes"] or fs.f_favail == 0, disk={
                        "filesystem": mount_point(self.model_dir), "free_bytes": free,
                        "needed_bytes": self.p["needed_bytes"], "free_inodes": fs.f_favail})
                if self.p["remove_upload"] or result.get("no_space"):
                    remove(self.upload_dir())
                    self.drop_empty_incoming()
                lock.release(self.p["token"])
                result["released"] = True

    def rollback(self, result):
        p, model, host = self.p, self.p["model"], self.p["host"]
        keys = pinned_keys(p["trust_dir"])
        current_link = os.path.join(self.model_dir, "current")
        if not os.path.isdir(self.model_dir) or not read_link(current_link):
            raise Refused(f"{model} has no active version on {host} (no {current_link})")
        with self.lock() as lock:
            if lock.owner():  # refuses while a sync is running; a dead sync's record is dropped
                lock.claim(p["token"], None, "rollback", model, host)
                lock.release(p["token"])
            current = read_link(current_link)
            previous = read_link(os.path.join(self.model_dir, "previous"))
            target = p["target"] or previous
            if not target:
                try:
                    manifest = json.loads(read_regular(os.path.join(self.versions, current, MANIFEST)))
                except (OSError, ValueError):
                    manifest = {}
                target = (manifest.get("rollback_to") if isinstance(manifest, dict) else None) or ""
            if not target:
                raise Refused(f"{model} on {host} has no older version to return to (no `previous` link and "
                              "the current manifest names no rollback_to); set hybridctl_rollback_version")
            result.update(target=target, current_before=current)
            if target == current:
                result.update(status="unchanged", current=current, rolled_back_from=None)
                return
            if target not in self.installed_versions():
                raise Refused(f"{model} {target} is not on {host}; sync it first with model-sync.yml")
            record, damaged = self.installed_ok(target, keys)
            if record is None:
                raise Refused(damaged)
            # `previous` moves one step further back, so that the next rollback goes on from here.
            older = sorted((v for v in self.installed_versions() if version_key(v) < version_key(target)),
                           key=version_key)
            new_previous = older[-1] if older else ""
            result.update(changed=True, status="rolled_back", current=target, rolled_back_from=current,
                          previous=new_previous or None)
            if not self.module.check_mode:
                switch_link(current_link, "versions/" + target)
                if new_previous:
                    switch_link(os.path.join(self.model_dir, "previous"), "versions/" + new_previous)
                else:
                    remove(os.path.join(self.model_dir, "previous"))

    def trust(self, result):
        p = self.p
        if p["action"] == "add":
            wanted = (p["expected_key_content"] or "").encode()
            key_id = key_id_of_pem(wanted)
            if key_id is None:
                raise Refused("the key to trust is not a PEM Ed25519 public key")
            path = os.path.join(p["trust_dir"], "keys", key_id + ".pem")
            already = os.path.isfile(path) and not os.path.islink(path) and read_regular(path) == wanted
            pinned = pinned_keys(p["trust_dir"])
            if not already and pinned and p["first_only"]:
                raise Refused(f"key {key_id} is not trusted on {p['host']} (trusted: {', '.join(sorted(pinned))}); "
                              "adding or rotating a key is done explicitly with `hybridctl bundle trust add`")
            if not already:
                result.update(changed=True, added=key_id)
                if not self.module.check_mode:
                    pin_key(p["trust_dir"], wanted)
        elif p["action"] == "remove":
            keys = pinned_keys(p["trust_dir"])
            if p["key_id"] in keys:
                if set(keys) == {p["key_id"]}:
                    raise Refused(f"{p['key_id']} is the only key trusted on {p['host']}; pin its successor first")
                result.update(changed=True, removed=p["key_id"])
                if not self.module.check_mode:
                    unpin_key(p["trust_dir"], p["key_id"])
        result["keys"] = sorted(pinned_keys(p["trust_dir"]))
        if self.module.check_mode and result.get("added"):
            result["keys"] = sorted(set(result["keys"]) | {result["added"]})

    def status(self, result):
        models = {}
        root = self.p["models_dir"]
        for name in sorted(os.listdir(root)) if os.path.isdir(root) else []:
            directory = os.path.join(root, name)
            current = os.path.join(directory, "current")
            if not os.path.islink(current):
                continue
            activated = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(os.lstat(current).st_mtime))
            models[name] = {"current": read_link(current), "activated_at": activated,
                            "previous": read_link(os.path.join(directory, "previous")) or None}
        result["models"] = models


def main():
    module = AnsibleModule(
        argument_spec={
            "phase": {"type": "str", "required": True,
                      "choices": ["probe", "install", "abort", "rollback", "trust", "status"]},
            "host": {"type": "str", "required": True},
            "model": {"type": "str"},
            "version": {"type": "str"},
            "model_dir": {"type": "path"},
            "models_dir": {"type": "path"},
            "trust_dir": {"type": "path"},
            "manifest_sha256": {"type": "str", "default": ""},
            "expected_key_content": {"type": "str"},
            "trust_first_key": {"type": "bool", "default": True},
            "artifact_path_pattern": {"type": "str", "default": "^$"},
            "files": {"type": "dict", "default": {}},
            # {relative path: base64} of small files; not logged, nor echoed back in the result.
            "inline_files": {"type": "dict", "default": {}, "no_log": True},
            "token": {"type": "str", "default": ""},
            "stale_s": {"type": "int", "default": 60},
            "verify_full": {"type": "bool", "default": False},
            "version_ok": {"type": "bool", "default": False},
            "keep_previous": {"type": "int", "default": 2},
            "reserve_bytes": {"type": "int", "default": 0},
            "upload_owner": {"type": "str"},
            "remove_upload": {"type": "bool", "default": False},
            "needed_bytes": {"type": "int", "default": 0},
            # probe: stay on the host for install or abort, for up to this long (see module_utils/hybridctl_model_hold.py)
            "hold_s": {"type": "int", "default": 0},
            "target": {"type": "str"},
            "action": {"type": "str", "choices": ["add", "remove", "list"], "default": "list"},
            "key_id": {"type": "str"},
            "first_only": {"type": "bool", "default": False},
        },
        supports_check_mode=True,
    )
    host = Host(module)
    result = {"changed": False, "status": "unchanged"}
    phase = module.params["phase"]
    failure = run_phase(host, phase, result)
    if failure is not None:
        module.fail_json(msg=failure, **result)
    if phase == "probe" and module.params["hold_s"] > 0 and not module.check_mode:
        hold(host, result, module.params["hold_s"], lambda then, into: run_phase(host, then, into))
    module.exit_json(**result)


def run_phase(host, phase, result):
    """Runs one phase into result; returns why it failed, or None."""
    try:
        getattr(host, phase)(result)
    except Refused as refusal:
        result["status"] = refusal.status
        _add_disk(host, result)
        return str(refusal)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            result["status"] = "no_space"
            return f"no space left on {host.p['host']}: {exc}"
        raise
    _add_disk(host, result)
    return None


def _add_disk(host, result):
    # The probe's figures; a later phase (abort) in the same process may have its own.
    if getattr(host, "module_result_disk", None):
        result.setdefault("disk", host.module_result_disk)


if __name__ == "__main__":
    main()
