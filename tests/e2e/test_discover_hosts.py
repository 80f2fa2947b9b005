"""`hybridctl discover` against real SSH hosts with fake GPUs: declared against found."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HYBRIDCTL = str(Path(sys.executable).parent / "hybridctl")


def _inventory(hosts: list[object]) -> str:
    lines = ["version: 1", "name: discover", "sites:",
             "  - name: dc-lab", "    kind: onprem", "    jurisdiction: EU", "    egress_usd_per_gb: 0",
             "    latency_ms: {}", "    hosts:"]
    lines += [f"      - {{name: {h.name}, address: {h.address}, pool: lab-h100}}" for h in hosts]  # type: ignore[attr-defined]
    lines += ["    pools:", f"      - {{name: lab-h100, gpu: H100, gpus: {4 * len(hosts)}, capacity_type: reserved, "
              "usd_per_gpu_hour: 2.0}"]
    return "\n".join(lines) + "\n"


@pytest.mark.hosts
def test_discover_finds_fake_gpus_and_flags_a_mismatch(host_lab: object, tmp_path: Path) -> None:
    good, short = host_lab.start(2, names=["lab-gpu-01", "lab-gpu-02"],  # type: ignore[attr-defined]
                                 gpus={"lab-gpu-01": 4, "lab-gpu-02": 2})
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(_inventory([good, short]))
    result = subprocess.run(
        [HYBRIDCTL, "discover", str(inventory), "--format", "json", "--state", str(tmp_path / "state"),
         "--known-hosts", str(host_lab.known_hosts_path), "--ssh-key", str(host_lab.client_key_path)],  # type: ignore[attr-defined]
        capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, result.stdout + result.stderr
    hosts = {h["host"]: h for h in json.loads(result.stdout)["hosts"]}
    assert hosts["lab-gpu-01"]["state"] == "ok"
    assert hosts["lab-gpu-01"]["found_gpus"] == 4 and hosts["lab-gpu-01"]["declared_gpus"] == 4
    assert any("H100" in m for m in hosts["lab-gpu-01"]["found_models"])
    assert hosts["lab-gpu-02"]["state"] == "mismatch"
    assert "declares 4 × H100, found 2" in hosts["lab-gpu-02"]["problems"]
