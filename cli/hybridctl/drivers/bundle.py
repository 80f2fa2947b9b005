"""Bundles on disk: key files, creating, signing and verifying bundle directories.

The decisions (what the manifest says, whether a signature or a file is good) live in
``hybridctl.core.deploy.bundle``; this module only reads and writes files. Private keys are
loaded, used and dropped inside one function: they never reach a log, a repr or an error.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import (
    BestAvailableEncryption,
    Encoding,
    NoEncryption,
    PrivateFormat,
    PublicFormat,
    load_pem_private_key,
    load_pem_public_key,
)
from pydantic import ValidationError

from hybridctl.core.deploy.bundle import (
    MANIFEST_NAME,
    RESERVED_NAMES,
    SIGNATURE_NAME,
    BundleFile,
    BundleIntegrityError,
    BundleKeyError,
    BundleManifest,
    BundleManifestError,
    BundleVerification,
    DatasetDigest,
    ObservedFile,
    SignatureStatus,
    artifact_path_problem,
    canonical_manifest_bytes,
    check_files,
    check_signature,
    key_fingerprint,
    parse_manifest,
    sha256_hex,
    sign_manifest,
)
from hybridctl.drivers.filereader import (
    KEY_LIMIT,
    MANIFEST_LIMIT,
    SIGNATURE_LIMIT,
    FileRefusedError,
    describe_mode,
    read_bounded,
)
from hybridctl.drivers.files import atomic_write_bytes
from hybridctl.errors import ExitCode, Location, UsageError

_CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True)
class KeyPairInfo:
    private_key_path: Path
    public_key_path: Path
    fingerprint: str


@dataclass(frozen=True)
class SignatureInfo:
    bundle: Path
    manifest_sha256: str
    key_fingerprint: str


def generate_keypair(private_path: Path, public_path: Path, *, passphrase: bytes | None = None,
                     overwrite: bool = False) -> KeyPairInfo:
    """Create an Ed25519 key pair as PEM files; the private key file is mode 0600 from birth."""
    for path in (private_path, public_path):
        if path.exists() and not overwrite:
            raise UsageError(f"{path} already exists; refusing to overwrite a key",
                             hint="choose another path, or remove the old key deliberately")
    private_key = Ed25519PrivateKey.generate()
    encryption = BestAvailableEncryption(passphrase) if passphrase else NoEncryption()
    private_pem = private_key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, encryption)
    public_key = private_key.public_key()
    public_pem = public_key.public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    private_path.parent.mkdir(parents=True, exist_ok=True)
    public_path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(private_path, private_pem, mode=0o600)
    atomic_write_bytes(public_path, public_pem, mode=0o644)
    return KeyPairInfo(private_path, public_path, key_fingerprint(public_key))


def _read_key_file(path: Path, what: str) -> bytes:
    try:
        return read_bounded(path, KEY_LIMIT, what=f"a {what} file")
    except FileNotFoundError:
        raise BundleKeyError(f"{what} {path} does not exist",
                             hint="create a key pair with `hybridctl bundle keygen`") from None
    except FileRefusedError as exc:
        raise BundleKeyError(exc.message, location=exc.location, hint=exc.hint) from None
    except OSError as exc:
        raise BundleKeyError(f"{what} {path} cannot be read: {exc.strerror}") from None


def _read_own_file(bundle_dir: Path, name: str, limit: int) -> bytes:
    """manifest.json or manifest.sig: a regular file in the bundle directory, never a symbolic link
    (the bytes verified are the bundle's own), nor a device or a FIFO, and bounded in size.
    FileNotFoundError when absent; BundleManifestError (refused, exit 4) when not a regular file."""
    path = bundle_dir / name
    try:
        return read_bounded(path, limit, what=f"a bundle's {name}", follow_symlinks=False,
                            hint=f"a bundle's {name} is a regular file in the bundle directory, never a link: "
                                 "copy the bundle again, or recreate it with `hybridctl bundle create`")
    except FileRefusedError as exc:
        raise BundleManifestError(exc.message, location=exc.location, hint=exc.hint) from None
    except IsADirectoryError:
        raise BundleManifestError(f"{path}: a directory, not a regular file", location=Location(str(path)),
                                  hint="copy the bundle again, or recreate it with `hybridctl bundle create`") from None


def load_public_key(path: Path) -> Ed25519PublicKey:
    data = _read_key_file(path, "public key")
    try:
        key = load_pem_public_key(data)
    except (ValueError, TypeError):
        raise BundleKeyError(f"{path} is not a PEM public key", location=Location(str(path))) from None
    if not isinstance(key, Ed25519PublicKey):
        raise BundleKeyError(f"{path} is not an Ed25519 public key", location=Location(str(path)))
    return key


def _load_private_key(path: Path, passphrase: bytes | None) -> Ed25519PrivateKey:
    data = _read_key_file(path, "private key")
    # The loader's own exception is not chained into ours (not even as __context__): its
    # message could quote parts of the file.
    problem: str | None = None
    try:
        key = load_pem_private_key(data, password=passphrase)
    except TypeError:  # "encrypted but no passphrase" and "passphrase given but not encrypted"
        problem = "the passphrase does not fit this key (missing, or given for an unencrypted key)"
    except ValueError:
        problem = "not a readable PEM private key, or the passphrase is wrong"
    if problem is not None:
        raise BundleKeyError(f"{path}: {problem}", location=Location(str(path)))
    if not isinstance(key, Ed25519PrivateKey):
        raise BundleKeyError(f"{path} is not an Ed25519 private key", location=Location(str(path)))
    return key


def file_sha256(path: Path) -> str:
    """The SHA-256 of a regular file, streamed: never through a symbolic link, never a FIFO or a device
    (swapped in after the caller's check: the open does not block, and what was opened is checked)."""
    digest = hashlib.sha256()
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise UsageError(f"{path}: {describe_mode(mode)}, not a regular file", location=Location(str(path)))
        while chunk := handle.read(_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


# Deeper than this, a bundle is refused: Python 3.11's os.walk recursed, and 1,200 nested directories crashed
# `bundle verify` (RecursionError); no model's artifacts nest like that
MAX_DEPTH = 32


def _walk(root: Path, *, directories: bool = False) -> Iterable[tuple[str, Path]]:
    """Every entry below ``root`` except directories (with `directories`, those too, each before what it holds),
    as (bundle-relative posix path, path), depth first, each directory's entries by name. A symlinked directory is
    an entry, never entered."""
    pending: list[tuple[Path, int]] = [(root, 0)]
    while pending:
        directory, depth = pending.pop()
        if depth > MAX_DEPTH:
            raise UsageError(f"{directory}: nested more than {MAX_DEPTH} directories deep inside the bundle",
                             location=Location(str(directory)), hint="flatten the artifacts' directories")
        with os.scandir(directory) as entries:
            found = sorted(entries, key=lambda e: e.name)
        for entry in found:
            if entry.is_dir(follow_symlinks=False) and not directories:
                continue
            path = Path(entry.path)
            yield path.relative_to(root).as_posix(), path
        pending.extend((Path(e.path), depth + 1) for e in reversed(found) if e.is_dir(follow_symlinks=False))


def observe_files(bundle_dir: Path, expected_sizes: Mapping[str, int] | None = None) -> dict[str, ObservedFile]:
    """What is in the bundle directory; files whose size already disagrees are not hashed."""
    observed: dict[str, ObservedFile] = {}
    for relative, path in _walk(bundle_dir):
        if relative in RESERVED_NAMES:
            continue
        if path.is_symlink() or not path.is_file():
            observed[relative] = ObservedFile(size_bytes=0, sha256=None, regular=False)
            continue
        size = path.stat().st_size
        # a file the manifest does not list is reported by its name alone: hashing it (4 GiB planted beside the
        # artifacts) only delayed the verdict
        listed = expected_sizes is None or relative in expected_sizes
        expected = None if expected_sizes is None else expected_sizes.get(relative)
        digest = file_sha256(path) if listed and (expected is None or expected == size) else None
        observed[relative] = ObservedFile(size_bytes=size, sha256=digest)
    return observed


def _require_dir(bundle_dir: Path) -> None:
    if not bundle_dir.is_dir():
        raise UsageError(f"bundle directory {bundle_dir} does not exist", location=Location(str(bundle_dir)))


def create_bundle(bundle_dir: Path, *, model: str, version: str, source_commit: str,
                  datasets: Iterable[DatasetDigest] = (), evaluation: Mapping[str, float] | None = None,
                  rollback_to: str | None = None, source_dir: Path | None = None) -> BundleManifest:
    """Write manifest.json for the artifacts in ``bundle_dir`` (copied from ``source_dir`` first).

    Any old manifest.sig is removed: it cannot cover the new manifest.
    """
    if source_dir is not None:
        if not source_dir.is_dir():
            raise UsageError(f"artifact directory {source_dir} does not exist")
        if bundle_dir.exists() and any(bundle_dir.iterdir()):
            raise UsageError(f"{bundle_dir} is not empty", hint="create the bundle in a new directory")
        _copy_source(_source_entries(source_dir), bundle_dir)
    _require_dir(bundle_dir)
    files: list[BundleFile] = []
    for relative, path in _walk(bundle_dir):
        if relative in RESERVED_NAMES:
            continue
        problem = artifact_path_problem(relative)
        if problem is not None:
            raise UsageError(f"cannot bundle {path}: {problem}", location=Location(str(path)))
        if path.is_symlink() or not path.is_file():
            raise UsageError(f"cannot bundle {path}: not a regular file", location=Location(str(path)),
                             hint="copy the target in place of the symlink")
        files.append(BundleFile(path=relative, sha256=file_sha256(path), size_bytes=path.stat().st_size))
    if not files:
        raise UsageError(f"{bundle_dir} holds no artifact files to bundle")
    try:
        manifest = BundleManifest(model=model, version=version, source_commit=source_commit,
                                  files=tuple(sorted(files, key=lambda f: f.path)),
                                  datasets=tuple(sorted(datasets, key=lambda d: d.name)),
                                  evaluation=dict(evaluation or {}), rollback_to=rollback_to)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        shown = first.get("input")
        option = _CREATE_OPTIONS.get(field.split(".")[0], "value")
        raise UsageError(f"cannot create the manifest: {field} {shown!r}: {first['msg'].removeprefix('Value error, ')}",
                         hint=f"pass another {option}") from None
    (bundle_dir / SIGNATURE_NAME).unlink(missing_ok=True)
    atomic_write_bytes(bundle_dir / MANIFEST_NAME, canonical_manifest_bytes(manifest))
    return manifest


def _source_entries(source_dir: Path) -> list[tuple[str, Path, os.stat_result]]:
    """What `--from` holds, walked as a bundle is (bounded at MAX_DEPTH, never through a link) and checked whole
    before a byte is copied: only regular files and directories, at paths a manifest may list. A device (a
    character device copied without bound), a FIFO, a socket or a symbolic link is refused, named."""
    entries: list[tuple[str, Path, os.stat_result]] = []
    for relative, path in _walk(source_dir, directories=True):
        info = os.lstat(path)
        if stat.S_ISDIR(info.st_mode):
            entries.append((relative, path, info))
            continue
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"cannot bundle {path}: {describe_mode(info.st_mode)}, not a regular file or a "
                             "directory; nothing was copied",
                             hint="copy the file itself in its place, or move it out of the --from directory")
        if relative in RESERVED_NAMES:
            continue  # the bundle's own files are made again below
        problem = artifact_path_problem(relative)
        if problem is not None:
            raise UsageError(f"cannot bundle {path}: {problem}; nothing was copied")
        entries.append((relative, path, info))
    return entries


def _copy_source(entries: Iterable[tuple[str, Path, os.stat_result]], bundle_dir: Path) -> None:
    """Copy the checked entries: each file opened without following a link and checked again once open (an
    entry swapped for a FIFO or a device since the walk is refused, not read)."""
    bundle_dir.mkdir(parents=True, exist_ok=True)
    for relative, path, info in entries:
        target = bundle_dir / relative
        if stat.S_ISDIR(info.st_mode):
            target.mkdir(exist_ok=True)
            continue
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        with os.fdopen(descriptor, "rb") as source:
            mode = os.fstat(descriptor).st_mode
            if not stat.S_ISREG(mode):
                raise UsageError(f"cannot bundle {path}: {describe_mode(mode)}, not a regular file",
                                 location=Location(str(path)))
            written = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                              stat.S_IMODE(info.st_mode) | stat.S_IWUSR)
            with os.fdopen(written, "wb") as out:
                shutil.copyfileobj(source, out, _CHUNK_BYTES)


_CREATE_OPTIONS = {"model": "--model", "version": "--version", "source_commit": "--source-commit",
                   "datasets": "--dataset", "evaluation": "--metric", "rollback_to": "--rollback-to"}


class ManifestMissingError(BundleManifestError):
    """No manifest to sign: a missing input (exit 2), not a bundle refused as untrustworthy (exit 4)."""

    exit_code = ExitCode.USAGE


def read_manifest(bundle_dir: Path) -> tuple[bytes, BundleManifest]:
    path = bundle_dir / MANIFEST_NAME
    try:
        data = _read_own_file(bundle_dir, MANIFEST_NAME, MANIFEST_LIMIT)
    except FileNotFoundError:
        raise ManifestMissingError(f"{bundle_dir} has no {MANIFEST_NAME}", location=Location(str(bundle_dir)),
                                  hint="create it with `hybridctl bundle create`") from None
    return data, parse_manifest(data, source=str(path))


def sign_bundle(bundle_dir: Path, private_key_path: Path, *, passphrase: bytes | None = None) -> SignatureInfo:
    """Sign the manifest after checking that the files still match it.

    A manifest that is valid but not in canonical form is rewritten canonically first, so
    that the signed bytes are always the canonical ones.
    """
    _require_dir(bundle_dir)
    data, manifest = read_manifest(bundle_dir)
    problems = check_files(manifest, observe_files(bundle_dir, {f.path: f.size_bytes for f in manifest.files}))
    if problems:
        raise BundleIntegrityError(
            f"refusing to sign {bundle_dir}: its files do not match {MANIFEST_NAME}: "
            + "; ".join(p.describe() for p in problems),
            problems=problems, location=Location(str(bundle_dir)),
            hint="run `hybridctl bundle create` again to record the current files",
        )
    canonical = canonical_manifest_bytes(manifest)
    if canonical != data:
        atomic_write_bytes(bundle_dir / MANIFEST_NAME, canonical)
    private_key = _load_private_key(private_key_path, passphrase)
    signature = sign_manifest(private_key, canonical)
    fingerprint = key_fingerprint(private_key.public_key())
    del private_key
    atomic_write_bytes(bundle_dir / SIGNATURE_NAME, signature)
    return SignatureInfo(bundle_dir, sha256_hex(canonical), fingerprint)


def check_bundle(bundle_dir: Path, public_key_path: Path) -> BundleVerification:
    """Verify a bundle and describe the outcome; never raises for a bad bundle, only for bad input.

    Order: the signature over the exact manifest bytes, then each listed file's size and
    sha256, then that nothing unlisted is present. Files are not read when the signature fails.
    """
    _require_dir(bundle_dir)
    public_key = load_public_key(public_key_path)
    try:
        manifest_bytes = _read_own_file(bundle_dir, MANIFEST_NAME, MANIFEST_LIMIT)
        try:
            signature: bytes | None = _read_own_file(bundle_dir, SIGNATURE_NAME, SIGNATURE_LIMIT)
        except FileNotFoundError:
            signature = None
    except FileNotFoundError:
        return BundleVerification(
            str(bundle_dir), key_fingerprint(public_key), SignatureStatus.NOT_CHECKED,
            manifest_error=BundleManifestError(f"{bundle_dir} has no {MANIFEST_NAME}",
                                               location=Location(str(bundle_dir)),
                                               hint="this is not a bundle, or its copy is incomplete"),
        )
    except BundleManifestError as exc:
        return BundleVerification(str(bundle_dir), key_fingerprint(public_key), SignatureStatus.NOT_CHECKED,
                                  manifest_error=exc)
    verification = check_signature(str(bundle_dir), manifest_bytes, signature, public_key)
    if verification.manifest is None:
        return verification
    manifest = verification.manifest
    observed = observe_files(bundle_dir, {f.path: f.size_bytes for f in manifest.files})
    return BundleVerification(
        verification.bundle, verification.key_fingerprint, verification.signature, manifest=manifest,
        manifest_sha256=verification.manifest_sha256, problems=check_files(manifest, observed),
    )


def verify_bundle(bundle_dir: Path, public_key_path: Path) -> BundleVerification:
    """Like ``check_bundle`` but raises the precise BundleError when the bundle is not trusted."""
    verification = check_bundle(bundle_dir, public_key_path)
    error = verification.error()
    if error is not None:
        raise error
    return verification
