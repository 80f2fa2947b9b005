"""The containerd config filters of node_baseline (pure: no containerd needed)."""

from __future__ import annotations

import importlib.util
import tomllib
from pathlib import Path
from types import ModuleType

import pytest
from hybridctl.paths import playbooks_dir


def _load() -> ModuleType:
    path = playbooks_dir() / "roles/node_baseline/filter_plugins/containerd_config.py"
    spec = importlib.util.spec_from_file_location("containerd_config", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cc = _load()
MAIN = "/etc/containerd/config.toml"
V3_DUMP = f"""imports = ["{MAIN}", "/etc/containerd/conf.d/site.toml"]
version = 3

[plugins."io.containerd.cri.v1.images"]
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "registry.site.example/pause:3.10"

[plugins."io.containerd.cri.v1.runtime".containerd]
  default_runtime_name = "runc"
  [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
      SystemdCgroup = false
      BinaryName = ""

[[plugins."io.containerd.transfer.v1.local".unpack_config]]
  platform = "linux/amd64"
  snapshotter = "overlayfs"
"""


def test_containerd_2_gets_the_runtime_under_its_own_plugin_and_keeps_everything_else() -> None:
    merged = cc.hybridctl_containerd_merge(V3_DUMP, "/usr/bin/nvidia-container-runtime", True, True, MAIN)
    config = tomllib.loads(merged["text"])
    runtime = config["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]
    assert runtime["default_runtime_name"] == "nvidia"
    # runc's own options win (SystemdCgroup false here), the binary is the NVIDIA one.
    assert runtime["runtimes"]["nvidia"]["options"] == {"SystemdCgroup": False,
                                                        "BinaryName": "/usr/bin/nvidia-container-runtime"}
    assert runtime["runtimes"]["runc"]["options"]["BinaryName"] == ""
    assert config["plugins"]["io.containerd.cri.v1.images"]["pinned_images"]["sandbox"].endswith("pause:3.10")
    assert config["plugins"]["io.containerd.transfer.v1.local"]["unpack_config"] == [
        {"platform": "linux/amd64", "snapshotter": "overlayfs"}]
    # Imports are resolved into the full config (the dump has merged them), and named.
    assert "imports" not in config and merged["folded_imports"] == ["/etc/containerd/conf.d/site.toml"]


def test_merging_what_containerd_loads_after_the_merge_changes_nothing() -> None:
    first = cc.hybridctl_containerd_merge(V3_DUMP, "/usr/bin/nvidia-container-runtime", True, True, MAIN)["text"]
    again = cc.hybridctl_containerd_merge(first, "/usr/bin/nvidia-container-runtime", True, True, MAIN)["text"]
    assert again == first


def test_not_the_default_runtime_when_asked_not_to_be() -> None:
    merged = cc.hybridctl_containerd_merge(V3_DUMP, "/opt/nvidia-runtime", False, True, MAIN)
    assert cc.hybridctl_containerd_runtimes(merged["text"]) == {
        "version": 3, "default_runtime": "runc", "runtimes": {"nvidia": "/opt/nvidia-runtime", "runc": ""}}


def test_strings_are_escaped_and_unsupported_versions_refused() -> None:
    text = cc.to_toml({"a": {"odd key": 'quote " and \\ and \n', "n": 1.5, "ok": True}})
    assert tomllib.loads(text) == {"a": {"odd key": 'quote " and \\ and \n', "n": 1.5, "ok": True}}
    with pytest.raises(cc.ContainerdConfigError, match="version 1 is not supported"):
        cc.hybridctl_containerd_merge("", "/x", True, True, MAIN)
    with pytest.raises(cc.ContainerdConfigError, match="no valid TOML"):
        cc.hybridctl_containerd_merge("[[[", "/x", True, True, MAIN)


def test_the_filters_are_registered() -> None:
    assert set(cc.FilterModule().filters()) == {"hybridctl_containerd_merge", "hybridctl_containerd_runtimes"}
    assert Path(cc.__file__).parent.name == "filter_plugins"
