"""Issue 34, item 12(i): preflight orders driver versions as numbers, field by field, across a digit
boundary; a comparison of the text would put "580.159.04" after "1000" and before "90".

The findings are computed on the controller from the probe's lines (action_plugins/hybridctl_preflight.py):
these tests feed it the lines of one GPU host with driver 580.159.04; only the minimum changes."""

from __future__ import annotations

import pytest
from support.preflight import preflight_plugin

PLUGIN = preflight_plugin("hybridctl_preflight_driver_order")
SETTINGS = {"models_dir": "/var/lib/hybridctl/models", "required_gb": 1, "installable": True,
            "driver_packages": False, "nvidia_smi": "nvidia-smi", "runtime_binary": "nvidia-container-runtime",
            "smi_timeout_s": 20, "gpu": "H100", "expected_gpus": 1}
PROBE = ["os=ubuntu|24.04|Ubuntu", "arch=x86_64", "python=3.12.3", "cpus=16", "mem_kb=131981020",
         "disk_path=/var/lib", "disk=16772696 4096", "runtime=absent", "ctk=",
         "smi_path=/usr/local/nvidia/bin/nvidia-smi", "smi_rc=0", "smi=0, NVIDIA H100 80GB HBM3, 81559, 580.159.04"]


@pytest.mark.parametrize(("minimum", "older"), [
    ("1000", True),         # 580 < 1000: three digits against four (as text "5" > "1": not older)
    ("90", False),          # 580 > 90 (as text "5" < "9": older)
    ("580.159.10", True),   # 580 = 580, 159 = 159, 4 < 10
    ("580.99", False),      # 159 > 99 (as text "1" < "9": older)
    ("580.159.04", False),  # the same version is not older
])
def test_the_driver_is_compared_with_the_minimum_as_numbers(minimum: str, older: bool) -> None:
    found = PLUGIN.findings(PROBE, {**SETTINGS, "min_driver_version": minimum})
    problem = f"driver 580.159.04 is older than {minimum}"
    assert (problem in found["problems"]) is older, found["problems"]
