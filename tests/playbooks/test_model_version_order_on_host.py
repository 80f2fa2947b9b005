"""Model versions ordered across a digit boundary on the host, and by status on the controller (issue 34, #12).

The playbook tests sync v1, v2, v3, which sort the same as text and as versions, so a host that sorted
version names as text (v10 < v9, 1.10 < 1.9) went unnoticed. These cases are worked by hand, each one
ordered differently by a text sort:

- a sync refuses only a version that orders at or below the active one (v10 after v9 is an upgrade);
- prune keeps `previous` and the newest others (v10, v9 of v1 v2 v9 v10 v11 v12), removing the oldest;
- a rollback to v10 makes the newest installed version below it (v9) the new `previous`;
- `status --drift` calls a host on v9 where the plan says v10 behind, on 1.10 where it says 1.9 ahead.

The host module runs in-process here (its phases are plain methods over a model directory), with the
copy of its rules it ships in module_utils.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from hybridctl.core.deploy.model_versions import ExpectedModel, VersionState, compare
from hybridctl.paths import playbooks_dir

ROLE = playbooks_dir() / "roles" / "hybridctl_common"


@pytest.fixture(scope="module")
def host_module() -> Iterator[ModuleType]:
    """hybridctl_model_host.py, its `ansible.module_utils.hybridctl_*` imports served from the role's files."""
    with pytest.MonkeyPatch.context() as patch:  # sys.modules as it was once the module's tests are done
        for name in ("hybridctl_models", "hybridctl_model_store", "hybridctl_model_hold"):
            _load(patch, f"ansible.module_utils.{name}", ROLE / "module_utils" / f"{name}.py")
        yield _load(patch, "hybridctl_model_host_under_test", ROLE / "library" / "hybridctl_model_host.py")


def _load(patch: pytest.MonkeyPatch, name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    patch.setitem(sys.modules, name, module)  # before it runs: the next one imports it
    spec.loader.exec_module(module)
    return module


def _host(host_module: ModuleType, model_dir: Path, installed: list[str], **params: Any) -> Any:
    for version in installed:
        (model_dir / "versions" / version).mkdir(parents=True)
    defaults = {"model": "ranker", "host": "gpu-1", "model_dir": str(model_dir), "trust_dir": str(model_dir / "trust"),
                "keep_previous": 2, "stale_s": 60, "token": "t", "target": None, "version": None}
    return host_module.Host(SimpleNamespace(params={**defaults, **params}, check_mode=False))


def _installed(model_dir: Path) -> list[str]:
    return sorted(os.listdir(model_dir / "versions"))


class TestASyncNeverGoesBack:
    @pytest.mark.parametrize(("version", "current"), [("v10", "v9"), ("1.10", "1.9"), ("v2.10.0", "v2.9.3"),
                                                      ("10", "9"), ("2026.05.10", "2026.05.9")])
    def test_a_newer_version_across_a_digit_boundary_is_no_downgrade(self, host_module: ModuleType, tmp_path: Path,
                                                                     version: str, current: str) -> None:
        _host(host_module, tmp_path, [], version=version).refuse_downgrade(current)

    @pytest.mark.parametrize(("version", "current"), [("v9", "v10"), ("1.9", "1.10"), ("9", "10")])
    def test_an_older_one_is_refused(self, host_module: ModuleType, tmp_path: Path, version: str,
                                     current: str) -> None:
        with pytest.raises(host_module.Refused) as refused:
            _host(host_module, tmp_path, [], version=version).refuse_downgrade(current)
        assert str(refused.value).startswith(f"{version} is older than the active version {current} (or orders "
                                             "the same): a sync never goes back")


class TestPrune:
    def test_the_oldest_go_and_the_newest_stay(self, host_module: ModuleType, tmp_path: Path) -> None:
        # current v12, previous v11; keep_previous 3: previous and the two newest others (v10, v9) stay
        host = _host(host_module, tmp_path, ["v1", "v2", "v9", "v10", "v11", "v12"], keep_previous=3)
        result: dict[str, Any] = {}
        assert host.prune("v12", "v11", result) == ["v1", "v2"]  # oldest first
        assert result == {"changed": True}
        assert _installed(tmp_path) == ["v10", "v11", "v12", "v9"]

    def test_what_is_pruned_is_listed_oldest_first(self, host_module: ModuleType, tmp_path: Path) -> None:
        host = _host(host_module, tmp_path, ["v9", "v10", "v11", "v12"], keep_previous=1)
        assert host.prune("v12", "v11", {}) == ["v9", "v10"]
        assert _installed(tmp_path) == ["v11", "v12"]

    def test_dotted_versions(self, host_module: ModuleType, tmp_path: Path) -> None:
        host = _host(host_module, tmp_path, ["1.2", "1.9", "1.10", "1.11"], keep_previous=2)
        assert host.prune("1.11", "1.10", {}) == ["1.2"]  # previous 1.10 and the newest other, 1.9, stay
        assert _installed(tmp_path) == ["1.10", "1.11", "1.9"]


class TestRollback:
    def test_previous_moves_to_the_newest_version_below_the_target(self, host_module: ModuleType,
                                                                    tmp_path: Path) -> None:
        host = _host(host_module, tmp_path, ["v2", "v9", "v10", "v11"], target="v10")
        host.installed_ok = lambda version, keys: ({"version": version}, None)  # the copy's check is not the case
        os.symlink("versions/v11", tmp_path / "current")
        os.symlink("versions/v10", tmp_path / "previous")
        result: dict[str, Any] = {}
        host.rollback(result)
        assert (result["current"], result["previous"], result["rolled_back_from"]) == ("v10", "v9", "v11")
        assert (os.readlink(tmp_path / "current"), os.readlink(tmp_path / "previous")) == ("versions/v10",
                                                                                           "versions/v9")

    def test_the_newest_of_several_older_versions_becomes_previous(self, host_module: ModuleType,
                                                                    tmp_path: Path) -> None:
        host = _host(host_module, tmp_path, ["v2", "v9", "v10", "v11", "v12"], target="v11")
        host.installed_ok = lambda version, keys: ({"version": version}, None)
        os.symlink("versions/v12", tmp_path / "current")
        result: dict[str, Any] = {}
        host.rollback(result)
        assert (result["current"], result["previous"]) == ("v11", "v10")  # not v9, the last of them as text
        assert os.readlink(tmp_path / "previous") == "versions/v10"

    def test_nothing_older_than_the_oldest(self, host_module: ModuleType, tmp_path: Path) -> None:
        host = _host(host_module, tmp_path, ["v9", "v10"], target="v9")
        host.installed_ok = lambda version, keys: ({"version": version}, None)
        os.symlink("versions/v10", tmp_path / "current")
        result: dict[str, Any] = {}
        host.rollback(result)
        assert (result["current"], result["previous"]) == ("v9", None)
        assert not os.path.lexists(tmp_path / "previous")


class TestStatusOnTheController:
    @pytest.mark.parametrize(("expected", "active", "state"), [
        ("v10", "v9", VersionState.BEHIND), ("v9", "v10", VersionState.AHEAD),
        ("1.9", "1.10", VersionState.AHEAD), ("1.10", "1.9", VersionState.BEHIND),
        ("2026.05.10", "2026.05.9", VersionState.BEHIND), ("10", "9", VersionState.BEHIND),
        ("v10", "v10", VersionState.AS_PLANNED)])
    def test_behind_or_ahead(self, expected: str, active: str, state: VersionState) -> None:
        row = compare(ExpectedModel("gpu-1", "dc-a", "ranker", "ranker", expected),
                      {"current": active, "activated_at": "2026-11-26T10:00:00Z"})
        assert (row.state, row.expected, row.active) == (state, expected, active)
