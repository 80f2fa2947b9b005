"""What `hybridctl synth` writes for the example inventories, checked against the real contracts:
Kueue's CRD CEL rules (with cel-python), the EKS and EC2 API models botocore ships (its
ParamValidator plus enum checks), per-cluster provider targeting, and per-workload reach."""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.validate import ParamValidator
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.synth import ProgramRun, Registered, synth_stack
from hybridctl.drivers.synth_write import write_synth
from hybridctl.paths import inventories_dir, stacks_dir
from kueue_cel import cel_errors, rule_count
from support.plan_week import AT_PLAN_WEEK

EXAMPLES = ("cloud-burst.yaml", "enterprise")
KUEUE = "kubernetes:kueue.x-k8s.io/"
NODE_GROUP, LAUNCH_TEMPLATE = "aws:eks/nodeGroup:NodeGroup", "aws:ec2/launchTemplate:LaunchTemplate"


@cache
def example(name: str) -> tuple[Inventory, Plan]:
    inventory = load_inventory(inventories_dir() / name).inventory
    return inventory, plan(inventory, options=AT_PLAN_WEEK)


def synth_plan(inventory: Inventory, plan_: Plan) -> list[ProgramRun]:
    configs = stack_configs(inventory, plan_, "sha256:test")
    return [synth_stack(c.project, c.stack_name, c.values(), stacks_dir()) for c in (*configs.gpu_pools, *configs.queues)]


@cache
def synthesized(name: str) -> list[ProgramRun]:
    return synth_plan(*example(name))


def kueue_objects(run: ProgramRun) -> list[Registered]:
    return [r for r in run.resources if r.type.startswith(KUEUE)]


# --- Kubernetes: CEL rules ----------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_every_kueue_object_passes_its_crd_cel_rules(name: str) -> None:
    objects = [r for run in synthesized(name) for r in kueue_objects(run)]
    assert objects and rule_count("ClusterQueue") >= 4
    assert {f"{o.type}/{o.name}": cel_errors(o.inputs) for o in objects if cel_errors(o.inputs)} == {}


def _replaced(resource: Registered, old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether Pulumi replaces rather than updates: a replaceOnChanges path differs."""
    def at(obj: Any, path: str) -> Any:
        for part in path.split("."):
            obj = obj.get(part) if isinstance(obj, dict) else None
        return obj
    return any(at(old, p) != at(new, p) for p in resource.options.get("replaceOnChanges", []))


def test_a_tier_change_updates_nothing_in_place_that_the_crd_makes_immutable() -> None:
    inventory, before = example("cloud-burst.yaml")
    moved_workload = next(p.workload for p in before.placements if p.tier == "fixed")
    after = replace(before, placements=tuple(replace(p, tier="burst") if p.workload == moved_workload else p
                                             for p in before.placements),
                    tiers={**before.tiers, moved_workload: "burst"})
    old = {(r.type, r.name): r.inputs for run in synth_plan(inventory, before) for r in kueue_objects(run)}
    updated = []
    for run in synth_plan(inventory, after):
        for r in kueue_objects(run):
            previous = old.get((r.type, r.name))
            if previous is None or _replaced(r, previous, r.inputs):
                assert cel_errors(r.inputs) == [], r.name
                continue
            updated.append(r.name)
            assert cel_errors(r.inputs, previous) == [], f"{r.name}: an in-place update the API server rejects"
    assert f"lq-{moved_workload}" not in updated  # replaced, not updated


def test_the_immutable_cluster_queue_rule_rejects_an_in_place_update() -> None:
    lq = next(r.inputs for r in kueue_objects(synthesized("cloud-burst.yaml")[-1]) if r.inputs["kind"] == "LocalQueue")
    moved = {**lq, "spec": {"clusterQueue": "elsewhere"}}
    assert cel_errors(moved, lq) == ["spec.clusterQueue: field is immutable (rule: self == oldSelf)"]


# --- AWS: the API models botocore ships ---------------------------------------------------------


@cache
def _service(name: str) -> Any:
    return botocore.session.get_session().get_service_model(name)


def _enum_errors(shape: Any, value: Any, path: str) -> list[str]:
    errors = []
    if shape.type_name == "string" and shape.enum and value not in shape.enum:
        errors.append(f"{path}: {value!r} not in {shape.enum}")
    elif shape.type_name == "structure" and isinstance(value, dict):
        for key, item in value.items():
            if key in shape.members:
                errors += _enum_errors(shape.members[key], item, f"{path}.{key}")
    elif shape.type_name == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            errors += _enum_errors(shape.member, item, f"{path}[{i}]")
    return errors


def validate(service: str, operation: str, params: dict[str, Any]) -> list[str]:
    shape = _service(service).operation_model(operation).input_shape
    report = ParamValidator().validate(params, shape)
    return ([report.generate_report()] if report.has_errors() else []) + _enum_errors(shape, params, operation)


def create_nodegroup(group: Registered) -> dict[str, Any]:
    i = group.inputs
    return {
        "clusterName": i["clusterName"], "nodegroupName": group.name, "scalingConfig": i["scalingConfig"],
        "subnets": i["subnetIds"], "instanceTypes": i["instanceTypes"], "amiType": i["amiType"],
        "nodeRole": i["nodeRoleArn"], "labels": i["labels"], "taints": i["taints"], "tags": i["tags"],
        "launchTemplate": i["launchTemplate"], "updateConfig": i["updateConfig"], "capacityType": i["capacityType"],
    }


def _ec2(value: Any) -> Any:
    """pulumi-aws's launch template inputs in EC2's own shape: PascalCase, booleans, tag lists."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            name = {"securityGroups": "Groups"}.get(key, key[:1].upper() + key[1:])
            if key == "tags":
                item = [{"Key": k, "Value": v} for k, v in item.items()]
            elif item in ("true", "false"):
                item = item == "true"
            out[name] = _ec2(item)
        return out
    if isinstance(value, list):
        return [_ec2(v) for v in value]
    return value


def create_launch_template(template: Registered) -> dict[str, Any]:
    data = {k: v for k, v in template.inputs.items() if k not in ("description", "tags", "updateDefaultVersion", "name")}
    return {"LaunchTemplateName": template.name, "VersionDescription": template.inputs["description"],
            "LaunchTemplateData": _ec2(data),
            "TagSpecifications": [{"ResourceType": "launch-template", "Tags": _ec2({"tags": template.inputs["tags"]})["Tags"]}]}


@pytest.mark.parametrize("name", EXAMPLES)
def test_node_groups_and_launch_templates_are_valid_aws_requests(name: str) -> None:
    runs = synthesized(name)
    groups = [g for run in runs for g in run.of_type(NODE_GROUP)]
    templates = [t for run in runs for t in run.of_type(LAUNCH_TEMPLATE)]
    assert groups and len(templates) == len(groups)
    assert {g.name: validate("eks", "CreateNodegroup", create_nodegroup(g)) for g in groups} == {g.name: [] for g in groups}
    assert {t.name: validate("ec2", "CreateLaunchTemplate", create_launch_template(t)) for t in templates} == {
        t.name: [] for t in templates}


def test_the_aws_check_catches_a_bad_enum_and_a_missing_field() -> None:
    group = synthesized("cloud-burst.yaml")[0].of_type(NODE_GROUP)[0]
    bad = {**create_nodegroup(group), "capacityType": "RESERVED"}
    assert any("RESERVED" in e for e in validate("eks", "CreateNodegroup", bad))
    missing = {k: v for k, v in create_nodegroup(group).items() if k != "nodeRole"}
    assert any("nodeRole" in e for e in validate("eks", "CreateNodegroup", missing))


# --- per cluster, per workload ------------------------------------------------------------------


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_queue_stack_targets_its_own_cluster_and_no_object_is_written_twice(name: str) -> None:
    inventory, plan_ = example(name)
    configs = stack_configs(inventory, plan_, "sha256:test")
    runs = {r.stack: r for r in synthesized(name)}
    written: dict[tuple[str, str, str, str], str] = {}
    for q in configs.queues:
        (provider,) = runs[q.stack_name].of_type("pulumi:providers:kubernetes")
        if q.on_premises:  # no EKS: the kubeconfig context named after the cluster
            assert provider.inputs["context"] == q.cluster_name and "kubeconfig" not in provider.inputs
        else:
            exec_args = json.loads(provider.inputs["kubeconfig"])["users"][0]["user"]["exec"]["args"]
            assert exec_args[exec_args.index("--cluster-name") + 1] == q.cluster_name
        for r in runs[q.stack_name].resources:
            if r.type.startswith("kubernetes:"):
                meta = r.inputs["metadata"]
                key = (q.cluster_name, r.inputs["kind"], meta.get("namespace", ""), meta["name"])
                assert key not in written, f"{key} written by {written.get(key)} and {q.stack_name}"
                written[key] = q.stack_name


@pytest.mark.parametrize("name", EXAMPLES)
def test_each_workload_reaches_only_its_gpu_types_and_spot_only_if_preemptible(name: str) -> None:
    inventory, _ = example(name)
    spec = {w.name: w for w in inventory.workloads}
    runs = synthesized(name)
    capacity = {g.name: g.inputs["labels"]["hybridctl.io/capacity-type"] for run in runs for g in run.of_type(NODE_GROUP)}
    checked = 0
    for run in runs:
        objects = {(r.inputs["kind"], r.inputs["metadata"].get("namespace", ""), r.inputs["metadata"]["name"]): r.inputs
                   for r in kueue_objects(run)}
        for (kind, workload, _), lq in objects.items():
            if kind != "LocalQueue":
                continue  # every LocalQueue of a namespace: its own, `default`, `<workload>-local`
            cq = objects[("ClusterQueue", "", lq["spec"]["clusterQueue"])]
            for group in cq["spec"]["resourceGroups"]:
                for flavor in group["flavors"]:
                    labels = objects[("ResourceFlavor", "", flavor["name"])]["spec"]["nodeLabels"]
                    if "hybridctl.io/dispatched" in labels:
                        continue  # a dispatching queue's quota: the job runs on a worker, under its queue there
                    assert labels["hybridctl.io/gpu"] in spec[workload].gpu.types, (workload, flavor["name"])
                    if capacity.get(labels["hybridctl.io/pool"]) == "spot":
                        assert spec[workload].preemptible, (workload, flavor["name"])
                    checked += 1
    assert checked


def test_two_synths_of_the_same_plan_give_the_same_bytes(tmp_path: Path) -> None:
    # The engine registers resources concurrently: the output must not follow its order.
    for attempt in ("a", "b"):
        write_synth(tmp_path / attempt, synth_plan(*example("enterprise")), plan_digest="sha256:test", inventory="e")
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert files and [(tmp_path / "b" / f).read_bytes() for f in files] == [(tmp_path / "a" / f).read_bytes() for f in files]
    documents = (tmp_path / "a" / "enterprise-ml-use1" / "kubernetes.yaml").read_text().split("---\n")
    kinds = [next(line for line in d.splitlines() if line.startswith("kind:")) for d in documents]
    assert kinds.index("kind: Namespace") < kinds.index("kind: LocalQueue")
    assert max(i for i, k in enumerate(kinds) if k == "kind: ClusterQueue") < kinds.index("kind: LocalQueue")


def test_synth_writes_the_documented_layout(tmp_path: Path) -> None:
    runs = synthesized("cloud-burst.yaml")
    index = json.loads(write_synth(tmp_path, runs, plan_digest="sha256:test", inventory="cloud-burst").read_text())
    assert index["format"] == "hybridctl-synth/v1"
    for stack in index["stacks"]:
        for entry in stack["resources"]:
            assert (tmp_path / entry["file"]).is_file()
        for provider in stack["providers"]:
            assert provider["targets"].get("eksCluster") or provider["targets"].get("context")
    again = tmp_path / "again"
    write_synth(again, runs, plan_digest="sha256:test", inventory="cloud-burst")
    first = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file() and again not in p.parents)
    assert [(again / f).read_bytes() for f in first] == [(tmp_path / f).read_bytes() for f in first]
