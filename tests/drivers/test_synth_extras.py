"""The GCP and Azure SDKs are extras: a synth or apply that needs one says how to install it."""

from __future__ import annotations

from typing import Any

import pytest
from hybridctl.drivers import synth
from hybridctl.errors import HybridctlError
from hybridctl.paths import stacks_dir


@pytest.mark.parametrize(("project", "module", "extra"), [("gcp-gpu-pools", "pulumi_gcp", "gcp"),
                                                          ("azure-gpu-pools", "pulumi_azure_native", "azure")])
def test_a_missing_sdk_names_the_extra(monkeypatch: pytest.MonkeyPatch, project: str, module: str, extra: str) -> None:
    def missing(*_: Any) -> Any:
        raise ModuleNotFoundError(f"No module named '{module}'", name=module)

    monkeypatch.setattr(synth, "import_stack_module", missing)
    with pytest.raises(HybridctlError, match=f"needs the {module} package") as caught:
        synth.stack_program(project, stacks_dir())
    assert caught.value.hint == f"pip install 'hybridctl[{extra}]'"
