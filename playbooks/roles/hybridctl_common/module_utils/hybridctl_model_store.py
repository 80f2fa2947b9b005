# Runs ON THE HOST (imported by library/hybridctl_model_host.py): one model's directory on the
# host as the phases of the module see it: its paths, the verification of a copy against its
# signed manifest (signature with openssl, file list, sizes, sha256), the records of what was
# verified (so that an unchanged copy is checked by its file metadata, not re-hashed), and the
# keys the host trusts. The phases themselves (probe, install, abort, rollback, trust, status)
# are in the module.
from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile

from ansible.module_utils.hybridctl_models import (
    MANIFEST,
    SIGNATURE,
    Refused,
    entries,
    file_record,
    hash_regular,
    key_id_of_pem,
    pin_key,
    pinned_keys,
    read_regular,
    remove,
    write_atomic,
)


def sha256_hex(data):
    return hashlib.sha256(data).hexdigest()


class ModelStore:
    """One model's directory on the host (model_dir of the module's parameters)."""

    def __init__(self, module):
        self.module = module
        p = self.p = module.params
        self.model_dir = p["model_dir"] or ""
        self.versions = os.path.join(self.model_dir, "versions")
        self.records = os.path.join(self.model_dir, ".verified")
        self.incoming = os.path.join(self.model_dir, ".incoming")

    # --- verification ----------------------------------------------------------------------

    def check_signature(self, manifest_bytes, signature, keys):
        if self.module.get_bin_path("openssl") is None:
            raise Refused("openssl is not installed on the host, so the bundle signature cannot be verified")
        scratch = tempfile.mkdtemp(prefix="hybridctl-sig-")
        try:
            # Copies in a private dir: the bytes checked are the bytes parsed afterwards. (openssl
            # reads Ed25519 input in one shot and cannot take it from a pipe.)
            sigfile, manifest_file = os.path.join(scratch, SIGNATURE), os.path.join(scratch, MANIFEST)
            for path, data in ((sigfile, signature), (manifest_file, manifest_bytes)):
                with open(path, "wb") as stream:
                    stream.write(data)
            for key_id, key_path in sorted(keys.items()):
                rc, _out, _err = self.module.run_command(
                    ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", key_path, "-rawin", "-in", manifest_file,
                     "-sigfile", sigfile])
                if rc == 0:
                    return key_id
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        raise Refused(f"manifest.sig does not verify manifest.json with any key trusted on {self.p['host']} "
                      f"({', '.join(sorted(keys)) or 'none'}): the manifest was changed after signing, or the "
                      "bundle was signed with another key")

    def verify(self, directory, version, keys):
        """Full verification; returns the record of what was verified. Raises Refused."""
        model = self.p["model"]
        found = entries(directory)
        if MANIFEST not in found:
            raise Refused(f"{directory} has no manifest.json: this is not a bundle, or its copy is incomplete")
        if SIGNATURE not in found:
            raise Refused(f"bundle is not signed: manifest.sig is missing in {directory}")
        manifest_bytes = read_regular(os.path.join(directory, MANIFEST))
        signed_by = self.check_signature(manifest_bytes, read_regular(os.path.join(directory, SIGNATURE)), keys)
        try:
            manifest = json.loads(manifest_bytes.decode("utf-8"))
        except ValueError:
            manifest = None
        files = manifest.get("files") if isinstance(manifest, dict) else None
        pattern = re.compile(self.p["artifact_path_pattern"])
        if (not isinstance(files, list) or manifest.get("format") != 1 or manifest.get("model") != model
                or manifest.get("version") != version
                or any(not isinstance(f, dict) or not pattern.match(str(f.get("path", ""))) for f in files)):
            seen = manifest if isinstance(manifest, dict) else {}
            raise Refused(f"the signed manifest in {directory} is for {seen.get('model', '?')} "
                          f"{seen.get('version', '?')} (format {seen.get('format', '?')}), expected {model} {version} "
                          "(format 1), with only relative artifact paths made of letters, digits and . _ + = @ -")
        problems, mismatched, record = [], [], {}
        for f in files:
            if f["path"] not in found:
                problems.append(f"{f['path']}: listed in the manifest but missing")
                continue
            digest, info, problem = hash_regular(os.path.join(directory, f["path"]), f.get("size_bytes"))
            if problem:
                problems.append(f"{f['path']}: {problem}")
            elif digest != f.get("sha256"):
                mismatched.append(f["path"])
            else:
                record[f["path"]] = file_record(info)
        listed = {f["path"] for f in files} | {MANIFEST, SIGNATURE}
        for relative in sorted(r for r, info in found.items() if r not in listed and not stat.S_ISDIR(info.st_mode)):
            problems.append(f"{relative}: present but not listed in the manifest")
        if problems:
            raise Refused(f"bundle in {directory} does not match its signed manifest: {'; '.join(problems)}")
        if mismatched:
            raise Refused(f"bundle in {directory} does not match its signed manifest: sha256 mismatch in "
                          f"{', '.join(mismatched)}")
        for name in (MANIFEST, SIGNATURE):
            record[name] = file_record(os.lstat(os.path.join(directory, name)))
        return {"manifest_sha256": sha256_hex(manifest_bytes), "signed_by": signed_by, "files": record,
                "rollback_to": manifest.get("rollback_to")}

    def write_inline(self, upload):
        """Writes the files that came inside the arguments into the (root-owned) upload dir; what
        they hold is checked with the rest by verify()."""
        p = self.p
        real_upload = os.path.realpath(upload)
        for relative, encoded in sorted(p["inline_files"].items()):
            path = os.path.normpath(os.path.join(upload, relative))
            if relative not in p["files"] or os.path.isabs(relative) or not path.startswith(upload + os.sep):
                raise Refused(f"{relative} was sent but is not a file of the bundle")
            parent = os.path.dirname(path)
            os.makedirs(parent, mode=0o755, exist_ok=True)
            # A symlinked parent would lead the write out of the upload dir.
            if os.path.realpath(parent) != real_upload and not os.path.realpath(parent).startswith(real_upload + os.sep):
                raise Refused(f"{relative}: a parent directory in the upload is a symlink")
            try:
                data = base64.b64decode(encoded, validate=True)
            except ValueError:
                raise Refused(f"{relative} was sent garbled (not base64)") from None
            remove(path)
            write_atomic(path, data, 0o644)

    def recorded(self, version):
        try:
            return json.loads(read_regular(os.path.join(self.records, version + ".json")))
        except (OSError, ValueError, Refused):
            return None

    def installed_ok(self, version, keys, manifest_sha256=None):
        """(record, problem): by metadata when nothing changed since it was verified, else re-hashed."""
        directory = os.path.join(self.versions, version)
        record = self.recorded(version)
        if manifest_sha256 and record and record.get("manifest_sha256") != manifest_sha256:
            record = None
        if record and not self.p["verify_full"] and record.get("signed_by") in keys:
            try:
                now = {r: file_record(os.lstat(os.path.join(directory, r))) for r in record["files"]}
                listed = set(record["files"])
                present = {r for r in entries(directory) if not os.path.isdir(os.path.join(directory, r))}
            except OSError:
                now, present, listed = None, None, set()
            if now == record["files"] and present == listed:
                self.checked_by = "metadata"
                return record, None
        self.checked_by = "sha256"
        try:
            record = self.verify(directory, version, keys)
        except Refused as damaged:
            return None, str(damaged)
        if not self.module.check_mode:
            os.makedirs(self.records, mode=0o700, exist_ok=True)
            write_atomic(os.path.join(self.records, version + ".json"), json.dumps(record).encode(), 0o600)
        return record, None

    # --- trust -----------------------------------------------------------------------------

    def trusted_keys(self, result):
        p = self.p
        keys = pinned_keys(p["trust_dir"])
        wanted = p["expected_key_content"]
        if wanted is not None:
            wanted_id = key_id_of_pem(wanted)
            if wanted_id is None:
                raise Refused("hybridctl_bundle_public_key_file is not a PEM Ed25519 public key")
            if not keys and p["trust_first_key"]:
                result.update(changed=True, key_pinned=wanted_id)
                if not self.module.check_mode:
                    keys = {wanted_id: os.path.join(p["trust_dir"], "keys", pin_key(p["trust_dir"], wanted.encode()) + ".pem")}
            elif wanted_id not in keys:
                raise Refused(f"key {wanted_id} is not trusted on {p['host']} (trusted: {', '.join(sorted(keys)) or 'none'}); "
                              "adding or rotating a key is done explicitly with `hybridctl bundle trust add`")
        if not keys and not result.get("key_pinned"):
            raise Refused(f"{p['host']} has no trusted model-signing key; pin the publisher's key with "
                          "`hybridctl bundle trust add` (or pass hybridctl_bundle_public_key_file on the first sync)")
        return keys

