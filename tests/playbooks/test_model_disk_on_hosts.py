"""model-sync.yml on a real SSH test host whose models directory is a small filesystem of its
own (a 1 MiB tmpfs mounted inside the host): the free-space check refuses cleanly, reports
no_space (not "refused"), copies nothing, and the host keeps its version."""

from __future__ import annotations

from pathlib import Path

import pytest
from hosts.lab import HostLab
from hybridctl.drivers.ansible import HostState

from .support import MODEL, Bundles, describe, make_bundle
from .test_playbooks_on_hosts import run

pytestmark = [pytest.mark.hosts, pytest.mark.slow]


class TestSmallModelsFilesystem:
    def test_a_bundle_larger_than_the_free_space_is_refused_before_copying(
            self, host_lab: HostLab, bundles: Bundles, tmp_path: Path) -> None:
        (host,) = host_lab.start(1, names=["small-01"])
        host.exec("mkdir -p /var/lib/hybridctl/models && mount -t tmpfs -o size=1m tmpfs /var/lib/hybridctl/models")
        first = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.good["v1"]),
                    hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert first.succeeded, describe(first)  # a small bundle fits
        private = bundles.public_key.parent / "signing.pem"
        big = make_bundle(tmp_path / "v5", "v5", private, rollback_to=None,
                          files={"weights/model.safetensors": b"w" * (2 * 1024 * 1024), "config.json": b"{}"})
        result = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(big))
        outcome = result.host(host.name)
        assert outcome.state is HostState.FAILED, describe(result)
        assert outcome.data["status"] == "no_space", outcome.data
        message = outcome.message or ""
        assert "not enough space on small-01 for fraud-scorer v5: /var/lib/hybridctl/models has" in message, message
        assert "the bundle needs 2,097," in message and "stays on v1" in message
        assert outcome.data["disk"]["needed_bytes"] > outcome.data["disk"]["free_bytes"]
        # The tmpfs is mounted inside the host's mount namespace: look from there.
        models = f"/var/lib/hybridctl/models/{MODEL}"
        assert host.exec(f"readlink {models}/current").stdout.strip() == "versions/v1"
        assert host.exec(f"ls -A {models}").stdout.split() == [".lock", ".verified", "current", "versions"]
        assert host.exec(f"ls -A {models}/versions").stdout.split() == ["v1"]

    # Small files travel inside the install's arguments, large ones by sftp: both ways can fill it.
    @pytest.mark.parametrize("way", ["inline", "sftp"])
    def test_a_filesystem_that_fills_up_during_the_copy_is_reported_as_no_space(
            self, host_lab: HostLab, bundles: Bundles, tmp_path: Path, way: str) -> None:
        (host,) = host_lab.start(1, names=[f"small-{way}"])
        models = "/var/lib/hybridctl/models"
        host.exec(f"mkdir -p {models} && mount -t tmpfs -o size=20m tmpfs {models}")
        first = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundles.good["v1"]),
                    hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert first.succeeded, describe(first)
        if way == "inline":
            # Bytes to spare but only 7 inodes: the probe's own 5 (lock record, upload dirs), then
            # writing the third of v3's 5 files fails.
            bundle, spare_inodes, failing = bundles.good["v3"], 7, "No space left on device"
        else:
            # Only the probe's own 4 inodes: sftp cannot create the weights.
            private = bundles.public_key.parent / "signing.pem"
            bundle = make_bundle(tmp_path / "v4", "v4", private, rollback_to=None,
                                 files={"weights/model.safetensors": b"w" * (1024 * 1024), "config.json": b"{}"})
            spare_inodes, failing = 4, "copying weights/model.safetensors"
        used = int(host.exec(f"python3 -c 'import os; s = os.statvfs(\"{models}\"); print(s.f_files - s.f_ffree)'").stdout)
        host.exec(f"mount -o remount,nr_inodes={used + spare_inodes} {models}")
        result = run(host_lab, "model-sync.yml", [host], hybridctl_bundle_dir=str(bundle))
        outcome = result.host(host.name)
        assert outcome.state is HostState.FAILED, describe(result)
        assert outcome.data["status"] == "no_space", outcome.data
        message = outcome.message or ""
        # sftp-server passes ENOSPC on; when it says only "Failure", the host's statvfs decides.
        assert f"no space left on small-{way}" in message and failing in message and "stays on v1" in message, message
        assert outcome.data["disk"]["free_inodes"] == 0
        assert host.exec(f"readlink {models}/{MODEL}/current").stdout.strip() == "versions/v1"
        assert host.exec(f"ls -A {models}/{MODEL}").stdout.split() == [".lock", ".verified", "current", "versions"]
