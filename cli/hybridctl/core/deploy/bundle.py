"""Signed model bundles: the manifest, its canonical bytes, and the checks that decide trust.

A bundle is a directory of artifact files plus ``manifest.json`` (what the files must be)
and ``manifest.sig`` (an Ed25519 signature over the exact manifest bytes). This module
decides; ``hybridctl.drivers.bundle`` reads and writes the files. The same rules are
enforced again on each host by ``playbooks/model-sync.yml``, with openssl and sha256sum.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from hybridctl.errors import ExitCode, HybridctlError, Location, UsageError

BUNDLE_FORMAT: Literal[1] = 1
MANIFEST_NAME = "manifest.json"
SIGNATURE_NAME = "manifest.sig"
RESERVED_NAMES = frozenset({MANIFEST_NAME, SIGNATURE_NAME})

# Model and version names become directory names on every host, so they are kept to
# characters that need no quoting and can never climb out of the models directory.
# Every pattern here is used with fullmatch: `$` would also match before a trailing newline.
BUNDLE_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,127}")
# Artifact paths also end up in sha256sum check lists on the hosts: no spaces, no newlines.
_SEGMENT_RE = re.compile(r"[A-Za-z0-9._+=@-]{1,255}")
SHA256_HEX_RE = re.compile(r"[0-9a-f]{64}")
_KEY_VALUE_RE = re.compile(r"([^=\s]+)=(\S+)")


class BundleError(HybridctlError):
    """A bundle that must not be trusted or deployed."""

    exit_code = ExitCode.REFUSED


class BundleManifestError(BundleError):
    """manifest.json is missing, unreadable or breaks the manifest format."""


class BundleSignatureError(BundleError):
    """manifest.sig is missing or does not verify with the given public key."""


class BundleIntegrityError(BundleError):
    """The files in the bundle differ from what the signed manifest lists."""

    def __init__(self, message: str, *, problems: tuple[FileProblem, ...], location: Location | None = None,
                 hint: str | None = None) -> None:
        super().__init__(message, location=location, hint=hint)
        self.problems = problems


class BundleKeyError(UsageError):
    """A key file is missing, unreadable or not an Ed25519 key. Never carries key material."""


class BundleFile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str = Field(description="Path of the artifact inside the bundle, '/'-separated, relative.")
    sha256: str = Field(description="Lower-case hex SHA-256 of the file's bytes.")
    size_bytes: int = Field(ge=0, description="Size of the file in bytes.")

    @field_validator("path")
    @classmethod
    def _safe_path(cls, path: str) -> str:
        problem = artifact_path_problem(path)
        if problem is not None:
            raise ValueError(problem)
        return path

    @field_validator("sha256")
    @classmethod
    def _hex_digest(cls, digest: str) -> str:
        if not SHA256_HEX_RE.fullmatch(digest):
            raise ValueError("must be 64 lower-case hex characters")
        return digest


class DatasetDigest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str = Field(min_length=1, description="Dataset name, as in the inventory.")
    digest: str = Field(min_length=1, description="Content digest of the dataset snapshot, e.g. sha256:<hex>.")


class BundleManifest(BaseModel):
    """What a bundle contains and where it came from. Signed as canonical JSON."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = Field(default=BUNDLE_FORMAT, description="Manifest format version.")
    model: str = Field(description="Model name; the directory under the hosts' models dir.")
    version: str = Field(description="Model version; immutable once published.")
    source_commit: str = Field(min_length=1, description="Commit of the code that produced the artifacts.")
    files: tuple[BundleFile, ...] = Field(description="Every artifact file, sorted by path.")
    datasets: tuple[DatasetDigest, ...] = Field(default=(), description="Datasets the model was built from.")
    evaluation: dict[str, float] = Field(default_factory=dict, description="Evaluation summary: metric -> value.")
    rollback_to: str | None = Field(default=None, description="Version to return to if this one misbehaves.")

    @field_validator("model", "version")
    @classmethod
    def _safe_name(cls, name: str) -> str:
        if not BUNDLE_NAME_RE.fullmatch(name):
            raise ValueError("must start with a letter or digit and use only letters, digits and . _ + -")
        return name

    @field_validator("rollback_to")
    @classmethod
    def _safe_rollback(cls, name: str | None) -> str | None:
        if name is not None and not BUNDLE_NAME_RE.fullmatch(name):
            raise ValueError("must be a version name: letters, digits and . _ + -")
        return name

    @field_validator("evaluation")
    @classmethod
    def _finite_metrics(cls, evaluation: dict[str, float]) -> dict[str, float]:
        for metric, value in evaluation.items():
            if not metric or not math.isfinite(value):
                raise ValueError(f"metric {metric!r} must have a name and a finite value")
        return evaluation

    @model_validator(mode="after")
    def _consistent(self) -> BundleManifest:
        paths = [f.path for f in self.files]
        if paths != sorted(paths):
            raise ValueError("files must be sorted by path")
        if len(set(paths)) != len(paths):
            raise ValueError("files lists a path twice")
        names = [d.name for d in self.datasets]
        if len(set(names)) != len(names):
            raise ValueError("datasets lists a name twice")
        if self.rollback_to == self.version:
            raise ValueError("rollback_to cannot be the bundle's own version")
        return self

    @property
    def total_size_bytes(self) -> int:
        return sum(f.size_bytes for f in self.files)


def artifact_path_problem(path: str) -> str | None:
    """Why ``path`` cannot name an artifact in a bundle, or None when it can."""
    if path in RESERVED_NAMES:
        return f"{path} is reserved for the bundle's own metadata"
    segments = path.split("/")
    for segment in segments:
        if segment in ("", ".", ".."):
            return f"{path!r} must be a relative path without empty, '.' or '..' parts"
        if not _SEGMENT_RE.fullmatch(segment):
            return f"{path!r} may use only letters, digits and . _ + = @ - in its parts"
    return None


def canonical_manifest_bytes(manifest: BundleManifest) -> bytes:
    """The exact bytes that are signed: sorted keys, no insignificant whitespace, UTF-8."""
    document = manifest.model_dump(mode="json")
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode("utf-8")


def _reject_duplicate_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    keys = [k for k, _ in pairs]
    duplicates = sorted({k for k in keys if keys.count(k) > 1})
    if duplicates:
        raise ValueError(f"duplicate key {duplicates[0]!r}")
    return dict(pairs)


def parse_manifest(data: bytes, *, source: str = MANIFEST_NAME) -> BundleManifest:
    """Parse manifest bytes; errors name the file and, for JSON syntax, the line and column."""
    try:
        document = json.loads(data.decode("utf-8"), object_pairs_hook=_reject_duplicate_keys)
    except UnicodeDecodeError:
        raise BundleManifestError(f"{source} is not UTF-8 text", location=Location(source)) from None
    except json.JSONDecodeError as exc:
        raise BundleManifestError(f"{source} is not valid JSON: {exc.msg}",
                                  location=Location(source, exc.lineno, exc.colno)) from None
    except ValueError as exc:
        raise BundleManifestError(f"{source}: {exc}", location=Location(source)) from None
    try:
        return BundleManifest.model_validate(document)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(top level)"
        raise BundleManifestError(
            f"{source}: field {field}: {first['msg']}", location=Location(source),
            hint="recreate the manifest with `hybridctl bundle create`",
        ) from None


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def key_id(public_key: Ed25519PublicKey) -> str:
    """The name a public key is pinned under on the hosts: 32 hex digits of SHA-256 of its raw bytes.

    The hosts compute the same from the PEM file (hybridctl_models.py), so a pinned key file
    whose name does not match its content is noticed.
    """
    raw = public_key.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return hashlib.sha256(raw).hexdigest()[:32]


def version_order(version: str) -> tuple[tuple[int, int, str], ...]:
    """Sort key of version names: digit runs compare as numbers, other runs as text, and a name
    that is a prefix of another comes first (v9 < v10, 2026.05.1 < 2026.05.2 < 2026.05.2a).

    The hosts apply the same order (playbooks' hybridctl_models.version_key): a sync never
    activates a version that orders at or below the active one; going back is a rollback.
    """
    return tuple((0, int(part), "") if part.isdigit() else (1, 0, part)
                 for part in re.findall(r"\d+|[^\d]+", version))


def key_fingerprint(public_key: Ed25519PublicKey) -> str:
    """A short, stable name for a public key, safe to log: ``SHA256:`` and its key ID."""
    return "SHA256:" + key_id(public_key)


def sign_manifest(private_key: Ed25519PrivateKey, manifest_bytes: bytes) -> bytes:
    return private_key.sign(manifest_bytes)


def signature_matches(public_key: Ed25519PublicKey, manifest_bytes: bytes, signature: bytes) -> bool:
    try:
        public_key.verify(signature, manifest_bytes)
    except InvalidSignature:
        return False
    return True


class ProblemKind(StrEnum):
    MISSING = "missing"
    SIZE_MISMATCH = "size_mismatch"
    SHA256_MISMATCH = "sha256_mismatch"
    UNLISTED = "unlisted"
    NOT_A_FILE = "not_a_file"


@dataclass(frozen=True)
class ObservedFile:
    """What is actually on disk for one path of a bundle directory."""

    size_bytes: int
    sha256: str | None  # None: not hashed (not a regular file, or the size already differs)
    regular: bool = True


@dataclass(frozen=True)
class FileProblem:
    kind: ProblemKind
    path: str
    expected: str | None = None
    actual: str | None = None

    def describe(self) -> str:
        if self.kind is ProblemKind.MISSING:
            return f"{self.path}: listed in the manifest but missing"
        if self.kind is ProblemKind.UNLISTED:
            return f"{self.path}: present but not listed in the manifest"
        if self.kind is ProblemKind.NOT_A_FILE:
            return f"{self.path}: not a regular file (symlinks and devices are not allowed)"
        what = "size" if self.kind is ProblemKind.SIZE_MISMATCH else "sha256"
        return f"{self.path}: {what} is {self.actual}, the manifest says {self.expected}"


def check_files(manifest: BundleManifest, observed: Mapping[str, ObservedFile]) -> tuple[FileProblem, ...]:
    """Compare the files on disk (manifest.json and manifest.sig excluded) with the manifest."""
    problems: list[FileProblem] = []
    for listed in manifest.files:
        seen = observed.get(listed.path)
        if seen is None:
            problems.append(FileProblem(ProblemKind.MISSING, listed.path))
        elif not seen.regular:
            problems.append(FileProblem(ProblemKind.NOT_A_FILE, listed.path))
        elif seen.size_bytes != listed.size_bytes:
            problems.append(FileProblem(ProblemKind.SIZE_MISMATCH, listed.path,
                                        str(listed.size_bytes), str(seen.size_bytes)))
        elif seen.sha256 != listed.sha256:
            problems.append(FileProblem(ProblemKind.SHA256_MISMATCH, listed.path, listed.sha256,
                                        seen.sha256 or "(not hashed)"))
    listed_paths = {f.path for f in manifest.files}
    for path in sorted(set(observed) - listed_paths - RESERVED_NAMES):
        problems.append(FileProblem(ProblemKind.UNLISTED, path))
    return tuple(sorted(problems, key=lambda p: (p.path, p.kind.value)))


class SignatureStatus(StrEnum):
    VALID = "valid"
    MISSING = "missing"
    INVALID = "invalid"
    NOT_CHECKED = "not_checked"  # no manifest to check it against


@dataclass(frozen=True)
class BundleVerification:
    """The outcome of verifying one bundle directory; ``ok`` only when everything holds."""

    bundle: str
    key_fingerprint: str
    signature: SignatureStatus
    manifest: BundleManifest | None = None
    manifest_sha256: str | None = None
    problems: tuple[FileProblem, ...] = ()
    manifest_error: BundleManifestError | None = None

    @property
    def ok(self) -> bool:
        return (self.signature is SignatureStatus.VALID and self.manifest is not None
                and self.manifest_error is None and not self.problems)

    def error(self) -> BundleError | None:
        """The precise error to raise for this outcome, or None when the bundle is trusted."""
        where = Location(self.bundle)
        if self.manifest_error is not None:
            return self.manifest_error
        if self.signature is SignatureStatus.MISSING:
            return BundleSignatureError(
                f"bundle {self.bundle} is not signed: {SIGNATURE_NAME} is missing", location=where,
                hint=f"sign it with `hybridctl bundle sign {self.bundle} --key PRIVATE_KEY.pem`",
            )
        if self.signature is SignatureStatus.INVALID:
            return BundleSignatureError(
                f"{SIGNATURE_NAME} does not verify {MANIFEST_NAME} with public key {self.key_fingerprint}: "
                f"{MANIFEST_NAME} was changed after signing, or the bundle was signed with another key",
                location=where,
                hint="check that you hold the publisher's public key; never re-sign a bundle you did not build",
            )
        if self.problems:
            details = "; ".join(p.describe() for p in self.problems)
            count = len(self.problems)
            return BundleIntegrityError(
                f"bundle {self.bundle} does not match its signed manifest "
                f"({count} problem{'s' if count > 1 else ''}): {details}",
                problems=self.problems, location=where,
                hint="the files were modified or the copy is incomplete; fetch the bundle again",
            )
        return None


def check_signature(bundle: str, manifest_bytes: bytes, signature: bytes | None,
                    public_key: Ed25519PublicKey) -> BundleVerification:
    """First stage of verification: trust the manifest only when the signature holds."""
    fingerprint = key_fingerprint(public_key)
    digest = sha256_hex(manifest_bytes)
    if signature is None:
        return BundleVerification(bundle, fingerprint, SignatureStatus.MISSING, manifest_sha256=digest)
    if not signature_matches(public_key, manifest_bytes, signature):
        return BundleVerification(bundle, fingerprint, SignatureStatus.INVALID, manifest_sha256=digest)
    try:
        manifest = parse_manifest(manifest_bytes, source=f"{bundle}/{MANIFEST_NAME}")
    except BundleManifestError as exc:
        return BundleVerification(bundle, fingerprint, SignatureStatus.VALID, manifest_sha256=digest,
                                  manifest_error=exc)
    return BundleVerification(bundle, fingerprint, SignatureStatus.VALID, manifest=manifest,
                              manifest_sha256=digest)


def parse_dataset_digest(text: str) -> DatasetDigest:
    """``NAME=DIGEST`` as given on the command line."""
    match = _KEY_VALUE_RE.fullmatch(text)
    if match is None:
        raise UsageError(f"dataset {text!r} is not NAME=DIGEST", hint="e.g. --dataset claims-2026=sha256:9f86d0…")
    return DatasetDigest(name=match.group(1), digest=match.group(2))


def parse_metric(text: str) -> tuple[str, float]:
    """``METRIC=NUMBER`` as given on the command line."""
    match = _KEY_VALUE_RE.fullmatch(text)
    value = None
    if match is not None:
        try:
            value = float(match.group(2))
        except ValueError:
            value = None
    if match is None or value is None or not math.isfinite(value):
        raise UsageError(f"metric {text!r} is not METRIC=NUMBER", hint="e.g. --metric accuracy=0.931")
    return match.group(1), value


# --- the keys the hosts trust (bundle trust add|remove|list) ----------------------------------------


@dataclass(frozen=True)
class TrustRow:
    host: str
    site: str
    result: str  # changed, unchanged, failed, unreachable
    keys: list[str]  # the key IDs the host trusts after the run
    error: str | None


@dataclass(frozen=True)
class TrustRun:
    what: str  # e.g. "bundle trust add <key id>"
    rows: list[TrustRow]
    run_id: str | None  # journaled as this run (None: a list, which changes nothing)
    state_root: Path  # where it is journaled

    @property
    def failed(self) -> list[str]:
        return [r.host for r in self.rows if r.error is not None]
