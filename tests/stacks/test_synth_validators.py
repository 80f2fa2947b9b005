"""Independent validators on what `hybridctl synth` writes for every example inventory.

- kubernetes-validate, strict (unknown fields rejected), on every Kubernetes object, core objects
  included, against Kubernetes 1.30 to 1.37; the Kueue objects, which it has no schema for,
  against the vendored Kueue v0.19.2 CRD schemas made strict (kueue_crd_schema.py). An object
  neither knows fails.
- checkov (the Kubernetes framework) on the written manifests: zero failed checks. A check an
  object cannot pass is skipped on the object itself (`checkov.io/skip<n>: CHECK=reason`), never
  on the command line, and every skip carries its reason.

checkov lives in its own virtualenv (.venv-checkov, made by .ci/setup.sh): its pinned
dependencies would fight the project's.
"""

from __future__ import annotations

import json
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.drivers.synth_write import write_synth
from hybridctl.paths import stacks_dir
from kueue_crd_schema import errors as kueue_errors
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

ROOT = Path(__file__).resolve().parents[2]
CHECKOV = ROOT / ".venv-checkov" / "bin" / "checkov"
KUBERNETES_VERSIONS = tuple(f"1.{minor}.0" for minor in range(30, 38))
KUEUE_GROUP = "kueue.x-k8s.io/"


@cache
def synthesized(example: str) -> tuple[ProgramRun, ...]:
    inventory = load_inventory(ROOT / "inventories" / example).inventory
    configs = stack_configs(inventory, plan(inventory, options=AT_PLAN_WEEK), "sha256:test")
    return tuple(synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in (*configs.gpu_pools, *configs.queues))


def kubernetes_objects(runs: tuple[ProgramRun, ...]) -> list[dict[str, Any]]:
    return [r.inputs for run in runs for r in run.resources if r.type.startswith("kubernetes:")]


def validate(obj: dict[str, Any]) -> list[str]:
    """kubernetes-validate's verdict (strict) on a core object, for every version; the vendored CRD
    schema's on a Kueue object."""
    if obj["apiVersion"].startswith(KUEUE_GROUP):
        return kueue_errors(obj)
    found = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as exc:
            found.append(f"{version}: {exc.message}")
        except kubernetes_validate.SchemaNotFoundError:
            found.append(f"{version}: no schema for {obj['apiVersion']} {obj['kind']}")
    return found


EXAMPLES = [p.name for p in EXAMPLE_PATHS]


@pytest.mark.parametrize("example", EXAMPLES)
def test_kubernetes_validate_accepts_every_synthesized_object(example: str) -> None:
    objects = kubernetes_objects(synthesized(example))
    problems = {f"{o['kind']}/{o['metadata'].get('namespace', '')}/{o['metadata']['name']}": validate(o) for o in objects}
    assert {k: v for k, v in problems.items() if v} == {}


def test_the_validators_reject_a_misspelt_field_in_core_and_kueue_objects() -> None:
    objects = kubernetes_objects(synthesized("cloud-burst.yaml"))
    daemonset = next(o for o in objects if o["kind"] == "DaemonSet")
    bad = {**daemonset, "spec": {**daemonset["spec"], "updateStrategie": {}}}
    assert validate(daemonset) == [] and len(validate(bad)) == len(KUBERNETES_VERSIONS)
    queue = next(o for o in objects if o["kind"] == "ClusterQueue")
    assert validate(queue) == [] and validate({**queue, "spec": {**queue["spec"], "cohort": "x"}})
    assert validate({"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "x"}})  # unknown: fails


def checkov(directory: Path) -> dict[str, Any]:
    assert CHECKOV.is_file(), f"{CHECKOV} missing: run .ci/setup.sh (it makes checkov's own virtualenv)"
    done = subprocess.run([str(CHECKOV), "-d", str(directory), "--framework", "kubernetes", "--compact",
                           "--skip-download", "-o", "json"], capture_output=True, text=True, timeout=300,
                          cwd=directory, check=False)
    report = json.loads(done.stdout)
    reports = report if isinstance(report, list) else [report]
    merged: dict[str, Any] = {"passed": 0, "failed": [], "skipped": []}
    for r in reports:
        merged["passed"] += r["summary"]["passed"]
        merged["failed"] += [(c["check_id"], c["resource"]) for c in r["results"]["failed_checks"]]
        merged["skipped"] += [(c["check_id"], c["resource"], (c.get("check_result") or {}).get("suppress_comment", ""))
                              for c in r["results"]["skipped_checks"]]
    return merged


@pytest.fixture(scope="module")
def synth_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("synth")
    for example in EXAMPLES:
        runs = synthesized(example)
        if runs:
            write_synth(root / example.removesuffix(".yaml"), list(runs), plan_digest="sha256:test", inventory=example)
    return root


def test_checkov_fails_no_check_on_any_example(synth_out: Path) -> None:
    found = checkov(synth_out)
    assert found["passed"] > 100
    assert found["failed"] == []
    # each skip is the object's own, with its reason
    assert found["skipped"] and all(reason.strip() for _, _, reason in found["skipped"]), found["skipped"]


def test_checkov_fails_the_unhardened_upstream_manifest(tmp_path: Path) -> None:
    """The check bites: upstream's manifest as vendored, without what the stack adds, fails."""
    vendored = stacks_dir() / "k8s-queues" / "vendor" / "nvidia-device-plugin" / "nvidia-device-plugin.yml"
    (tmp_path / "ds.yaml").write_text(yaml.safe_dump(yaml.safe_load(vendored.read_text())))
    failed = {check for check, _ in checkov(tmp_path)["failed"]}
    assert {"CKV_K8S_11", "CKV_K8S_13", "CKV_K8S_31"} <= failed  # no CPU or memory limit, no seccomp profile
