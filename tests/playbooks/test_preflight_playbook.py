"""preflight.yml against local host roots, with stand-in nvidia-smi scripts."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hybridctl.drivers.ansible import HostState, PlaybookResult

from .support import RunPlaybook, describe

pytestmark = pytest.mark.slow

H100_ROWS = "0, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n1, NVIDIA H100 80GB HBM3, 81559, 550.54.15\n"


def fake_nvidia_smi(directory: Path, stdout: str, rc: int = 0) -> Path:
    """A script that prints what nvidia-smi prints for the query preflight makes."""
    script = directory / "nvidia-smi"
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}EOF\nexit {rc}\n")
    script.chmod(0o755)
    return script


@dataclass(frozen=True)
class PreflightRun:
    roots: dict[str, Path]
    result: PlaybookResult


@pytest.fixture(scope="module")
def preflight(tmp_path_factory: pytest.TempPathFactory, run_local: RunPlaybook) -> PreflightRun:
    base = tmp_path_factory.mktemp("preflight")
    h100 = str(fake_nvidia_smi(base / "bin-h100", H100_ROWS))
    broken = str(fake_nvidia_smi(base / "bin-broken", "NVIDIA-SMI has failed because it couldn't communicate "
                                 "with the NVIDIA driver.\n", rc=9))
    hung = base / "bin-hung/nvidia-smi"
    hung.parent.mkdir(parents=True)
    hung.write_text("#!/bin/sh\nexec sleep 60\n")
    hung.chmod(0o755)
    host_vars: dict[str, dict[str, object]] = {
        "gpu": {"preflight_nvidia_smi": h100, "hybridctl_gpu": "H100", "hybridctl_expected_gpus": 2,
                "hybridctl_min_driver_version": "535.104", "preflight_model_cache_required_gb": 0.001},
        "cpu": {"preflight_nvidia_smi": str(base / "nowhere/nvidia-smi")},
        "wrong": {"preflight_nvidia_smi": h100, "hybridctl_gpu": "L4", "hybridctl_expected_gpus": 4,
                  "hybridctl_min_driver_version": "560"},
        "full": {"preflight_nvidia_smi": h100, "preflight_model_cache_required_gb": 10**9},
        "broken": {"preflight_nvidia_smi": broken, "hybridctl_gpu": "H100"},
        # GPUs planned, but neither driver nor toolkit; its pool's lowest driver comes from the per-pool setting.
        "bare": {"preflight_nvidia_smi": str(base / "nowhere/nvidia-smi"), "hybridctl_expected_gpus": 2,
                 "hybridctl_pool": "a100"},
        "hung": {"preflight_nvidia_smi": str(hung), "preflight_nvidia_smi_timeout_s": 1},
    }
    roots = {name: base / name for name in host_vars}
    for name in ("gpu", "wrong"):  # the container toolkit's runtime (a placeholder: nothing runs it)
        runtime = roots[name] / "usr/bin/nvidia-container-runtime"
        runtime.parent.mkdir(parents=True)
        runtime.write_text("#!/bin/sh\n")
        runtime.chmod(0o755)
    return PreflightRun(roots, run_local("preflight.yml", roots, host_vars=host_vars,
                                         preflight_min_driver_versions={"a100": "535.104"}))


class TestPreflight:
    def test_gpus_driver_and_disk_are_reported(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("gpu")
        assert host.state is HostState.OK, describe(preflight.result)
        data: dict[str, Any] = dict(host.data)
        assert data["ok"] is True and data["problems"] == [] and data["nvidia_smi"] == "ok"
        assert data["gpu_count"] == 2 and data["driver_version"] == "550.54.15"
        assert data["gpus"][1] == {"index": 1, "name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559,
                                   "driver_version": "550.54.15"}
        disk = data["disk"]
        assert disk["path"] == str(preflight.roots["gpu"] / "var/lib/hybridctl/models")
        # The cache does not exist yet: its nearest existing ancestor is measured.
        assert Path(disk["measured_path"]).is_dir() and disk["path"].startswith(disk["measured_path"])
        assert disk["available_bytes"] > 0 and disk["required_bytes"] == 1_000_000
        assert data["os"]["distribution"] and data["reachable"] is True
        assert data["container_toolkit"] == {"runtime": "present", "nvidia_ctk": None}

    def test_a_host_without_nvidia_smi_has_no_gpus_and_passes(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("cpu")
        assert host.state is HostState.OK, describe(preflight.result)
        assert host.data["nvidia_smi"] == "absent" and host.data["gpu_count"] == 0
        assert host.data["gpus"] == [] and host.data["driver_version"] is None

    def test_wrong_type_count_and_old_driver_fail_with_every_problem(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("wrong")
        assert host.state is HostState.FAILED
        assert host.data["problems"] == [
            "found 2 GPUs, expected 4",
            "GPU 0 is NVIDIA H100 80GB HBM3, expected L4",
            "GPU 1 is NVIDIA H100 80GB HBM3, expected L4",
            "driver 550.54.15 is older than 560",
        ]
        assert host.message is not None and "found 2 GPUs, expected 4" in host.message

    def test_too_little_disk_fails(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("full")
        assert host.state is HostState.FAILED
        problems: list[str] = list(host.data["problems"])  # type: ignore[call-overload]
        (problem,) = problems
        assert "GB free, needs 1000000000 GB" in problem

    def test_a_failing_nvidia_smi_is_a_problem_not_zero_gpus(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("broken")
        assert host.state is HostState.FAILED
        assert host.data["nvidia_smi"] == "failed"
        assert host.data["problems"] == ["nvidia-smi failed: NVIDIA-SMI has failed because it couldn't "
                                         "communicate with the NVIDIA driver."]

    def test_a_gpu_host_without_driver_or_toolkit_fails_naming_both(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("bare")
        assert host.state is HostState.FAILED
        assert host.data["problems"] == [
            f"NVIDIA driver missing: {preflight.roots['bare'].parent}/nowhere/nvidia-smi not found; install the"
            " NVIDIA driver 535.104 or later",
            "NVIDIA container toolkit missing: /usr/bin/nvidia-container-runtime not found; install"
            " nvidia-container-toolkit",
            "found 0 GPUs, expected 2",
        ]
        assert host.data["min_driver_version"] == "535.104"

    def test_a_hung_nvidia_smi_is_reported_as_a_hung_driver(self, preflight: PreflightRun) -> None:
        host = preflight.result.host("hung")
        assert host.state is HostState.FAILED
        assert host.data["problems"] == ["nvidia-smi did not answer within 1 s: the NVIDIA driver is hung"]
