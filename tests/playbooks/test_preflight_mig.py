"""preflight's checks on a real H100 host's nvidia-smi output (tests/data/nvidia-h100/, captured on the
machine): the GPUs as before, and its MIG mode; a pool of whole GPUs on a GPU in MIG mode is a problem.

The findings are computed on the controller from the probe's lines (action_plugins/hybridctl_preflight.py):
these tests feed it the real lines, no Ansible run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.preflight import preflight_plugin

REAL = Path(__file__).resolve().parents[1] / "data" / "nvidia-h100"


PLUGIN = preflight_plugin("hybridctl_preflight_under_test")
SETTINGS: dict[str, Any] = {
    # installable: the real host has no container toolkit, which node.yml would install (to_install)
    "models_dir": "/var/lib/hybridctl/models", "required_gb": 1, "installable": True, "driver_packages": False,
    "nvidia_smi": "nvidia-smi", "runtime_binary": "nvidia-container-runtime", "smi_timeout_s": 20,
    "gpu": "H100", "expected_gpus": 1, "min_driver_version": "550",
}


def probe_lines() -> list[str]:
    """The probe's lines as the real host printed them (less the capture's own trailer)."""
    return [line for line in (REAL / "probe.txt").read_text().splitlines() if not line.startswith("probe rc=")]


def real_mig_line(mode: str | None = None) -> str:
    """`index, mig.mode.current` of the real host, from its `nvidia-smi --query-gpu=...,mig.mode.current,...`
    capture (facts.txt); `mode` replaces the current mode (what the host would print with MIG on)."""
    lines = (REAL / "facts.txt").read_text().splitlines()
    header_at = next(i for i, line in enumerate(lines) if "mig.mode.current" in line)
    header = [h.strip() for h in lines[header_at].split(",")]
    row = [c.strip() for c in lines[header_at + 1].split(",")]
    found = dict(zip(header, row, strict=True))
    return f"mig={found['index']}, {mode or found['mig.mode.current']}"


def test_the_real_probe_reads_the_h100_and_knows_no_mig_mode_without_the_query() -> None:
    found = PLUGIN.findings(probe_lines(), SETTINGS)
    assert found["ok"] and found["problems"] == [] and found["to_install"] == ["nvidia-container-toolkit"]
    assert found["gpus"] == [{"index": 0, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559,
                              "driver_version": "580.159.04"}]
    assert found["mig_mode"] == {}


def test_the_real_mig_mode_is_reported() -> None:
    assert real_mig_line() == "mig=0, Disabled"  # what the real host answered
    found = PLUGIN.findings([*probe_lines(), "mig_rc=0", real_mig_line()], SETTINGS)
    assert found["ok"] and found["mig_mode"] == {"0": "Disabled"}


@pytest.mark.parametrize(("line", "problem"), [
    ("mig=0, Enabled, Enabled", "GPU 0 has MIG mode enabled, but its pool plans whole GPUs: disable it "
                                "(nvidia-smi -i 0 -mig 0, then reset the GPU)"),
    ("mig=0, Disabled, Enabled", "GPU 0 has MIG mode pending enabled (at its next reset), but its pool plans "
                                 "whole GPUs: nvidia-smi -i 0 -mig 0"),
])
def test_a_pool_of_whole_gpus_on_a_gpu_in_mig_mode_is_a_problem(line: str, problem: str) -> None:
    found = PLUGIN.findings([*probe_lines(), "mig_rc=0", line], SETTINGS)
    assert not found["ok"] and found["problems"] == [problem]


def test_the_real_row_with_mig_on_fails_the_host() -> None:
    found = PLUGIN.findings([*probe_lines(), "mig_rc=0", real_mig_line("Enabled")], SETTINGS)
    assert found["mig_mode"] == {"0": "Enabled"} and not found["ok"]


def test_no_mig_support_or_a_failed_query_is_no_problem() -> None:
    for extra in (["mig_rc=0", "mig=0, [N/A], [N/A]"], ["mig_rc=2", 'mig=Field "mig.mode.current" is not a valid field']):
        found = PLUGIN.findings([*probe_lines(), *extra], SETTINGS)
        assert found["ok"] and found["mig_mode"] == {}
    # a host planned no GPUs: MIG is its owner's business
    found = PLUGIN.findings([*probe_lines(), "mig_rc=0", "mig=0, Enabled, Enabled"], {**SETTINGS, "expected_gpus": 0})
    assert found["ok"] and found["mig_mode"] == {"0": "Enabled"}


def test_the_probe_asks_nvidia_smi_for_the_mig_mode() -> None:
    assert "--query-gpu=index,mig.mode.current,mig.mode.pending" in PLUGIN.PROBE
