"""model-sync.yml's distribution against local host roots: resumed uploads, leftovers of
other runs, and checking an installed version by its recorded file metadata."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hybridctl.drivers.ansible import HostState, PlaybookResult
from hybridctl.paths import playbooks_dir

from .support import MODEL, Bundles, RunPlaybook, copy_roots, current_version, describe, model_dir, payload

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook, bundles: Bundles) -> Path:
    """A host root where v1 then v2 were synced."""
    root = tmp_path_factory.mktemp("base") / "host"
    for version in ("v1", "v2"):
        done = run_local("model-sync.yml", {"host": root}, hybridctl_bundle_dir=str(bundles.good[version]),
                         hybridctl_bundle_public_key_file=str(bundles.public_key))
        assert done.succeeded, describe(done)
    return root


def upload_dir(root: Path, bundle: Path, version: str) -> Path:
    digest = hashlib.sha256((bundle / "manifest.json").read_bytes()).hexdigest()
    return model_dir(root) / ".incoming" / f"{version}-{digest[:16]}"


@pytest.fixture(scope="module")
def runs(base: Path, tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook,
         bundles: Bundles) -> tuple[dict[str, Path], PlaybookResult]:
    roots = copy_roots(base, ["resumed", "same", "full", "touched", "live_lock", "dead_lock"],
                       tmp_path_factory.mktemp("hosts"))
    # A sync of v3 that is running (its record is fresh), and one that died two minutes ago.
    for name, age_s in (("live_lock", 0), ("dead_lock", 120)):
        owner = model_dir(roots[name]) / ".sync-owner"
        owner.write_text(json.dumps({"token": "other-run", "upload": None, "version": "v3", "since": "earlier"}))
        os.utime(owner, (time.time() - age_s, time.time() - age_s))
    # An upload of v3 cut off mid-way: the weights arrived whole, config.json only in part;
    # and an upload of another bundle that a killed run left behind.
    partial = upload_dir(roots["resumed"], bundles.good["v3"], "v3")
    (partial / "weights").mkdir(parents=True)
    (partial / "weights/model.safetensors").write_bytes(payload("v3")["weights/model.safetensors"])
    (partial / "config.json").write_bytes(b"{")
    stale = model_dir(roots["resumed"]) / ".incoming/v9-0123456789abcdef"
    stale.mkdir()
    (stale / "big.bin").write_bytes(b"x" * 1000)
    os.utime(model_dir(roots["touched"]) / "versions/v2/config.json")  # metadata changed, bytes did not
    host_vars = {
        "resumed": {"hybridctl_bundle_dir": str(bundles.good["v3"])},
        "same": {"hybridctl_bundle_dir": str(bundles.good["v2"])},
        "full": {"hybridctl_bundle_dir": str(bundles.good["v2"]), "hybridctl_common_verify_full": True},
        "touched": {"hybridctl_bundle_dir": str(bundles.good["v2"])},
        "live_lock": {"hybridctl_bundle_dir": str(bundles.good["v3"])},
        "dead_lock": {"hybridctl_bundle_dir": str(bundles.good["v3"])},
    }
    return roots, run_local("model-sync.yml", roots, host_vars=host_vars)


class TestResumedUpload:
    def test_only_the_missing_files_are_sent_and_the_result_is_verified(
            self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        roots, result = runs
        host = result.host("resumed")
        assert host.state is HostState.CHANGED and host.data["status"] == "activated", describe(result)
        # config.json (partial), tokenizer/vocab.txt, manifest.json, manifest.sig; not the weights.
        assert host.data["sent_files"] == 4
        current = model_dir(roots["resumed"]) / "current"
        for relative, data in payload("v3").items():
            assert (current / relative).read_bytes() == data

    def test_leftovers_of_other_runs_are_removed_at_the_start(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        roots, _ = runs
        assert not (model_dir(roots["resumed"]) / ".incoming").exists()
        assert not (model_dir(roots["resumed"]) / ".sync-owner").exists()

    def test_the_disk_check_is_reported(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        _, result = runs
        disk = result.host("resumed").data["disk"]
        assert disk["needed_bytes"] > 0 and disk["free_bytes"] > disk["needed_bytes"]


class TestInstalledCheck:
    def test_an_unchanged_install_is_checked_by_its_metadata(self, runs: tuple[dict[str, Path], PlaybookResult],
                                                            run_local: RunPlaybook, bundles: Bundles) -> None:
        roots, result = runs
        host = result.host("same")
        # The copied root has new inodes: the first check re-hashes and records them.
        assert host.state is HostState.OK and host.data["status"] == "unchanged", describe(result)
        assert host.data["installed_check"] == "sha256"
        again = run_local("model-sync.yml", {"same": roots["same"]}, hybridctl_bundle_dir=str(bundles.good["v2"]))
        assert again.host("same").data["installed_check"] == "metadata", describe(again)
        assert again.host("same").changed == 0

    def test_verify_full_rehashes(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        _, result = runs
        host = result.host("full")
        assert host.data["installed_check"] == "sha256" and host.data["status"] == "unchanged", describe(result)

    def test_changed_metadata_means_a_rehash(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        roots, result = runs
        host = result.host("touched")
        assert host.data["installed_check"] == "sha256" and host.data["status"] == "unchanged", describe(result)
        assert current_version(roots["touched"]) == "v2"


class TestLock:
    def test_a_running_sync_of_the_model_turns_another_away(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        roots, result = runs
        host = result.host("live_lock")
        assert host.state is HostState.FAILED and host.data["status"] == "busy", describe(result)
        assert "another sync of fraud-scorer is running on live_lock (version v3" in (host.message or "")
        assert current_version(roots["live_lock"]) == "v2"
        assert json.loads((model_dir(roots["live_lock"]) / ".sync-owner").read_text())["token"] == "other-run"

    def test_the_lock_of_a_dead_sync_is_taken_over(self, runs: tuple[dict[str, Path], PlaybookResult]) -> None:
        roots, result = runs
        host = result.host("dead_lock")
        assert host.data["status"] == "activated", describe(result)
        assert current_version(roots["dead_lock"]) == "v3"
        assert not (model_dir(roots["dead_lock"]) / ".sync-owner").exists()


# Long enough that, on a loaded machine, the probe's `ansible` run has returned and the test has looked at the
# held lock before the hold ends (with 1 s, the lock was once gone before the test read it).
HOLD_S = 6


class TestHeldProbe:
    @staticmethod
    def _probe(root: Path, bundle: Path, tmp_path: Path, host_tmp: Path) -> dict[str, object]:
        """The probe as the action plugin runs it, with hold_s HOLD_S, on a host whose temp dir is host_tmp."""
        manifest = (bundle / "manifest.json").read_bytes()
        files = {f["path"]: f["size_bytes"] for f in json.loads(manifest)["files"]}
        files.update({name: (bundle / name).stat().st_size for name in ("manifest.json", "manifest.sig")})
        arguments = {"phase": "probe", "host": "orphan", "model": MODEL, "version": "v3",
                     "model_dir": str(model_dir(root)), "trust_dir": str(root / "etc/hybridctl/trust"),
                     "manifest_sha256": hashlib.sha256(manifest).hexdigest(), "files": files, "token": "gone",
                     "artifact_path_pattern": "^[A-Za-z0-9._/-]+$", "hold_s": HOLD_S}
        common = playbooks_dir() / "roles/hybridctl_common"
        host_tmp.mkdir(exist_ok=True)
        env = {**os.environ, "ANSIBLE_LIBRARY": str(common / "library"), "TMPDIR": str(host_tmp),
               "ANSIBLE_MODULE_UTILS": str(common / "module_utils"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "tmp")}
        probed = subprocess.run(
            [str(Path(sys.executable).parent / "ansible"), "localhost", "-c", "local", "-m", "hybridctl_model_host",
             "-a", json.dumps(arguments), "-e", f"ansible_python_interpreter={sys.executable}"],
            capture_output=True, text=True, env=env, timeout=60, check=False)
        assert probed.returncode == 0, probed.stdout + probed.stderr
        answer: dict[str, object] = json.loads(probed.stdout.split("=>", 1)[1])
        return answer

    def test_a_held_probe_whose_controller_never_comes_back_releases_the_lock_and_keeps_the_upload(
            self, base: Path, tmp_path: Path, bundles: Bundles) -> None:
        root = copy_roots(base, ["orphan"], tmp_path / "hosts")["orphan"]
        bundle = bundles.good["v3"]
        # The probe; then no go and no stop ever come.
        answer = self._probe(root, bundle, tmp_path, tmp_path / "host-tmp")
        assert answer["held"] is True and not answer["version_ok"]
        owner = model_dir(root) / ".sync-owner"
        assert json.loads(owner.read_text())["token"] == "gone"
        upload = upload_dir(root, bundle, "v3")
        (upload / "weights/model.safetensors").write_bytes(b"part")  # the copy had begun
        hold_dir = Path(str(answer["hold_dir"]))
        # The child releases the lock, then removes its dir: a loaded host may be seen between the two.
        deadline = time.monotonic() + HOLD_S + 20
        while (owner.exists() or hold_dir.exists()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not owner.exists()  # released after hold_s, not left for the stale-lock takeover
        assert not hold_dir.exists()  # nobody is left to read a result
        assert (upload / "weights/model.safetensors").read_bytes() == b"part"  # kept, to be resumed
        assert current_version(root) == "v2"

    def test_the_dir_of_a_killed_holder_is_removed_by_the_next_hold_and_live_ones_are_left(
            self, base: Path, tmp_path: Path, bundles: Bundles) -> None:
        root = copy_roots(base, ["orphan"], tmp_path / "hosts")["orphan"]
        host_tmp = tmp_path / "host-tmp"
        host_tmp.mkdir()
        ended = subprocess.Popen(["true"])
        ended.wait()
        dirs = {name: host_tmp / f"hybridctl-hold-{name}" for name in ("killed", "live", "being-made", "ended")}
        for name, directory in dirs.items():
            directory.mkdir(mode=0o700)
            if name != "being-made":
                (directory / "holder").write_text(str(os.getpid() if name == "live" else ended.pid))
        # a child that ended after writing its result, which its controller is about to read
        (dirs["ended"] / "result").write_text("{}")
        answer = self._probe(root, bundles.good["v3"], tmp_path, host_tmp)
        assert answer["held"] is True
        assert not dirs["killed"].exists()
        assert dirs["live"].is_dir() and dirs["being-made"].is_dir() and dirs["ended"].is_dir()
