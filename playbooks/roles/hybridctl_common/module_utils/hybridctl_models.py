# Runs ON THE HOST (imported by library/hybridctl_model_host.py): the rules that decide whether
# a model version may be installed and activated there. They mirror hybridctl.core.deploy.bundle
# (key IDs, version order, manifest checks); the host enforces them itself because the
# controller and the bundle directory are not trusted to.
#
# Nothing here follows a symlink: entries are examined with lstat, files are opened with
# O_NOFOLLOW and hashed through the descriptor that was checked, and the signature is checked
# on the manifest bytes that are then parsed.
from __future__ import annotations

import base64
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
import time

MANIFEST, SIGNATURE = "manifest.json", "manifest.sig"
# DER prefix of an Ed25519 SubjectPublicKeyInfo; the 32 raw key bytes follow it.
_ED25519_SPKI_PREFIX = bytes.fromhex("302a300506032b6570032100")
_KEY_ID_RE = re.compile(r"^[0-9a-f]{32}$")
_CHUNK = 1024 * 1024


class Refused(Exception):
    """The host will not do this; `status` says why in one word (refused, busy, no_space)."""

    def __init__(self, message, status="refused"):
        super().__init__(message)
        self.status = status


# --- trust: pinned keys, by key ID ---------------------------------------------------------

def key_id_of_pem(pem):
    """The key ID of a PEM Ed25519 public key (as hybridctl.core.deploy.bundle.key_id), or None."""
    text = pem.decode("ascii", "replace") if isinstance(pem, bytes) else pem
    match = re.search(r"-----BEGIN PUBLIC KEY-----(.+?)-----END PUBLIC KEY-----", text, re.S)
    if match is None:
        return None
    try:
        der = base64.b64decode("".join(match.group(1).split()), validate=True)
    except ValueError:
        return None
    if len(der) != len(_ED25519_SPKI_PREFIX) + 32 or not der.startswith(_ED25519_SPKI_PREFIX):
        return None
    return hashlib.sha256(der[len(_ED25519_SPKI_PREFIX):]).hexdigest()[:32]


def pinned_keys(trust_dir):
    """{key ID: path} of the keys pinned in <trust_dir>/keys; a file not named after its key is refused."""
    keys_dir = os.path.join(trust_dir, "keys")
    pinned = {}
    if not os.path.isdir(keys_dir):
        return pinned
    for name in sorted(os.listdir(keys_dir)):
        if not name.endswith(".pem"):
            continue
        path = os.path.join(keys_dir, name)
        data = read_regular(path)
        key_id = key_id_of_pem(data)
        if key_id is None or name != key_id + ".pem":
            raise Refused(f"{path} is not the Ed25519 public key {name[:-4]}: fix or remove it with "
                          "`hybridctl bundle trust`")
        pinned[key_id] = path
    return pinned


def pin_key(trust_dir, pem_bytes):
    """Pins a key; returns its ID. The file appears atomically, mode 0644, owned by root."""
    key_id = key_id_of_pem(pem_bytes)
    if key_id is None:
        raise Refused("the key to trust is not a PEM Ed25519 public key")
    keys_dir = os.path.join(trust_dir, "keys")
    os.makedirs(keys_dir, mode=0o755, exist_ok=True)
    write_atomic(os.path.join(keys_dir, key_id + ".pem"), pem_bytes, 0o644)
    return key_id


def unpin_key(trust_dir, key_id):
    if not _KEY_ID_RE.match(key_id):
        raise Refused(f"{key_id!r} is not a key ID (32 hex digits)")
    path = os.path.join(trust_dir, "keys", key_id + ".pem")
    if os.path.lexists(path):
        os.unlink(path)
        return True
    return False


# --- versions ------------------------------------------------------------------------------

def version_key(version):
    """Natural order of version names, as hybridctl.core.deploy.bundle.version_order: digit runs compare
    as numbers, other runs as text, a name that is a prefix of another comes first
    (v9 < v10, 2026.05.1 < 2026.05.2 < 2026.05.2a)."""
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.findall(r"\d+|[^\d]+", version))


# --- files, never through a symlink --------------------------------------------------------

def read_regular(path, limit=16 * 1024 * 1024):
    """The bytes of a regular file, refusing symlinks and anything else."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(f"{path}: not a regular file (symlinks are not allowed)") from None
        raise
    with os.fdopen(fd, "rb") as stream:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise Refused(f"{path}: not a regular file")
        return stream.read(limit + 1)[:limit]


def write_atomic(path, data, mode):
    directory = os.path.dirname(path)
    fd, temporary = tempfile.mkstemp(dir=directory, prefix=".hybridctl-")
    try:
        with os.fdopen(fd, "wb") as stream:
            stream.write(data)
        os.chmod(temporary, mode)
        os.rename(temporary, path)
    except BaseException:
        if os.path.lexists(temporary):
            os.unlink(temporary)
        raise


def remove(path):
    if os.path.islink(path) or os.path.isfile(path):
        os.unlink(path)
    elif os.path.isdir(path):
        shutil.rmtree(path)


def entries(directory):
    """{relative path: lstat} of everything below `directory` (symlinks are entries, never entered)."""
    found = {}
    for parent, dirs, files in os.walk(directory, followlinks=False):
        for name in dirs + files:
            path = os.path.join(parent, name)
            found[os.path.relpath(path, directory)] = os.lstat(path)
    return found


def hash_regular(path, expected_size):
    """(sha256, stat) of a regular file read through one O_NOFOLLOW descriptor, or a problem text."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        return None, None, ("not a regular file" if exc.errno == errno.ELOOP else exc.strerror)
    with os.fdopen(fd, "rb") as stream:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None, None, "not a regular file"
        if info.st_size != expected_size:
            return None, info, f"size is {info.st_size}, the manifest says {expected_size}"
        digest = hashlib.sha256()
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
        return digest.hexdigest(), info, None


def file_record(info):
    """What metadata verification compares: a change to any of these means a re-hash."""
    return [info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]


# --- links ---------------------------------------------------------------------------------

def read_link(path):
    return os.path.basename(os.readlink(path)) if os.path.islink(path) else ""


def switch_link(link, target):
    # A new symlink under a temporary name, renamed over the old one: rename(2) is atomic, so
    # readers see the old target or the new one, never a missing link.
    temporary = link + ".hybridctl-tmp"
    remove(temporary)
    os.symlink(target, temporary)
    os.rename(temporary, link)


# --- the per-model lock --------------------------------------------------------------------

class ModelLock:
    """A sync of a model holds its lock from the first module run to the last (one owner token).

    Each module run takes flock(<model_dir>/.lock) for its own critical section; the owner
    record (.sync-owner) carries the run across module runs. An owner whose record and upload
    have not changed for `stale_s` seconds is dead (its run was killed) and is replaced.
    """

    def __init__(self, model_dir, stale_s):
        self.model_dir = model_dir
        self.stale_s = stale_s
        self.owner_path = os.path.join(model_dir, ".sync-owner")
        self._fd = None

    def __enter__(self):
        self._fd = os.open(os.path.join(self.model_dir, ".lock"), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(self._fd, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        os.close(self._fd)
        self._fd = None

    def owner(self):
        try:
            with open(self.owner_path, encoding="utf-8") as stream:
                return json.load(stream)
        except (OSError, ValueError):
            return None

    def _last_activity(self, record):
        times = [os.lstat(self.owner_path).st_mtime]
        upload = record.get("upload")
        if upload and os.path.isdir(upload):
            times += [info.st_mtime for info in entries(upload).values()]
        return max(times)

    def claim(self, token, upload, version, model, host):
        record = self.owner()
        if record and record.get("token") != token:
            idle_s = time.time() - self._last_activity(record)
            if idle_s < self.stale_s:
                raise Refused(f"another sync of {model} is running on {host} (version {record.get('version', '?')}, "
                              f"started {record.get('since', '?')}); run again when it has finished",
                              status="busy")
        write_atomic(self.owner_path, json.dumps({
            "token": token, "upload": upload, "version": version,
            "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}).encode(), 0o600)

    def check(self, token, model, host):
        record = self.owner()
        if not record or record.get("token") != token:
            raise Refused(f"the lock on {model} at {host} was taken over by another sync after this one "
                          "stalled; run again", status="busy")

    def release(self, token):
        record = self.owner()
        if record and record.get("token") == token:
            os.unlink(self.owner_path)


def mount_point(path):
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def own_by_root(directory):
    for parent, _dirs, files in os.walk(directory):
        for name in files:
            path = os.path.join(parent, name)
            if os.geteuid() == 0:
                os.lchown(path, 0, 0)
            os.chmod(path, 0o644)
        if os.geteuid() == 0:
            os.lchown(parent, 0, 0)
        os.chmod(parent, 0o755)
