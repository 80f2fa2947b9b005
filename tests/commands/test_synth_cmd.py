"""`hybridctl synth` as a subprocess: offline (no Pulumi CLI, no credentials), the documented
layout, plan files checked against their inventory, and stale stacks replaced."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import yaml
from hybridctl.paths import inventories_dir
from support.apply_cli import run_cli

CLOUD_BURST = inventories_dir() / "cloud-burst.yaml"


def offline_env() -> dict[str, str]:
    """Only the venv on PATH (no pulumi, no aws) and no credential of any kind."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("HYBRIDCTL_", "AWS_", "PULUMI_", "KUBE"))}
    env.update({"PATH": str(Path(sys.executable).parent), "NO_COLOR": "1", "HOME": "/nonexistent"})
    return env


def test_synth_writes_every_stack_offline(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    done = run_cli("synth", CLOUD_BURST, "--out", out, env=offline_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    index = json.loads((out / "index.json").read_text())
    assert [s["stack"] for s in index["stacks"]] == ["cloud-burst-aws-us-east-1", "cloud-burst-ash-k8s",
                                                     "cloud-burst-ml-use1"]
    # the cloud cluster through EKS; the on-prem one (revision 3) through the kubeconfig context named after it
    targets = {s["stack"]: [p["targets"] for p in s["providers"]] for s in index["stacks"] if s["project"] == "k8s-queues"}
    assert [t["eksCluster"] for t in targets["cloud-burst-ml-use1"]] == ["ml-use1"]
    assert [t["context"] for t in targets["cloud-burst-ash-k8s"]] == ["ash-k8s"]
    documents = list(yaml.safe_load_all((out / "cloud-burst-ml-use1" / "kubernetes.yaml").read_text()))
    kinds = {d["kind"] for d in documents}
    assert {"ClusterQueue", "LocalQueue", "Namespace", "ResourceFlavor", "DaemonSet"} <= kinds
    groups = list((out / "cloud-burst-aws-us-east-1" / "aws" / "eks.NodeGroup").glob("*.json"))
    assert groups and all("scalingConfig" in json.loads(g.read_text()) for g in groups)


def test_a_plan_file_needs_its_inventory_and_must_match_it(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    assert run_cli("plan", CLOUD_BURST, "--out", plan, env=offline_env(), cwd=tmp_path).returncode == 0
    alone = run_cli("synth", plan, "--out", tmp_path / "o", env=offline_env(), cwd=tmp_path)
    assert alone.returncode == 2 and "--inventory" in alone.stderr
    other = run_cli("synth", plan, "--inventory", inventories_dir() / "split-inference.yaml", "--out", tmp_path / "o",
                    env=offline_env(), cwd=tmp_path)
    # refused as apply and drill refuse it (exit 4): it exited 2 here alone
    assert other.returncode == 4 and "another inventory" in " ".join(other.stderr.split())
    ok = run_cli("synth", plan, "--inventory", CLOUD_BURST, "--out", tmp_path / "o", env=offline_env(), cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_stacks_of_an_earlier_synth_do_not_linger(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    earlier = run_cli("synth", inventories_dir() / "split-inference.yaml", "--out", out, env=offline_env(), cwd=tmp_path)
    assert earlier.returncode == 0, earlier.stderr
    old = [s["stack"] for s in json.loads((out / "index.json").read_text())["stacks"]]
    assert old and all((out / name / ".hybridctl-synth").is_file() for name in old)
    done = run_cli("synth", CLOUD_BURST, "--out", out, env=offline_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not any((out / name).exists() for name in old)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.json", *(s["stack"] for s in json.loads((out / "index.json").read_text())["stacks"])])


def test_a_directory_synth_did_not_write_is_never_removed(tmp_path: Path) -> None:
    """Audit finding: an index.json naming `my-manifests` made synth rmtree a directory the user wrote, because
    it held only `kubernetes/` and `.*.tmp` files. Only a directory bearing synth's own marker is removed."""
    out = tmp_path / "synth"
    mine = out / "my-manifests"
    (mine / "kubernetes").mkdir(parents=True)
    (mine / "kubernetes" / "prod.yaml").write_text("kind: ConfigMap\n")
    (mine / ".keep-notes.tmp").write_text("notes")
    (out / "index.json").write_text(json.dumps({"format": "hybridctl-synth/v1", "inventory": "x",
                                                "stacks": [{"stack": "my-manifests", "resources": []}]}))
    done = run_cli("synth", CLOUD_BURST, "--out", out, env=offline_env(), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (mine / "kubernetes" / "prod.yaml").read_text() == "kind: ConfigMap\n"
    assert (mine / ".keep-notes.tmp").read_text() == "notes"
    assert f"{mine}" in " ".join(done.stderr.split()) and "left in place" in done.stderr
    assert "my-manifests" not in [s["stack"] for s in json.loads((out / "index.json").read_text())["stacks"]]


def test_a_directory_in_the_way_of_a_stack_is_refused_in_one_message(tmp_path: Path) -> None:
    out = tmp_path / "synth"
    (out / "cloud-burst-ml-use1" / "kubernetes").mkdir(parents=True)
    (out / "cloud-burst-ml-use1" / "kubernetes" / "prod.yaml").write_text("kind: ConfigMap\n")
    done = run_cli("synth", CLOUD_BURST, "--out", out, env=offline_env(), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("error:") == 1, done.stderr
    assert "was not written by synth" in " ".join(done.stderr.split())
    assert (out / "cloud-burst-ml-use1" / "kubernetes" / "prod.yaml").read_text() == "kind: ConfigMap\n"
    assert not (out / "index.json").exists() and not (out / "cloud-burst-aws-us-east-1").exists()
