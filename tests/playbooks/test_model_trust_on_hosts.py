"""Issue 10 §3 on the real SSH test hosts: a signed bundle must not replace the host's trust
anchor, downgrade a model, smuggle a controller file through a symlink, or race another sync;
rollback can be repeated. Each test reproduces one finding of the review.
"""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest
from hosts.lab import HostLab, TestHost
from hybridctl.core.deploy.bundle import key_id
from hybridctl.drivers.ansible import HostState, PlaybookResult
from hybridctl.drivers.bundle import load_public_key

from .support import (
    MODEL,
    Bundles,
    current_version,
    describe,
    make_bundle,
    model_dir,
    previous_version,
    versions,
)
from .test_playbooks_on_hosts import run

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


def synced(lab: HostLab, host: TestHost, bundles: Bundles, *names: str) -> None:
    """The host trusts `bundles.public_key` and has synced `names` in order."""
    for version in names:
        result = run(lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.good[version]),
                     hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert result.succeeded, describe(result)


def trust_dir(host: TestHost) -> Path:
    return host.root / "etc/hybridctl/trust"


def pinned(host: TestHost) -> dict[str, bytes]:
    return {p.relative_to(trust_dir(host)).as_posix(): p.read_bytes()
            for p in sorted(trust_dir(host).rglob("*")) if p.is_file()}


def refused(result: PlaybookResult, host: TestHost, reason: str) -> None:
    outcome = result.host(host.name)
    assert outcome.state is HostState.FAILED, describe(result)
    assert reason in (outcome.message or ""), describe(result)
    assert outcome.data["status"] == "refused", outcome.data


class TestTrustAnchor:
    def test_a_bundle_with_another_key_cannot_replace_the_pinned_key(self, host_lab: HostLab,
                                                                     bundles: Bundles) -> None:
        (host,) = host_lab.start(1, names=["trust-01"])
        synced(host_lab, host, bundles, "v1", "v2")
        before = pinned(host)
        assert f"keys/{key_id(load_public_key(bundles.public_key))}.pem" in before
        # The attack of the review: another key's bundle, run together with that key's public key.
        attack = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.broken["wrong_key"]),
                     hybridctl_bundle_public_key_file=str(bundles.other_public_key))
        refused(attack, host, f"key {key_id(load_public_key(bundles.other_public_key))} is not trusted on trust-01")
        assert pinned(host) == before
        assert current_version(host.root) == "v2" and versions(host.root) == ["v1", "v2"]
        # Without the key file, the unknown signer is refused too.
        unknown = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.broken["wrong_key"]))
        refused(unknown, host, "manifest.sig does not verify manifest.json with any key trusted on trust-01")


class TestDowngrade:
    def test_an_older_version_is_not_activated_by_a_sync(self, host_lab: HostLab, bundles: Bundles) -> None:
        (host,) = host_lab.start(1, names=["down-01"])
        synced(host_lab, host, bundles, "v1", "v2")
        older = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.good["v1"]))
        refused(older, host, "v1 is older than the active version v2")
        assert current_version(host.root) == "v2"
        # The explicit way back is a rollback.
        back = run(host_lab, "rollback.yml", [host], hybridctl_model=MODEL, hybridctl_rollback_version="v1")
        assert back.host(host.name).data["status"] == "rolled_back", describe(back)
        assert current_version(host.root) == "v1"


class TestSymlinks:
    def test_an_unlisted_symlink_in_the_bundle_dir_sends_nothing(self, host_lab: HostLab, bundles: Bundles,
                                                                  tmp_path: Path) -> None:
        (host,) = host_lab.start(1, names=["link-01"])
        synced(host_lab, host, bundles, "v1", "v2")
        secret = tmp_path / "controller-secret.txt"
        secret.write_text("controller-only-3b1f8c0e\n")
        bundle = Path(shutil.copytree(bundles.good["v3"], tmp_path / "v3-link", symlinks=True))
        (bundle / "tokenizer/notes.txt").symlink_to(secret)
        result = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundle))
        refused(result, host, "tokenizer/notes.txt: not a regular file")
        leaked = host.exec("grep -rl controller-only-3b1f8c0e /var/lib/hybridctl /root /tmp || true").stdout
        assert leaked.strip() == ""
        assert current_version(host.root) == "v2"

    def test_a_listed_file_replaced_by_a_symlink_is_refused(self, host_lab: HostLab, bundles: Bundles,
                                                           tmp_path: Path) -> None:
        (host,) = host_lab.start(1, names=["link-02"])
        synced(host_lab, host, bundles, "v1", "v2")
        bundle = Path(shutil.copytree(bundles.good["v3"], tmp_path / "v3-swapped", symlinks=True))
        weights = bundle / "weights/model.safetensors"
        elsewhere = tmp_path / "same-bytes.safetensors"
        shutil.copyfile(weights, elsewhere)  # identical bytes: only the symlink is wrong
        weights.unlink()
        weights.symlink_to(elsewhere)
        result = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundle))
        refused(result, host, "weights/model.safetensors: not a regular file")
        assert current_version(host.root) == "v2" and versions(host.root) == ["v1", "v2"]


class TestRollbackTwice:
    def test_a_second_rollback_goes_one_version_further_back(self, host_lab: HostLab, bundles: Bundles) -> None:
        (host,) = host_lab.start(1, names=["back-01"])
        synced(host_lab, host, bundles, "v1", "v2", "v3")
        first = run(host_lab, "rollback.yml", [host], hybridctl_model=MODEL)
        assert first.host(host.name).data["status"] == "rolled_back", describe(first)
        assert current_version(host.root) == "v2" and previous_version(host.root) == "v1"
        second = run(host_lab, "rollback.yml", [host], hybridctl_model=MODEL)
        assert second.host(host.name).data["status"] == "rolled_back", describe(second)
        assert current_version(host.root) == "v1" and previous_version(host.root) is None
        third = run(host_lab, "rollback.yml", [host], hybridctl_model=MODEL)
        assert third.host(host.name).state is HostState.FAILED
        assert "no older version to return to" in (third.host(host.name).message or ""), describe(third)
        assert current_version(host.root) == "v1"


class TestConcurrentSyncs:
    def test_two_syncs_of_one_model_on_one_host_do_not_interfere(self, host_lab: HostLab, bundles: Bundles,
                                                                 tmp_path: Path) -> None:
        (host,) = host_lab.start(1, names=["race-01"])
        synced(host_lab, host, bundles, "v1")
        private = bundles.public_key.parent / "signing.pem"
        big = {"weights/model.safetensors": b"w" * (24 * 1024 * 1024), "config.json": b"{}"}
        v8 = make_bundle(tmp_path / "v8", "v8", private, rollback_to=None, files=big)
        v9 = make_bundle(tmp_path / "v9", "v9", private, rollback_to=None, files={**big, "config.json": b"[]"})
        results: dict[str, PlaybookResult] = {}

        def sync(version: str, bundle: Path) -> None:
            results[version] = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundle))

        # Threads started by the test body are in the controller's network namespace too.
        threads = [threading.Thread(target=sync, args=(v, b)) for v, b in (("v8", v8), ("v9", v9))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        outcomes = {v: r.host(host.name) for v, r in results.items()}
        for version, outcome in outcomes.items():
            # Each run either did its whole job or was turned away by the other's lock: never a half.
            if outcome.state is HostState.FAILED and outcome.data["status"] == "refused":
                # v9 finished before v8 began: then v8 is an older version, refused as such.
                assert version == "v8" and "v8 is older than the active version v9" in (outcome.message or ""), \
                    describe(results[version])
            elif outcome.state is HostState.FAILED:
                assert "another sync of fraud-scorer is running on race-01" in (outcome.message or ""), \
                    describe(results[version])
                assert outcome.data["status"] == "busy"
            else:
                assert outcome.data["status"] == "activated", describe(results[version])
        assert any(o.state is not HostState.FAILED for o in outcomes.values())
        active = current_version(host.root)
        assert active in ("v8", "v9")
        config = (model_dir(host.root) / "current/config.json").read_bytes()
        assert config == (b"{}" if active == "v8" else b"[]")
        assert not list((model_dir(host.root) / "versions").glob(".*"))
