#!/usr/bin/python
# Runs ON THE HOST: the host-side steps of model-sync.yml, one module run per phase instead of one
# task per step (each task is a round trip, about a second on a busy controller).
#   phase=probe:   install or check the trusted key, create the model directories, read the
#                  `current`/`previous` links, look for this version and re-verify it when present.
#   phase=stage:   move the files that action_plugins/hybridctl_bundle_copy.py uploaded into a
#                  fresh staging dir.
#   phase=install: verify the staging dir, rename it into
#                  versions/<version>, switch `current` atomically and prune old versions.
# Verification uses the host's own tools, as verify_bundle.yml does: the Ed25519 signature with
# `openssl pkeyutl -verify -rawin`, the file list and sizes against the signed manifest, then
# `sha256sum --check`. Refusal messages are the same as verify_bundle.yml's.
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

from ansible.module_utils.basic import AnsibleModule

DOCUMENTATION = r"""
module: hybridctl_model_sync
short_description: Host-side steps of hybridctl's model-sync playbook (probe, install)
description: See playbooks/roles/model_sync/tasks/main.yml.
"""

MANIFEST, SIGNATURE = "manifest.json", "manifest.sig"


class Refused(Exception):
    pass


def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def read_link(path):
    return os.readlink(path) if os.path.islink(path) else ""


def switch_link(link, target):
    # A new symlink under a temporary name, renamed over the old one: rename(2) is atomic, so
    # readers see the old target or the new one, never a missing link.
    temporary = link + ".hybridctl-tmp"
    remove(temporary)
    os.symlink(target, temporary)
    os.rename(temporary, link)


def sha256_of(path):
    digest = hashlib.sha256()
    with open(path, "rb") as stream:
        digest.update(stream.read())
    return digest.hexdigest()


def verify(module, directory, model, version):
    """Raises Refused with verify_bundle.yml's messages when `directory` is not a good bundle."""
    p = module.params
    entries = {}
    for parent, dirs, files in os.walk(directory):
        for name in dirs + files:
            path = os.path.join(parent, name)
            entries[os.path.relpath(path, directory)] = path
    if MANIFEST not in entries:
        raise Refused(f"{directory} has no manifest.json: this is not a bundle, or its copy is incomplete")
    if SIGNATURE not in entries:
        raise Refused(f"bundle is not signed: manifest.sig is missing in {directory}")
    if module.get_bin_path("openssl") is None:
        raise Refused("openssl is not installed on the host, so the bundle signature cannot be verified")
    rc, _out, _err = module.run_command(
        ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", p["trusted_key"], "-rawin",
         "-in", os.path.join(directory, MANIFEST), "-sigfile", os.path.join(directory, SIGNATURE)])
    if rc != 0:
        raise Refused(f"manifest.sig does not verify manifest.json with the trusted key {p['trusted_key']}: the "
                      "manifest was changed after signing, or the bundle was signed with another key")
    try:
        with open(os.path.join(directory, MANIFEST), "rb") as stream:
            manifest = json.loads(stream.read().decode("utf-8"))
    except ValueError:
        manifest = None
    files = manifest.get("files") if isinstance(manifest, dict) else None
    pattern = re.compile(p["artifact_path_pattern"])
    if (not isinstance(files, list) or manifest.get("format") != 1 or manifest.get("model") != model
            or manifest.get("version") != version
            or any(not isinstance(f, dict) or not pattern.match(str(f.get("path", ""))) for f in files)):
        found = manifest if isinstance(manifest, dict) else {}
        raise Refused(f"the signed manifest in {directory} is for {found.get('model', '?')} "
                      f"{found.get('version', '?')} (format {found.get('format', '?')}), expected {model} {version} "
                      "(format 1), with only relative artifact paths made of letters, digits and . _ + = @ -")
    problems = []
    for f in files:
        path = entries.get(f["path"])
        if path is None:
            problems.append(f"{f['path']}: listed in the manifest but missing")
        elif os.path.islink(path) or not os.path.isfile(path):
            problems.append(f"{f['path']}: not a regular file")
        elif os.path.getsize(path) != f.get("size_bytes"):
            problems.append(f"{f['path']}: size is {os.path.getsize(path)}, the manifest says {f.get('size_bytes')}")
    listed = {f["path"] for f in files} | {MANIFEST, SIGNATURE}
    for relative in sorted(r for r, path in entries.items()
                           if r not in listed and (os.path.islink(path) or not os.path.isdir(path))):
        problems.append(f"{relative}: present but not listed in the manifest")
    if problems:
        raise Refused(f"bundle in {directory} does not match its signed manifest: {'; '.join(problems)}")
    # One "<sha256>  <path>" line per file; paths were restricted to safe characters above.
    listing = "".join(f"{f['sha256']}  {f['path']}\n" for f in files)
    rc, out, _err = module.run_command(["sha256sum", "--check", "--strict", "--quiet", "-"], data=listing,
                                       binary_data=True, cwd=directory)
    if rc != 0:
        failed = [re.sub(r": FAILED.*$", "", line) for line in out.splitlines() if re.search(r": FAILED", line)]
        raise Refused(f"bundle in {directory} does not match its signed manifest: sha256 mismatch in "
                      f"{', '.join(failed) or '(see sha256sum output)'}")


def probe(module, paths, result):
    p = module.params
    key = p["trusted_key"]
    if p["trusted_key_content"] is not None:
        current_key = None
        if os.path.isfile(key):
            with open(key, "rb") as stream:
                current_key = stream.read()
        wanted = p["trusted_key_content"].encode("utf-8")
        if current_key != wanted or (os.stat(key).st_mode & 0o7777) != 0o644:
            result["changed"] = True
            result["key_installed"] = True
            if not module.check_mode:
                os.makedirs(os.path.dirname(key), mode=0o755, exist_ok=True)
                temporary = key + ".hybridctl-tmp"
                with open(temporary, "wb") as stream:
                    stream.write(wanted)
                os.chmod(temporary, 0o644)
                os.rename(temporary, key)
    elif not os.path.exists(key):
        raise Refused(f"{p['host']} has no trusted model-signing key at {key}; "
                      "set hybridctl_bundle_public_key_file to the publisher's public key")
    if not os.path.isdir(paths["versions"]):
        result["changed"] = True
        if not module.check_mode:
            os.makedirs(paths["versions"], mode=0o755, exist_ok=True)
    current = os.path.basename(read_link(os.path.join(paths["model"], "current")))
    previous = os.path.basename(read_link(os.path.join(paths["model"], "previous")))
    result.update(current_before=current, previous_version=previous or None)
    manifest = os.path.join(paths["version"], MANIFEST)
    result["version_ok"] = False
    if os.path.isfile(manifest):
        if sha256_of(manifest) != p["manifest_sha256"]:
            raise Refused(f"{p['model']} {p['version']} is already on {p['host']} with a different manifest; "
                          "versions are immutable: publish the new content under a new version")
        try:
            verify(module, paths["version"], p["model"], p["version"])
            result["version_ok"] = True
        except Refused as damaged:
            result["repaired"] = str(damaged)


def stage(module, paths, result):
    """Moves the files the action plugin uploaded into a fresh staging dir."""
    result["changed"] = True
    if module.check_mode:
        return
    remove(paths["staging"])
    try:
        os.makedirs(paths["staging"], mode=0o755)
        for relative, upload in module.params["uploads"].items():
            target = os.path.normpath(os.path.join(paths["staging"], relative))
            if not target.startswith(paths["staging"] + os.sep):
                raise Refused(f"{relative}: not a path inside the bundle")
            os.makedirs(os.path.dirname(target), mode=0o755, exist_ok=True)
            shutil.move(upload, target)
            if os.geteuid() == 0:
                os.chown(target, 0, 0)
            os.chmod(target, 0o644)
        for parent, _dirs, _files in os.walk(paths["staging"]):
            os.chmod(parent, 0o755)
    except BaseException:
        remove(paths["staging"])
        raise


def install(module, paths, result):
    p = module.params
    if not p["version_ok"]:
        result["changed"] = True
        if not module.check_mode:
            try:
                verify(module, paths["staging"], p["model"], p["version"])
            except BaseException:
                remove(paths["staging"])
                raise
            # A damaged copy of the same version is renamed aside first, then removed.
            remove(paths["trash"])
            if os.path.lexists(paths["version"]):
                os.rename(paths["version"], paths["trash"])
            os.rename(paths["staging"], paths["version"])
            remove(paths["trash"])
        result["status"] = "installed"
    previous = p["previous_version"]
    if p["current_before"] != p["version"]:
        result.update(changed=True, status="activated")
        if not module.check_mode:
            if p["current_before"]:
                switch_link(os.path.join(paths["model"], "previous"), "versions/" + p["current_before"])
            switch_link(os.path.join(paths["model"], "current"), "versions/" + p["version"])
        previous = p["current_before"] or previous
    result["previous"] = previous or None
    result["pruned"] = prune(module, paths, previous, result)


def prune(module, paths, previous, result):
    # Keeps the current version and keep_previous others: `previous` first (kept in any case),
    # then the most recently installed; removes older ones and leftovers of interrupted runs.
    versions = paths["versions"]
    entries = []
    if os.path.isdir(versions):
        entries = [e for e in os.scandir(versions) if e.is_dir(follow_symlinks=False) or e.name.startswith(".")]
    entries.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime, reverse=True)
    kept_previous = [previous] if previous else []
    others = [e.name for e in entries if not e.name.startswith(".")
              and e.name not in [module.params["version"], *kept_previous]]
    kept = {module.params["version"], *kept_previous, *(kept_previous + others)[:module.params["keep_previous"]]}
    pruned = [e.name for e in entries if e.name not in kept]
    if pruned:
        result["changed"] = True
    if not module.check_mode:
        for name in pruned:
            remove(os.path.join(versions, name))
    return pruned


def main():
    module = AnsibleModule(
        argument_spec={
            "phase": {"type": "str", "required": True, "choices": ["probe", "stage", "install"]},
            "host": {"type": "str", "required": True},
            "model": {"type": "str", "required": True},
            "version": {"type": "str", "required": True},
            "model_dir": {"type": "path", "required": True},
            "manifest_sha256": {"type": "str", "required": True},
            "trusted_key": {"type": "path", "required": True},
            "trusted_key_content": {"type": "str"},
            "artifact_path_pattern": {"type": "str", "required": True},
            "uploads": {"type": "dict", "default": {}},
            "version_ok": {"type": "bool", "default": False},
            "current_before": {"type": "str", "default": ""},
            "previous_version": {"type": "str"},
            "keep_previous": {"type": "int", "default": 2},
        },
        supports_check_mode=True,
    )
    p = module.params
    model_dir = p["model_dir"]
    paths = {
        "model": model_dir,
        "versions": os.path.join(model_dir, "versions"),
        "version": os.path.join(model_dir, "versions", p["version"]),
        "staging": os.path.join(model_dir, "versions", ".staging-" + p["version"]),
        "trash": os.path.join(model_dir, "versions", ".trash-" + p["version"]),
    }
    result = {"changed": False, "status": "unchanged"}
    try:
        {"probe": probe, "stage": stage, "install": install}[p["phase"]](module, paths, result)
    except Refused as refusal:
        module.fail_json(msg=str(refusal), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
