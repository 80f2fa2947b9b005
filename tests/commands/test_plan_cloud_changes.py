"""The "cloud changes" section of `plan`: a stack-configuration diff by default, a pulumi preview on request."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.examples import EXAMPLES
from support.inproc import run_cli

CLOUD_BURST = str(EXAMPLES / "cloud-burst.yaml")


def test_first_plan_creates_node_groups_and_queues(tmp_path: Path) -> None:
    result = run_cli("plan", CLOUD_BURST, "--format", "json", "--state", str(tmp_path / "state"))
    assert result.code == 0, result.output
    cloud = json.loads(result.stdout)["cloud_changes"]
    assert cloud["source"] == "config-diff"
    groups = {c["name"]: c for c in cloud["changes"] if c["kind"] == "node-group"}
    assert groups["use1-p5-od"]["action"] == "create"
    # 16 + 16 + 8 burst GPUs planned on p5.48xlarge (8 each): foundation-pretrain, long-context-pretrain,
    # support-finetune
    assert groups["use1-p5-od"]["detail"] == "p5.48xlarge min 0, desired 5, max 16"
    queues = {(c["stack"], c["name"]) for c in cloud["changes"] if c["kind"] == "cluster-queue"}
    # One queue per tier and reach: a workload reaches only its GPU types, spot only if preemptible; the
    # on-prem cluster gets queues too, and the manager a dispatching queue (-mk) for the burst work it spills.
    assert queues == {("cloud-burst-ml-use1", q) for q in ("cloud-burst-fixed-l40s", "cloud-burst-burst-h100",
                                                          "cloud-burst-burst-h100-mk", "cloud-burst-opportunistic-h100-spot")} | {
        ("cloud-burst-ash-k8s", q) for q in ("cloud-burst-fixed-l40s", "cloud-burst-burst-h100", "cloud-burst-burst-h100-l40s")}


def test_against_the_same_plan_nothing_changes(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    assert run_cli("plan", CLOUD_BURST, "--out", str(out), "--state", str(tmp_path / "state")).code == 0
    result = run_cli("plan", CLOUD_BURST, "--previous", str(out), "--state", str(tmp_path / "state"))
    assert "Cloud changes: none (from the plan-to-stack-configuration diff" in " ".join(result.stdout.split())


def test_markdown_labels_the_source(tmp_path: Path) -> None:
    result = run_cli("plan", CLOUD_BURST, "--format", "markdown", "--state", str(tmp_path / "state"))
    assert "#### Cloud changes" in result.stdout
    assert "not a `pulumi preview`" in result.stdout
    assert "| aws-gpu-pools/cloud-burst-aws-us-east-1 | node-group | use1-p5-od | create |" in result.stdout


def test_plan_does_not_import_pulumi_unless_a_preview_is_asked_for() -> None:
    probe = ("import sys\nfrom hybridctl.commands.app import run\n"
             f"try:\n    run(['plan', {CLOUD_BURST!r}, '--format', 'json'])\nexcept SystemExit:\n    pass\n"
             "print('PULUMI' if any(m == 'pulumi' or m.startswith('pulumi.') for m in sys.modules) else 'NO-PULUMI')")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "NO-PULUMI", result.stderr


def test_a_preview_without_the_pulumi_cli_says_how_to_install_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYBRIDCTL_")}
    env["PATH"] = str(Path(sys.executable).parent)  # the venv, which has no pulumi CLI
    result = subprocess.run([str(Path(sys.executable).parent / "hybridctl"), "plan", CLOUD_BURST, "--cloud-preview",
                             "--state", str(tmp_path / "state")], capture_output=True, text=True, env=env)
    assert result.returncode == 2
    assert "the pulumi CLI is not installed" in result.stderr and "get.pulumi.com" in result.stderr


def test_a_preview_waits_for_no_one_and_never_writes_beside_a_running_apply(tmp_path: Path) -> None:
    from hybridctl.drivers.state import StateStore
    from support.apply_cli import cli_env, run_cli

    state = tmp_path / "state"
    with StateStore(state).locked(command="apply (test)"):
        held = run_cli("plan", CLOUD_BURST, "--cloud-preview", "--state", state, env=cli_env(), cwd=tmp_path)
    assert held.returncode == 3, held.stdout + held.stderr  # LOCKED
    free = run_cli("plan", CLOUD_BURST, "--cloud-preview", "--state", state, env=cli_env(), cwd=tmp_path)
    assert free.returncode == 0, free.stdout + free.stderr
