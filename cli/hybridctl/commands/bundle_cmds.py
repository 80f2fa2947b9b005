"""hybridctl bundle keygen|create|sign|verify: signed model bundles for model sync."""

from __future__ import annotations

import json
import os
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.render.untrusted import echo

bundle_app = typer.Typer(help="Make and check signed model bundles (artifacts + manifest.json + manifest.sig).",
                         no_args_is_help=True)
app.add_typer(bundle_app, name="bundle")

PASSPHRASE_ENV = "HYBRIDCTL_BUNDLE_KEY_PASSPHRASE"


def _passphrase() -> bytes | None:
    value = os.environ.get(PASSPHRASE_ENV)
    return value.encode() if value else None


@bundle_app.command("keygen")
def keygen(
    private_key: Path = typer.Argument(..., help="Where to write the Ed25519 private key (PEM, mode 0600)."),
    public_key: Path = typer.Argument(..., help="Where to write the public key (PEM) that hosts verify with."),
) -> None:
    """Generate an Ed25519 signing key pair. The private key is encrypted with
    $HYBRIDCTL_BUNDLE_KEY_PASSPHRASE when that is set."""
    from hybridctl.operations.bundle import keygen as make_keys

    info = make_keys(private_key, public_key, _passphrase())
    echo(f"wrote {info.private_key_path} (private, 0600) and {info.public_key_path}; "
               f"key fingerprint {info.fingerprint}")


@bundle_app.command("create")
def create(
    bundle_dir: Path = typer.Argument(..., help="The bundle directory (holding the artifacts, or new with --from)."),
    model: str = typer.Option(..., "--model", help="Model name."),
    version: str = typer.Option(..., "--version", help="Model version; it names versions/<version>/ on hosts."),
    source_commit: str = typer.Option(..., "--source-commit", help="The commit the model was built from."),
    from_dir: Path | None = typer.Option(None, "--from", help="Copy the artifacts from this directory first."),
    dataset: list[str] = typer.Option([], "--dataset", help="NAME=DIGEST of a dataset snapshot the model was trained on (e.g. sha256:...); repeatable."),
    metric: list[str] = typer.Option([], "--metric", help="NAME=VALUE of the evaluation summary; repeatable."),
    rollback_to: str | None = typer.Option(None, "--rollback-to", help="The version to roll back to."),
) -> None:
    """Write manifest.json (sha256 and size of every file, model, version, source commit, datasets,
    evaluation summary, rollback target). Sign it next with `bundle sign`."""
    from hybridctl.operations.bundle import create as create_bundle

    manifest = create_bundle(bundle_dir, model=model, version=version, source_commit=source_commit, datasets=dataset,
                             metrics=metric, rollback_to=rollback_to, source_dir=from_dir)
    echo(f"wrote {bundle_dir / 'manifest.json'}: {manifest.model} {manifest.version}, "
               f"{len(manifest.files)} file(s), {manifest.total_size_bytes:,} bytes; next: hybridctl bundle sign "
               f"{bundle_dir} KEY")


@bundle_app.command("sign")
def sign(
    bundle_dir: Path = typer.Argument(..., help="The bundle directory."),
    private_key: Path = typer.Argument(..., help="The Ed25519 private key (PEM)."),
) -> None:
    """Check the files against the manifest, then sign the manifest (manifest.sig)."""
    from hybridctl.operations.bundle import sign as sign_bundle

    info = sign_bundle(bundle_dir, private_key, _passphrase())
    echo(f"signed {info.bundle}: manifest sha256 {info.manifest_sha256}, key {info.key_fingerprint}")


@bundle_app.command("verify")
def verify(
    bundle_dir: Path = typer.Argument(..., help="The bundle directory."),
    public_key: Path = typer.Argument(..., help="The public key (PEM) to verify with."),
    output_format: str = typer.Option("text", "--format", "-f", help="text or json."),
) -> None:
    """Verify the signature, then every file's size and sha256, and that nothing unlisted is present.
    Exit 0 when the bundle is trusted, 1 when it is not."""
    from hybridctl.errors import ExitCode
    from hybridctl.operations.bundle import verify as check_bundle

    verification = check_bundle(bundle_dir, public_key)
    error = verification.error()
    if output_format == "json":
        echo(json.dumps({"format_version": 1, "bundle": str(bundle_dir), "trusted": error is None,
                               "signature": verification.signature.value,
                               "key_fingerprint": verification.key_fingerprint,
                               "manifest_sha256": verification.manifest_sha256,
                               "problems": [p.describe() for p in verification.problems],
                               "error": error.message if error else None}, indent=2))
    elif error is None:
        manifest = verification.manifest
        assert manifest is not None
        echo(f"trusted: {manifest.model} {manifest.version} ({len(manifest.files)} files), signed by "
                   f"{verification.key_fingerprint}")
    else:
        echo(f"NOT trusted: {error.message}", err=True)
        if error.hint:
            echo(f"hint: {error.hint}", err=True)
    if error is not None:
        raise typer.Exit(ExitCode.FAILED)


# `bundle trust ...` lives in its own module; importing it registers it under `bundle`.
from hybridctl.commands import bundle_trust_cmds  # noqa: E402, F401
