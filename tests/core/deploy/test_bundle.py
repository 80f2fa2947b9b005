from __future__ import annotations

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hybridctl.core.deploy.bundle import (
    BundleFile,
    BundleIntegrityError,
    BundleManifest,
    BundleManifestError,
    BundleSignatureError,
    DatasetDigest,
    ObservedFile,
    ProblemKind,
    SignatureStatus,
    artifact_path_problem,
    canonical_manifest_bytes,
    check_files,
    check_signature,
    key_fingerprint,
    parse_dataset_digest,
    parse_manifest,
    parse_metric,
    sign_manifest,
)
from hybridctl.errors import ExitCode, UsageError
from hypothesis import given
from hypothesis import strategies as st

SHA_A = "a" * 64
SHA_B = "b" * 64


def manifest(**overrides: object) -> BundleManifest:
    fields: dict[str, object] = {
        "model": "fraud-scorer",
        "version": "2026.05.1",
        "source_commit": "0123456789abcdef",
        "files": (BundleFile(path="config.json", sha256=SHA_A, size_bytes=10),
                  BundleFile(path="weights/model.safetensors", sha256=SHA_B, size_bytes=2048)),
        "datasets": (DatasetDigest(name="claims-2026", digest="sha256:" + SHA_A),),
        "evaluation": {"auc": 0.93, "latency_p95_ms": 41.0},
        "rollback_to": "2026.04.3",
    }
    fields.update(overrides)
    return BundleManifest.model_validate(fields)


class TestCanonicalBytes:
    def test_sorted_keys_and_no_whitespace(self) -> None:
        data = canonical_manifest_bytes(manifest())
        text = data.decode()
        assert " " not in text and "\n" not in text
        document = json.loads(text)
        assert list(document) == sorted(document)
        assert list(document["files"][0]) == ["path", "sha256", "size_bytes"]

    def test_round_trip_is_exact(self) -> None:
        original = manifest()
        data = canonical_manifest_bytes(original)
        assert parse_manifest(data) == original
        assert canonical_manifest_bytes(parse_manifest(data)) == data

    def test_independent_of_key_order_and_whitespace_in_input(self) -> None:
        document = json.loads(canonical_manifest_bytes(manifest()))
        reordered = json.dumps(dict(reversed(list(document.items()))), indent=4).encode()
        assert canonical_manifest_bytes(parse_manifest(reordered)) == canonical_manifest_bytes(manifest())

    @given(metrics=st.dictionaries(st.text(min_size=1, max_size=12),
                                   st.floats(allow_nan=False, allow_infinity=False), max_size=6),
           commit=st.text(min_size=1, max_size=40))
    def test_round_trip_property(self, metrics: dict[str, float], commit: str) -> None:
        original = manifest(evaluation=metrics, source_commit=commit)
        data = canonical_manifest_bytes(original)
        assert parse_manifest(data) == original
        assert canonical_manifest_bytes(parse_manifest(data)) == data


class TestManifestValidation:
    @pytest.mark.parametrize("path", ["../etc/passwd", "/abs", "a//b", "a/./b", "has space", "new\nline",
                                      "manifest.json", "manifest.sig", ""])
    def test_unsafe_artifact_paths_rejected(self, path: str) -> None:
        assert artifact_path_problem(path) is not None
        with pytest.raises(ValueError):
            BundleFile(path=path, sha256=SHA_A, size_bytes=1)

    @pytest.mark.parametrize("path", ["model.safetensors", "tokenizer/vocab.json", ".gitattributes", "a+b=c@d-e"])
    def test_ordinary_artifact_paths_accepted(self, path: str) -> None:
        assert artifact_path_problem(path) is None

    @pytest.mark.parametrize("field,value", [("model", "../x"), ("version", "current/.."), ("version", ".hidden"),
                                              ("rollback_to", "a b")])
    def test_names_that_would_escape_directories_rejected(self, field: str, value: str) -> None:
        with pytest.raises(ValueError):
            manifest(**{field: value})

    def test_files_must_be_sorted_and_unique(self) -> None:
        a = BundleFile(path="a", sha256=SHA_A, size_bytes=1)
        b = BundleFile(path="b", sha256=SHA_A, size_bytes=1)
        with pytest.raises(ValueError, match="sorted"):
            manifest(files=(b, a))
        with pytest.raises(ValueError, match="twice"):
            manifest(files=(a, a))

    def test_rollback_to_self_rejected(self) -> None:
        with pytest.raises(ValueError, match="rollback_to"):
            manifest(rollback_to="2026.05.1")

    def test_non_finite_metric_rejected(self) -> None:
        with pytest.raises(ValueError, match="finite"):
            manifest(evaluation={"auc": float("nan")})

    def test_json_syntax_error_names_line_and_column(self) -> None:
        with pytest.raises(BundleManifestError) as info:
            parse_manifest(b'{\n  "model": }', source="b/manifest.json")
        assert info.value.location is not None
        assert (info.value.location.file, info.value.location.line) == ("b/manifest.json", 2)

    def test_duplicate_keys_rejected(self) -> None:
        with pytest.raises(BundleManifestError, match="duplicate key 'model'"):
            parse_manifest(b'{"model":"a","model":"b"}')

    def test_unknown_field_named(self) -> None:
        document = json.loads(canonical_manifest_bytes(manifest()))
        document["signed_by"] = "me"
        with pytest.raises(BundleManifestError, match="signed_by"):
            parse_manifest(json.dumps(document).encode())

    def test_bad_digest_named(self) -> None:
        document = json.loads(canonical_manifest_bytes(manifest()))
        document["files"][1]["sha256"] = "XYZ"
        with pytest.raises(BundleManifestError, match=r"files\.1\.sha256"):
            parse_manifest(json.dumps(document).encode())


class TestCheckFiles:
    def observed(self) -> dict[str, ObservedFile]:
        return {"config.json": ObservedFile(10, SHA_A), "weights/model.safetensors": ObservedFile(2048, SHA_B)}

    def test_matching_files_have_no_problems(self) -> None:
        assert check_files(manifest(), self.observed()) == ()

    def test_each_kind_of_difference_is_reported_with_its_path(self) -> None:
        observed = self.observed()
        observed["weights/model.safetensors"] = ObservedFile(2048, SHA_A)
        observed["config.json"] = ObservedFile(11, None)
        observed["notes.txt"] = ObservedFile(3, "c" * 64)
        problems = check_files(manifest(), observed)
        assert [(p.kind, p.path) for p in problems] == [
            (ProblemKind.SIZE_MISMATCH, "config.json"),
            (ProblemKind.UNLISTED, "notes.txt"),
            (ProblemKind.SHA256_MISMATCH, "weights/model.safetensors"),
        ]
        assert problems[0].describe() == "config.json: size is 11, the manifest says 10"
        assert SHA_A in problems[2].describe() and SHA_B in problems[2].describe()

    def test_missing_and_non_regular_files(self) -> None:
        observed = {"config.json": ObservedFile(0, None, regular=False)}
        problems = check_files(manifest(), observed)
        assert [(p.kind, p.path) for p in problems] == [
            (ProblemKind.NOT_A_FILE, "config.json"),
            (ProblemKind.MISSING, "weights/model.safetensors"),
        ]

    def test_metadata_files_are_not_unlisted(self) -> None:
        observed = self.observed()
        observed["manifest.json"] = ObservedFile(1, SHA_A)
        observed["manifest.sig"] = ObservedFile(64, SHA_A)
        assert check_files(manifest(), observed) == ()


class TestCheckSignature:
    key = Ed25519PrivateKey.generate()

    def test_valid_signature_yields_the_manifest(self) -> None:
        data = canonical_manifest_bytes(manifest())
        result = check_signature("b", data, sign_manifest(self.key, data), self.key.public_key())
        assert result.signature is SignatureStatus.VALID
        assert result.manifest == manifest()
        assert result.ok and result.error() is None
        assert result.key_fingerprint == key_fingerprint(self.key.public_key())

    def test_one_changed_byte_invalidates(self) -> None:
        data = canonical_manifest_bytes(manifest())
        signature = sign_manifest(self.key, data)
        tampered = data.replace(b"0.93", b"0.99")
        result = check_signature("b", tampered, signature, self.key.public_key())
        assert result.signature is SignatureStatus.INVALID and result.manifest is None
        error = result.error()
        assert isinstance(error, BundleSignatureError)
        assert "does not verify manifest.json" in error.message
        assert error.exit_code is ExitCode.REFUSED

    def test_other_key_invalidates_and_is_named(self) -> None:
        data = canonical_manifest_bytes(manifest())
        other = Ed25519PrivateKey.generate()
        result = check_signature("b", data, sign_manifest(other, data), self.key.public_key())
        assert result.signature is SignatureStatus.INVALID
        error = result.error()
        assert error is not None and key_fingerprint(self.key.public_key()) in error.message

    def test_missing_signature(self) -> None:
        data = canonical_manifest_bytes(manifest())
        result = check_signature("b", data, None, self.key.public_key())
        error = result.error()
        assert isinstance(error, BundleSignatureError)
        assert "not signed" in error.message and error.hint is not None

    def test_signed_but_invalid_manifest_reports_the_manifest_error(self) -> None:
        data = b'{"model":"x"}'
        result = check_signature("b", data, sign_manifest(self.key, data), self.key.public_key())
        assert result.signature is SignatureStatus.VALID and not result.ok
        assert isinstance(result.error(), BundleManifestError)

    def test_integrity_error_lists_every_problem(self) -> None:
        data = canonical_manifest_bytes(manifest())
        result = check_signature("b", data, sign_manifest(self.key, data), self.key.public_key())
        problems = check_files(manifest(), {"config.json": ObservedFile(10, SHA_A)})
        failed = type(result)(result.bundle, result.key_fingerprint, result.signature, manifest=result.manifest,
                              problems=problems)
        error = failed.error()
        assert isinstance(error, BundleIntegrityError)
        assert error.problems == problems
        assert "weights/model.safetensors: listed in the manifest but missing" in error.message


class TestCommandLineValues:
    def test_dataset_digest(self) -> None:
        assert parse_dataset_digest("claims=sha256:ab") == DatasetDigest(name="claims", digest="sha256:ab")
        with pytest.raises(UsageError):
            parse_dataset_digest("claims")

    def test_metric(self) -> None:
        assert parse_metric("auc=0.5") == ("auc", 0.5)
        for bad in ("auc", "auc=high", "auc=nan", "=1"):
            with pytest.raises(UsageError):
                parse_metric(bad)
