"""Pattern C end to end: inventories/multi-cloud-inference.yaml planned, synthesized, applied through the
recording cloud (EKS, GKE and AKS stacks), failed over when a whole provider is lost and rolled back, as
subprocesses the way users run them (its on-prem hosts left out: no SSH here)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hybridctl.drivers.state import StateStore, journal_problems
from hybridctl.paths import inventories_dir
from support.apply_cli import cli_env, write_inventory
from support.recording_cloud import RecordingCloud
from support.text import flat

_BOOT = ("import sys; import hybridctl.commands.apply_cmds, hybridctl.commands.failover_cmds; "
         "from hybridctl.commands.app import run; sys.argv[0] = 'hybridctl'; run()")
EXAMPLE = inventories_dir() / "multi-cloud-inference.yaml"
STACKS = {"multi-cloud-inference-aws-us-east-1", "multi-cloud-inference-serve-use1",
          "multi-cloud-inference-gcp-europe-west4", "multi-cloud-inference-gcp-us-central1",
          "multi-cloud-inference-azure-eastus"}


def cli(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _BOOT, *map(str, args)], env=cli_env(), cwd=cwd,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL, check=False)


def without_hosts() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    for site in document["sites"]:
        site.pop("hosts", None)
    return document


@pytest.fixture
def lab(tmp_path: Path) -> tuple[Path, Path]:
    return write_inventory(tmp_path / "inventory.yaml", without_hosts()), tmp_path / "state"


def ups(state: Path) -> list[str]:
    return [str(c["stack"]) for c in RecordingCloud(state / "recording-cloud").calls() if c["operation"] == "up"]


def applied(state: Path) -> dict[tuple[str, str], int]:
    plan = StateStore(state).read().applied_plan
    assert plan is not None
    return {(p["workload"], p["pool"]): p["replicas"] for p in plan["placements"]}  # type: ignore[index,misc]


def test_the_example_plans_with_nothing_unplaced_and_its_cloud_table_names_every_provider(tmp_path: Path) -> None:
    done = cli("plan", EXAMPLE, "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["unplaced"] == []
    projects = {c["project"] for c in doc["cloud_changes"]["changes"]}
    assert projects == {"aws-gpu-pools", "k8s-queues", "gcp-gpu-pools", "azure-gpu-pools"}


def test_the_example_synthesizes_gke_node_pools_and_aks_agent_pools(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    done = cli("synth", EXAMPLE, "--out", out, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    written = json.dumps(sorted(p.read_text() for p in out.rglob("*.json")))
    assert "gcp:container/nodePool:NodePool" in written and "azure-native:containerservice:AgentPool" in written


def test_apply_fail_over_a_lost_provider_and_roll_back(lab: tuple[Path, Path]) -> None:
    inventory, state = lab
    root = inventory.parent
    done = cli("apply", inventory, "--state", state, "--auto-approve", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert set(ups(state)) == STACKS
    original = applied(state)
    assert any(pool.startswith("eus-") for _, pool in original)

    done = cli("failover", "provider-lost", "azure", "--state", state, "--execute", "--auto-approve", "--manual-steps-done",
               cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    after = applied(state)
    assert not any(pool.startswith("eus-") for (workload, pool) in after if workload == "assistant-us")
    assert sum(r for (w, _), r in after.items() if w == "assistant-us") == 6  # serving kept on the other providers
    shown = cli("runbook", "show", "--state", state, "--format", "json", cwd=root)
    assert json.loads(shown.stdout)["events"] == ["provider-lost azure"]

    back = cli("runbook", "rollback", "--state", state, "--auto-approve", "--manual-steps-done", cwd=root)
    assert back.returncode == 0, back.stdout + back.stderr
    assert applied(state) == original
    assert journal_problems(StateStore(state).journal.records()) == []


def test_the_examples_scenarios_and_standard_drill_pass(tmp_path: Path) -> None:
    done = cli("drill", EXAMPLE, "--scenario", inventories_dir() / "scenarios" / "multi-cloud-drills.yaml",
               "--format", "json", cwd=tmp_path)
    report = json.loads(done.stdout)
    assert done.returncode == 0 and report["failed"] == [], done.stderr
    assert [s["name"] for s in report["scenarios"]] == ["gcp-price-spike", "azure-outage", "aws-quota-cut"]
    done = cli("drill", EXAMPLE, "--standard", "--format", "json", cwd=tmp_path)
    assert done.returncode == 0, flat(done.stderr)
    names = [s["name"] for s in json.loads(done.stdout)["scenarios"]]
    assert {"provider-lost-aws", "provider-lost-gcp", "provider-lost-azure"} <= set(names)
