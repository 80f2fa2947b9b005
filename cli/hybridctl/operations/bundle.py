"""bundle keygen|create|sign|verify: the signed model bundles model sync installs (drivers/bundle.py does the work)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hybridctl.core.deploy.bundle import BundleManifest, BundleVerification
    from hybridctl.drivers.bundle import KeyPairInfo, SignatureInfo


def keygen(private_key: Path, public_key: Path, passphrase: bytes | None) -> KeyPairInfo:
    from hybridctl.drivers.bundle import generate_keypair

    return generate_keypair(private_key, public_key, passphrase=passphrase)


def create(bundle_dir: Path, *, model: str, version: str, source_commit: str, datasets: Sequence[str],
           metrics: Sequence[str], rollback_to: str | None, source_dir: Path | None) -> BundleManifest:
    """The manifest written for `--dataset NAME=DIGEST` and `--metric NAME=VALUE` (a number)."""
    from hybridctl.core.deploy.bundle import parse_dataset_digest, parse_metric
    from hybridctl.drivers.bundle import create_bundle

    # the core's readers: a metric must be a finite number (`accuracy=nan` was written into a manifest)
    evaluation = dict(parse_metric(text) for text in metrics)
    digests = [parse_dataset_digest(text) for text in datasets]
    return create_bundle(bundle_dir, model=model, version=version, source_commit=source_commit,
                         datasets=digests, evaluation=evaluation, rollback_to=rollback_to, source_dir=source_dir)


def sign(bundle_dir: Path, private_key: Path, passphrase: bytes | None) -> SignatureInfo:
    from hybridctl.drivers.bundle import sign_bundle

    return sign_bundle(bundle_dir, private_key, passphrase=passphrase)


def verify(bundle_dir: Path, public_key: Path) -> BundleVerification:
    from hybridctl.drivers.bundle import check_bundle

    return check_bundle(bundle_dir, public_key)
