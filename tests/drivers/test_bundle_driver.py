from __future__ import annotations

import hashlib
import json
import re
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hybridctl.core.deploy.bundle import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    BundleIntegrityError,
    BundleKeyError,
    BundleManifestError,
    BundleSignatureError,
    DatasetDigest,
    ProblemKind,
    SignatureStatus,
)
from hybridctl.drivers.bundle import (
    check_bundle,
    create_bundle,
    generate_keypair,
    sign_bundle,
    verify_bundle,
)
from hybridctl.errors import UsageError


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private, public = tmp_path / "keys" / "signing.pem", tmp_path / "keys" / "signing.pub.pem"
    generate_keypair(private, public)
    return private, public


@pytest.fixture
def bundle(tmp_path: Path, keys: tuple[Path, Path]) -> Path:
    directory = tmp_path / "bundle"
    (directory / "tokenizer").mkdir(parents=True)
    (directory / "config.json").write_text('{"layers": 2}')
    (directory / "weights.bin").write_bytes(bytes(range(256)) * 64)
    (directory / "tokenizer" / "vocab.txt").write_text("a\nb\n")
    create_bundle(directory, model="fraud-scorer", version="v2", source_commit="abc123",
                  datasets=[DatasetDigest(name="claims", digest="sha256:" + "1" * 64)],
                  evaluation={"auc": 0.91}, rollback_to="v1")
    sign_bundle(directory, keys[0])
    return directory


class TestKeys:
    def test_private_key_is_owner_only_and_public_key_readable(self, keys: tuple[Path, Path]) -> None:
        assert stat.S_IMODE(keys[0].stat().st_mode) == 0o600
        assert stat.S_IMODE(keys[1].stat().st_mode) == 0o644
        assert b"PRIVATE KEY" in keys[0].read_bytes() and b"PUBLIC KEY" in keys[1].read_bytes()

    def test_refuses_to_overwrite_a_key(self, keys: tuple[Path, Path]) -> None:
        before = keys[0].read_bytes()
        with pytest.raises(UsageError, match="refusing to overwrite"):
            generate_keypair(keys[0], keys[1])
        assert keys[0].read_bytes() == before

    def test_passphrase_protected_key_signs_only_with_its_passphrase(self, tmp_path: Path, bundle: Path) -> None:
        private, public = tmp_path / "enc.pem", tmp_path / "enc.pub.pem"
        generate_keypair(private, public, passphrase=b"correct horse")
        assert b"ENCRYPTED" in private.read_bytes()
        with pytest.raises(BundleKeyError):
            sign_bundle(bundle, private)
        with pytest.raises(BundleKeyError):
            sign_bundle(bundle, private, passphrase=b"wrong")
        sign_bundle(bundle, private, passphrase=b"correct horse")
        assert verify_bundle(bundle, public).ok

    def test_key_errors_never_contain_key_material(self, tmp_path: Path, bundle: Path,
                                                   keys: tuple[Path, Path]) -> None:
        secret_body = keys[0].read_text().splitlines()[1]
        broken = tmp_path / "broken.pem"
        broken.write_text(keys[0].read_text().replace(secret_body, secret_body[::-1]))
        with pytest.raises(BundleKeyError) as info:
            sign_bundle(bundle, broken)
        assert info.value.__cause__ is None and info.value.__context__ is None
        rendered = f"{info.value} {info.value!r} {info.value.hint}"
        assert secret_body not in rendered and secret_body[::-1] not in rendered

    def test_missing_and_wrong_type_key_files(self, tmp_path: Path, bundle: Path, keys: tuple[Path, Path]) -> None:
        with pytest.raises(BundleKeyError, match="does not exist"):
            verify_bundle(bundle, tmp_path / "nope.pem")
        with pytest.raises(BundleKeyError, match="not a PEM public key"):
            verify_bundle(bundle, keys[0])


class TestCreate:
    def test_manifest_lists_every_file_with_size_and_digest(self, bundle: Path) -> None:
        document = json.loads((bundle / MANIFEST_NAME).read_bytes())
        assert [f["path"] for f in document["files"]] == ["config.json", "tokenizer/vocab.txt", "weights.bin"]
        weights = document["files"][2]
        assert weights["size_bytes"] == 256 * 64
        assert weights["sha256"] == hashlib.sha256((bundle / "weights.bin").read_bytes()).hexdigest()
        assert document["rollback_to"] == "v1" and document["evaluation"] == {"auc": 0.91}
        assert document["datasets"] == [{"name": "claims", "digest": "sha256:" + "1" * 64}]

    def test_copies_from_a_source_directory(self, tmp_path: Path) -> None:
        source = tmp_path / "artifacts"
        source.mkdir()
        (source / "model.bin").write_bytes(b"weights")
        manifest = create_bundle(tmp_path / "out", model="m", version="1", source_commit="c", source_dir=source)
        assert [f.path for f in manifest.files] == ["model.bin"]
        assert (tmp_path / "out" / "model.bin").read_bytes() == b"weights"

    def test_recreating_drops_the_stale_signature(self, bundle: Path) -> None:
        create_bundle(bundle, model="fraud-scorer", version="v3", source_commit="def456")
        assert not (bundle / SIGNATURE_NAME).exists()

    def test_symlinks_and_odd_names_refused(self, tmp_path: Path) -> None:
        directory = tmp_path / "b"
        directory.mkdir()
        (directory / "real.bin").write_bytes(b"x")
        (directory / "link.bin").symlink_to(directory / "real.bin")
        with pytest.raises(UsageError, match=re.escape("link.bin: not a regular file")):
            create_bundle(directory, model="m", version="1", source_commit="c")
        (directory / "link.bin").unlink()
        (directory / "with space.bin").write_bytes(b"x")
        with pytest.raises(UsageError, match="with space"):
            create_bundle(directory, model="m", version="1", source_commit="c")

    def test_bad_model_name_is_a_usage_error(self, tmp_path: Path) -> None:
        (tmp_path / "b").mkdir()
        (tmp_path / "b" / "f").write_bytes(b"x")
        with pytest.raises(UsageError, match="model"):
            create_bundle(tmp_path / "b", model="../evil", version="1", source_commit="c")


class TestVerify:
    def test_round_trip(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        result = verify_bundle(bundle, keys[1])
        assert result.ok and result.signature is SignatureStatus.VALID
        assert result.manifest is not None and result.manifest.version == "v2"
        assert result.manifest.total_size_bytes == 256 * 64 + len('{"layers": 2}') + 4

    def test_tampered_file_refused_naming_the_file(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        data = bytearray((bundle / "weights.bin").read_bytes())
        data[100] ^= 0xFF
        (bundle / "weights.bin").write_bytes(bytes(data))
        with pytest.raises(BundleIntegrityError) as info:
            verify_bundle(bundle, keys[1])
        assert [(p.kind, p.path) for p in info.value.problems] == [(ProblemKind.SHA256_MISMATCH, "weights.bin")]
        assert "weights.bin: sha256 is" in info.value.message

    def test_truncated_file_refused_as_size_mismatch(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / "tokenizer" / "vocab.txt").write_text("a\n")
        with pytest.raises(BundleIntegrityError, match=re.escape("tokenizer/vocab.txt: size is 2, the manifest says 4")):
            verify_bundle(bundle, keys[1])

    def test_tampered_manifest_refused(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        document = json.loads((bundle / MANIFEST_NAME).read_bytes())
        document["evaluation"]["auc"] = 0.99
        (bundle / MANIFEST_NAME).write_bytes(json.dumps(document, sort_keys=True, separators=(",", ":")).encode())
        with pytest.raises(BundleSignatureError, match=re.escape("does not verify manifest.json")):
            verify_bundle(bundle, keys[1])

    def test_missing_signature_refused(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / SIGNATURE_NAME).unlink()
        with pytest.raises(BundleSignatureError, match=re.escape("not signed: manifest.sig is missing")) as info:
            verify_bundle(bundle, keys[1])
        assert info.value.hint is not None and "bundle sign" in info.value.hint

    def test_wrong_key_refused(self, tmp_path: Path, bundle: Path) -> None:
        other_private, other_public = tmp_path / "o.pem", tmp_path / "o.pub.pem"
        info = generate_keypair(other_private, other_public)
        with pytest.raises(BundleSignatureError, match=info.fingerprint):
            verify_bundle(bundle, other_public)

    def test_extra_file_refused(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / "tokenizer" / "backdoor.py").write_text("import os")
        with pytest.raises(BundleIntegrityError, match=re.escape("tokenizer/backdoor.py: present but not listed")):
            verify_bundle(bundle, keys[1])

    def test_an_extra_file_is_named_without_being_read(self, bundle: Path, keys: tuple[Path, Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
        # a 4 GiB file planted beside the artifacts was hashed before the verdict "present but not listed"
        import hybridctl.drivers.bundle as driver

        hashed: list[str] = []
        real = driver.file_sha256
        monkeypatch.setattr(driver, "file_sha256", lambda path: hashed.append(path.name) or real(path))
        (bundle / "planted.bin").write_bytes(b"\0" * 4096)
        with pytest.raises(BundleIntegrityError, match=re.escape("planted.bin: present but not listed")):
            verify_bundle(bundle, keys[1])
        assert "planted.bin" not in hashed and "weights.bin" in hashed

    def test_directories_nested_past_the_bound_are_refused(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        # 1,200 nested directories crashed verify with a RecursionError (Python 3.11's os.walk recursed): the walk
        # is a loop now, and stops past the bound
        deep = bundle
        for _ in range(40):
            deep = deep / "d"
        deep.mkdir(parents=True)
        with pytest.raises(UsageError, match="nested more than 32 directories deep"):
            check_bundle(bundle, keys[1])

    def test_missing_file_and_symlink_refused(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / "config.json").unlink()
        (bundle / "config.json").symlink_to("/etc/hostname")
        (bundle / "weights.bin").unlink()
        result = check_bundle(bundle, keys[1])
        assert not result.ok
        assert [(p.kind, p.path) for p in result.problems] == [
            (ProblemKind.NOT_A_FILE, "config.json"), (ProblemKind.MISSING, "weights.bin")]

    def test_no_manifest(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / MANIFEST_NAME).unlink()
        with pytest.raises(BundleManifestError, match=re.escape("has no manifest.json")):
            verify_bundle(bundle, keys[1])

    def test_files_are_not_read_when_the_signature_fails(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        (bundle / SIGNATURE_NAME).write_bytes(b"\0" * 64)
        (bundle / "weights.bin").write_bytes(b"changed")  # would be a problem if files were checked
        result = check_bundle(bundle, keys[1])
        assert result.signature is SignatureStatus.INVALID and result.problems == ()


class TestSign:
    def test_refuses_to_sign_files_that_changed_since_create(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        signature = (bundle / SIGNATURE_NAME).read_bytes()
        (bundle / "config.json").write_text('{"layers": 3}')
        with pytest.raises(BundleIntegrityError, match="refusing to sign"):
            sign_bundle(bundle, keys[0])
        assert (bundle / SIGNATURE_NAME).read_bytes() == signature

    def test_non_canonical_manifest_is_canonicalized_before_signing(self, bundle: Path,
                                                                   keys: tuple[Path, Path]) -> None:
        canonical = (bundle / MANIFEST_NAME).read_bytes()
        (bundle / MANIFEST_NAME).write_text(json.dumps(json.loads(canonical), indent=2))
        sign_bundle(bundle, keys[0])
        assert (bundle / MANIFEST_NAME).read_bytes() == canonical
        assert verify_bundle(bundle, keys[1]).ok

    @pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
    def test_signature_verifies_with_openssl_as_the_hosts_do(self, bundle: Path, keys: tuple[Path, Path]) -> None:
        command = ["openssl", "pkeyutl", "-verify", "-pubin", "-inkey", str(keys[1]), "-rawin",
                   "-in", str(bundle / MANIFEST_NAME), "-sigfile", str(bundle / SIGNATURE_NAME)]
        assert subprocess.run(command, capture_output=True, check=False).returncode == 0
        (bundle / MANIFEST_NAME).write_bytes((bundle / MANIFEST_NAME).read_bytes() + b" ")
        assert subprocess.run(command, capture_output=True, check=False).returncode != 0
