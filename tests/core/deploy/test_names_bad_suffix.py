"""Names read back from a manifest or a step, each valid with one bad character after it, and at its
length limit (issue 45 item 8): a planted `.match` for `.fullmatch` lets "valid prefix + anything" through,
as the audit's stack name did. Bundle model and version names (128 at most), artifact path parts (255),
SHA-256 digests (64 hex digits), and the stack names a cloud step carries (127)."""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.core.deploy.bundle import BundleFile, BundleManifest, artifact_path_problem
from hybridctl.core.deploy.stackvalues import PROJECT_GPU_POOLS
from hybridctl.core.deploy.stepcheck import check_step_params
from pydantic import ValidationError

SUFFIXES = ["\n", "/", " ", ";", "\x1b", "\x00", "é", "*", "..", "\\", ":"]
SHA = "a" * 64


def manifest(**overrides: object) -> BundleManifest:
    fields: dict[str, Any] = {"model": "fraud-scorer", "version": "2026.05.1", "source_commit": "0123",
                              "files": (BundleFile(path="config.json", sha256=SHA, size_bytes=10),),
                              "rollback_to": "2026.04.3"}
    return BundleManifest.model_validate({**fields, **overrides})


@pytest.mark.parametrize("field", ["model", "version", "rollback_to"])
@pytest.mark.parametrize("suffix", [s for s in SUFFIXES if s != ".."])  # `fraud-scorer..` is a name, not `..`
def test_a_bundle_name_with_a_bad_suffix_is_refused(field: str, suffix: str) -> None:
    valid = {"model": "fraud-scorer", "version": "2026.05.1", "rollback_to": "2026.04.3"}[field]
    with pytest.raises(ValidationError):
        manifest(**{field: valid + suffix})


@pytest.mark.parametrize("field", ["model", "version"])
def test_a_bundle_name_of_128_characters_is_one_and_129_is_not(field: str) -> None:
    assert getattr(manifest(**{field: "m" * 128}), field) == "m" * 128
    with pytest.raises(ValidationError):
        manifest(**{field: "m" * 129})


@pytest.mark.parametrize("suffix", [s for s in SUFFIXES if s not in ("/", "..")])
def test_an_artifact_path_part_with_a_bad_suffix_is_refused(suffix: str) -> None:
    assert artifact_path_problem("weights/model.safetensors") is None
    assert artifact_path_problem("weights/model.safetensors" + suffix) is not None
    assert artifact_path_problem("weights" + suffix + "/model.safetensors") is not None


def test_an_artifact_path_part_of_255_characters_is_one_and_256_is_not() -> None:
    assert artifact_path_problem("w/" + "p" * 255) is None
    assert artifact_path_problem("w/" + "p" * 256) is not None


@pytest.mark.parametrize("digest", [SHA + "a", SHA[:-1], SHA + "\n", SHA[:-1] + "A", SHA[:-1] + "g", " " + SHA])
def test_a_digest_of_any_other_shape_is_refused(digest: str) -> None:
    with pytest.raises(ValidationError):
        BundleFile(path="config.json", sha256=digest, size_bytes=1)


def cloud(stack_name: str) -> dict[str, object]:
    return {"project": PROJECT_GPU_POOLS, "stack_name": stack_name, "config": {}, "site": "aws-use1"}


@pytest.mark.parametrize("suffix", [*SUFFIXES, "A", "_", "."])
def test_a_stack_name_with_a_bad_suffix_is_refused(suffix: str) -> None:
    check_step_params("cloud-pools", cloud("test-aws-use1"))
    with pytest.raises(ValueError, match=r"params\.stack_name"):
        check_step_params("cloud-pools", cloud("test-aws-use1" + suffix))


def test_a_stack_name_of_127_characters_is_read_and_128_is_not() -> None:
    check_step_params("cloud-pools", cloud("s" * 127))
    with pytest.raises(ValueError, match=r"params\.stack_name"):
        check_step_params("cloud-pools", cloud("s" * 128))
