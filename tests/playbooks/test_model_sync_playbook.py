"""model-sync.yml and rollback.yml against local host roots: activation, refusal, rollback.

Each scenario is one playbook run over several hosts, each host prepared differently
(its own bundle through the host variable hybridctl_bundle_dir); the tests then check
each host's outcome. Hosts start from a copy of a root where v1 then v2 were synced.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from hybridctl.core.deploy.bundle import key_id
from hybridctl.drivers.ansible import (
    AnsibleEvent,
    EventKind,
    HostState,
    PlaybookResult,
    RunStatus,
    SshOptions,
    run_playbook,
)
from hybridctl.drivers.bundle import load_public_key
from hybridctl.paths import playbooks_dir

from .support import (
    MODEL,
    Bundles,
    RunPlaybook,
    copy_roots,
    current_version,
    describe,
    local_inventory,
    model_dir,
    payload,
    versions,
)

pytestmark = pytest.mark.slow


@dataclass(frozen=True)
class Scenario:
    roots: dict[str, Path]
    result: PlaybookResult


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook, bundles: Bundles) -> Scenario:
    """Two hosts that received v1, then v2; v1's run is kept in `result` for the first sync checks."""
    base = tmp_path_factory.mktemp("installed")
    roots = {"a": base / "a", "b": base / "b"}
    first = run_local("model-sync.yml", roots, hybridctl_bundle_dir=str(bundles.good["v1"]),
                      hybridctl_bundle_public_key_file=str(bundles.public_key))
    assert first.succeeded, describe(first)
    second = run_local("model-sync.yml", roots, hybridctl_bundle_dir=str(bundles.good["v2"]))
    assert second.succeeded, describe(second)
    return Scenario(roots, second)


def prepared(installed: Scenario, tmp_path_factory: pytest.TempPathFactory, names: list[str]) -> dict[str, Path]:
    return copy_roots(installed.roots["a"], names, tmp_path_factory.mktemp("hosts"))


class TestActivation:
    def test_each_host_activates_the_new_version_and_remembers_the_previous(self, installed: Scenario) -> None:
        for host, root in installed.roots.items():
            data = installed.result.host(host).data
            assert data["status"] == "activated" and data["current"] == "v2" and data["previous"] == "v1"
            assert current_version(root) == "v2"
            assert os.readlink(model_dir(root) / "current") == "versions/v2"  # relative: survives a moved root
            assert os.readlink(model_dir(root) / "previous") == "versions/v1"
            assert versions(root) == ["v1", "v2"]

    def test_installed_files_are_the_bundle_files(self, installed: Scenario, bundles: Bundles) -> None:
        current = model_dir(installed.roots["b"]) / "current"
        for relative, data in payload("v2").items():
            assert (current / relative).read_bytes() == data
        assert (current / "manifest.sig").read_bytes() == (bundles.good["v2"] / "manifest.sig").read_bytes()
        # The first sync pinned the key it was given, under its key ID, and says so.
        key = key_id(load_public_key(bundles.public_key))
        trusted = installed.roots["b"] / f"etc/hybridctl/trust/keys/{key}.pem"
        assert trusted.read_bytes() == bundles.public_key.read_bytes()
        assert [p.name for p in trusted.parent.iterdir()] == [f"{key}.pem"]


@pytest.fixture(scope="module")
def refusals(installed: Scenario, tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook,
             bundles: Bundles) -> Scenario:
    kinds = ["tampered", "unsigned", "wrong_key", "extra", "manifest"]
    roots = prepared(installed, tmp_path_factory, ["good", *kinds])
    host_vars = {kind: {"hybridctl_bundle_dir": str(bundles.broken[kind])} for kind in kinds}
    host_vars["good"] = {"hybridctl_bundle_dir": str(bundles.good["v3"])}
    # The plan recorded another manifest digest than the bundle now on the controller has.
    roots["stale_plan"] = tmp_path_factory.mktemp("stale_plan")
    host_vars["stale_plan"] = {"hybridctl_bundle_dir": str(bundles.good["v3"]), "hybridctl_bundle_sha256": "0" * 64}
    # A host that never received the trusted key (and this run passes none).
    roots["untrusted"] = tmp_path_factory.mktemp("untrusted")
    host_vars["untrusted"] = {"hybridctl_bundle_dir": str(bundles.good["v3"])}
    return Scenario(roots, run_local("model-sync.yml", roots, host_vars=host_vars))


class TestRefusal:
    @pytest.mark.parametrize("kind,reason", [
        ("tampered", "sha256 mismatch in weights/model.safetensors"),
        ("unsigned", "bundle is not signed: manifest.sig is missing"),
        ("wrong_key", "manifest.sig does not verify manifest.json with any key trusted on wrong_key"),
        ("manifest", "manifest.sig does not verify manifest.json with any key trusted on manifest"),
        ("extra", "tokenizer/loader.py: present but not listed in the manifest"),
    ])
    def test_bad_bundle_is_refused_and_the_host_stays_on_its_version(self, refusals: Scenario, kind: str,
                                                                     reason: str) -> None:
        host = refusals.result.host(kind)
        assert host.state is HostState.FAILED, describe(refusals.result)
        # An unlisted file is refused on the controller, before the host is contacted.
        stays = "stays on the version it had" if kind == "extra" else "stays on v2"
        assert host.message is not None and reason in host.message and stays in host.message
        assert host.data["status"] == "refused" and reason in str(host.data["reason"])
        root = refusals.roots[kind]
        assert current_version(root) == "v2"
        assert versions(root) == ["v1", "v2"]  # the staged copy is gone, nothing else touched

    def test_a_host_without_a_trusted_key_is_refused(self, refusals: Scenario) -> None:
        host = refusals.result.host("untrusted")
        assert host.state is HostState.FAILED, describe(refusals.result)
        assert host.message is not None and "has no trusted model-signing key" in host.message
        assert host.data["status"] == "refused" and current_version(refusals.roots["untrusted"]) is None

    def test_a_bundle_other_than_the_planned_one_is_refused_before_copying(self, refusals: Scenario) -> None:
        host = refusals.result.host("stale_plan")
        assert host.state is HostState.FAILED, describe(refusals.result)
        assert host.message is not None and f"manifest sha256 {'0' * 64}, found" in host.message
        assert not (refusals.roots["stale_plan"] / "var").exists()

    def test_a_good_bundle_in_the_same_run_is_activated(self, refusals: Scenario) -> None:
        host = refusals.result.host("good")
        assert host.state is HostState.CHANGED, describe(refusals.result)
        assert host.data["status"] == "activated" and host.data["previous"] == "v2"
        assert current_version(refusals.roots["good"]) == "v3"
        assert versions(refusals.roots["good"]) == ["v1", "v2", "v3"]  # keep_previous defaults to 2


@pytest.fixture(scope="module")
def resyncs(installed: Scenario, tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook,
            bundles: Bundles) -> Scenario:
    roots = prepared(installed, tmp_path_factory, ["same", "damaged", "republished", "interrupted", "pruned"])
    damaged = model_dir(roots["damaged"]) / "versions/v2/weights/model.safetensors"
    damaged.write_bytes(b"bitrot" + damaged.read_bytes()[6:])
    # What a run killed mid-way leaves: a half-staged copy and a temporary link.
    staging = model_dir(roots["interrupted"]) / "versions/.staging-v3"
    staging.mkdir()
    (staging / "partial.bin").write_bytes(b"half")
    (model_dir(roots["interrupted"]) / "current.hybridctl-tmp").symlink_to("versions/v1")
    host_vars: dict[str, dict[str, object]] = {
        "same": {"hybridctl_bundle_dir": str(bundles.good["v2"])},
        "damaged": {"hybridctl_bundle_dir": str(bundles.good["v2"])},
        "republished": {"hybridctl_bundle_dir": str(bundles.broken["republished_v2"])},
        "interrupted": {"hybridctl_bundle_dir": str(bundles.good["v3"])},
        "pruned": {"hybridctl_bundle_dir": str(bundles.good["v3"]), "model_sync_keep_previous": 0},
    }
    return Scenario(roots, run_local("model-sync.yml", roots, host_vars=host_vars))


class TestResync:
    def test_syncing_the_active_version_again_changes_nothing(self, resyncs: Scenario) -> None:
        host = resyncs.result.host("same")
        assert host.state is HostState.OK and host.changed == 0, describe(resyncs.result)
        assert host.data["status"] == "unchanged"

    def test_a_damaged_installed_copy_is_detected_and_replaced(self, resyncs: Scenario) -> None:
        host = resyncs.result.host("damaged")
        assert host.state is HostState.CHANGED, describe(resyncs.result)
        assert "sha256 mismatch in weights/model.safetensors" in str(host.data["repaired"])
        current = model_dir(resyncs.roots["damaged"]) / "current"
        assert (current / "weights/model.safetensors").read_bytes() == payload("v2")["weights/model.safetensors"]
        assert not (model_dir(resyncs.roots["damaged"]) / "versions/.trash-v2").exists()

    def test_a_published_version_cannot_be_replaced_with_other_content(self, resyncs: Scenario) -> None:
        host = resyncs.result.host("republished")
        assert host.state is HostState.FAILED
        assert host.message is not None and "versions are immutable" in host.message
        current = model_dir(resyncs.roots["republished"]) / "current"
        assert (current / "config.json").read_bytes() == payload("v2")["config.json"]

    def test_leftovers_of_an_interrupted_run_are_cleaned_up(self, resyncs: Scenario) -> None:
        host = resyncs.result.host("interrupted")
        assert host.state is HostState.CHANGED, describe(resyncs.result)
        directory = model_dir(resyncs.roots["interrupted"])
        assert current_version(resyncs.roots["interrupted"]) == "v3"
        assert sorted(p.name for p in directory.iterdir() if p.name not in (".lock", ".verified")) == [
            "current", "previous", "versions"]
        assert [p.name for p in (directory / "versions").iterdir() if p.name.startswith(".")] == []
        assert not (directory / "versions/v3/partial.bin").exists()

    def test_older_versions_are_pruned_but_previous_is_kept(self, resyncs: Scenario) -> None:
        host = resyncs.result.host("pruned")
        assert host.data["pruned"] == ["v1"], describe(resyncs.result)
        assert versions(resyncs.roots["pruned"]) == ["v2", "v3"]


class TestInterruption:
    def test_a_run_killed_mid_copy_leaves_the_host_serving_and_can_be_run_again(
            self, installed: Scenario, tmp_path_factory: pytest.TempPathFactory, bundles: Bundles) -> None:
        roots = prepared(installed, tmp_path_factory, ["killed"])
        work = tmp_path_factory.mktemp("work")
        (work / "known_hosts").touch()
        cancel = threading.Event()

        def on_event(event: AnsibleEvent) -> None:
            if event.kind is EventKind.TASK_STARTED and event.task == "Distribute, verify and activate the bundle":
                cancel.set()

        def sync(**kwargs: object) -> PlaybookResult:
            return run_playbook(playbooks_dir() / "model-sync.yml",
                                local_inventory(roots, {"killed": {"hybridctl_bundle_dir": str(bundles.good["v3"])}}),
                                ssh=SshOptions(known_hosts=work / "known_hosts"), work_dir=work, **kwargs)  # type: ignore[arg-type]

        killed = sync(on_event=on_event, cancel=cancel)
        assert killed.status is RunStatus.CANCELED, describe(killed)
        # Over a local connection the activation may win the race with the cancel: either way the
        # host serves a whole, verified version, never a half-copied one.
        served = current_version(roots["killed"])
        assert served in ("v2", "v3")
        served_bytes = (model_dir(roots["killed"]) / "current/weights/model.safetensors").read_bytes()
        assert served_bytes == payload(served)["weights/model.safetensors"]

        # A killed run that had already taken the model's lock leaves it behind: it goes stale after
        # model_sync_lock_stale_s without activity (shortened here), and the next run takes it over.
        time.sleep(1.5)
        again = sync(extravars={"model_sync_lock_stale_s": 1})
        expected = "activated" if served == "v2" else "unchanged"
        assert again.succeeded and again.host("killed").data["status"] == expected, describe(again)
        directory = model_dir(roots["killed"])
        assert current_version(roots["killed"]) == "v3" and os.readlink(directory / "previous") == "versions/v2"
        assert sorted(p.name for p in (directory / "versions").iterdir()) == ["v1", "v2", "v3"]
        assert (directory / "current/weights/model.safetensors").read_bytes() == payload("v3")["weights/model.safetensors"]


@pytest.fixture(scope="module")
def rollbacks(installed: Scenario, tmp_path_factory: pytest.TempPathFactory,
              run_local: RunPlaybook) -> tuple[Scenario, PlaybookResult]:
    roots = prepared(installed, tmp_path_factory, ["back", "explicit_missing", "damaged_target", "no_previous"])
    target = model_dir(roots["damaged_target"]) / "versions/v1/config.json"
    target.write_bytes(b"{}")
    (model_dir(roots["no_previous"]) / "previous").unlink()  # falls back to the manifest's rollback_to
    host_vars = {"explicit_missing": {"hybridctl_rollback_version": "v0"}}
    first = run_local("rollback.yml", roots, host_vars=host_vars, hybridctl_model=MODEL)
    again = run_local("rollback.yml", {"back": roots["back"]}, hybridctl_model=MODEL)
    return Scenario(roots, first), again


class TestRollback:
    def test_rollback_returns_to_the_previous_version(self, rollbacks: tuple[Scenario, PlaybookResult]) -> None:
        scenario, _ = rollbacks
        host = scenario.result.host("back")
        assert host.state is HostState.CHANGED, describe(scenario.result)
        assert host.data == {"playbook": "rollback", "model": MODEL, "status": "rolled_back", "current": "v1",
                             "rolled_back_from": "v2", "previous": None}
        assert current_version(scenario.roots["back"]) == "v1"

    def test_previous_moves_back_so_a_second_rollback_has_nothing_older(
            self, rollbacks: tuple[Scenario, PlaybookResult]) -> None:
        scenario, again = rollbacks
        assert not (model_dir(scenario.roots["back"]) / "previous").exists()  # never `previous` == `current`
        host = again.host("back")
        assert host.state is HostState.FAILED, describe(again)
        assert "has no older version to return to" in (host.message or "")
        assert current_version(scenario.roots["back"]) == "v1"

    def test_rolling_back_to_the_current_version_changes_nothing(
            self, rollbacks: tuple[Scenario, PlaybookResult], run_local: RunPlaybook) -> None:
        scenario, _ = rollbacks
        again = run_local("rollback.yml", {"back": scenario.roots["back"]}, hybridctl_model=MODEL,
                          hybridctl_rollback_version="v1")
        host = again.host("back")
        assert host.state is HostState.OK and host.changed == 0, describe(again)
        assert host.data["status"] == "unchanged" and current_version(scenario.roots["back"]) == "v1"

    def test_without_a_previous_link_the_manifest_rollback_target_is_used(
            self, rollbacks: tuple[Scenario, PlaybookResult]) -> None:
        scenario, _ = rollbacks
        assert current_version(scenario.roots["no_previous"]) == "v1", describe(scenario.result)

    def test_a_version_not_on_the_host_is_refused(self, rollbacks: tuple[Scenario, PlaybookResult]) -> None:
        scenario, _ = rollbacks
        host = scenario.result.host("explicit_missing")
        assert host.state is HostState.FAILED
        assert host.message is not None and "v0 is not on explicit_missing" in host.message
        assert current_version(scenario.roots["explicit_missing"]) == "v2"

    def test_a_damaged_target_is_refused(self, rollbacks: tuple[Scenario, PlaybookResult]) -> None:
        scenario, _ = rollbacks
        host = scenario.result.host("damaged_target")
        assert host.state is HostState.FAILED
        assert host.message is not None and "config.json: size is 2, the manifest says" in host.message
        assert current_version(scenario.roots["damaged_target"]) == "v2"
