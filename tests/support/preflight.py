"""The preflight action plugin, loaded as a module: its parsing and verdicts are tested without Ansible."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from hybridctl.paths import playbooks_dir


def preflight_plugin(name: str) -> ModuleType:
    """A fresh module of the plugin under `name` (each test file its own, so none sees another's patches)."""
    path = playbooks_dir() / "roles" / "preflight" / "action_plugins" / "hybridctl_preflight.py"
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
