"""Write synthesized stacks to a directory: the layout documented in README.md ("hybridctl synth").

    DIR/index.json                                   stacks, providers (and their clusters), resources
    DIR/<stack>/kubernetes/<Kind>/<name>.yaml        a cluster-scoped Kubernetes object
    DIR/<stack>/kubernetes/<Kind>/<ns>/<name>.yaml   a namespaced one
    DIR/<stack>/kubernetes.yaml                      all of the stack's objects, referenced ones first
    DIR/<stack>/aws/<service>.<Type>/<name>.json     an AWS resource's inputs (wire names)
    DIR/<stack>/providers/<name>.json                an explicit provider's inputs

Files are written whole, resources in a fixed order and keys sorted, so two runs of the same
plan give the same bytes and a pull request shows only what changed.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hybridctl.drivers.files import atomic_write_text
from hybridctl.drivers.synth import ProgramRun, Registered

FORMAT = "hybridctl-synth/v1"
K8S_PREFIX = "kubernetes:"
PROVIDER_PREFIX = "pulumi:providers:"


def k8s_object(resource: Registered) -> dict[str, Any]:
    """The object as the API server would receive it (Pulumi's own bookkeeping left out)."""
    return {k: v for k, v in resource.inputs.items() if not k.startswith("__")}


def _aws_dir(type_token: str) -> str:
    # aws:eks/nodeGroup:NodeGroup -> eks.NodeGroup
    _, module, kind = type_token.split(":", 2)
    return f"{module.split('/', 1)[0]}.{kind}"


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-._" else "_" for c in name)


def provider_target(resource: Registered) -> dict[str, Any]:
    """Which cluster a Kubernetes provider reaches: from its kubeconfig's exec, or its context."""
    inputs = resource.inputs
    target: dict[str, Any] = {}
    if inputs.get("context"):
        target["context"] = inputs["context"]
    kubeconfig = inputs.get("kubeconfig")
    if isinstance(kubeconfig, str) and kubeconfig.startswith("{"):
        config = json.loads(kubeconfig)
        for user in config.get("users", []):
            args = user.get("user", {}).get("exec", {}).get("args", [])
            if "--cluster-name" in args:
                target["eksCluster"] = args[args.index("--cluster-name") + 1]
            if "--region" in args:
                target["region"] = args[args.index("--region") + 1]
        target["server"] = config["clusters"][0]["cluster"]["server"] if config.get("clusters") else None
    if inputs.get("clusterIdentifier"):
        target["clusterIdentifier"] = inputs["clusterIdentifier"]
    return target


_HEAD = ("apiVersion", "kind", "metadata")


def _sorted(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted(value[k]) for k in sorted(value)}
    if isinstance(value, list):
        return [_sorted(v) for v in value]
    return value


def _dump_yaml(obj: dict[str, Any]) -> str:
    """Stable bytes: apiVersion, kind, metadata first (as kubectl writes them), every map sorted."""
    ordered = {k: _sorted(obj[k]) for k in _HEAD if k in obj}
    ordered.update({k: _sorted(obj[k]) for k in sorted(obj) if k not in _HEAD})
    return str(yaml.safe_dump(ordered, sort_keys=False, default_flow_style=False, allow_unicode=True))


def _dump_json(obj: object) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


# The order `kubectl apply -f kubernetes.yaml` needs: what others refer to comes first.
KIND_ORDER = ("Namespace", "DaemonSet", "ResourceFlavor", "Cohort", "WorkloadPriorityClass", "MultiKueueCluster",
              "MultiKueueConfig", "AdmissionCheck", "ClusterQueue", "LocalQueue")


def _order(resource: Registered) -> tuple[int, str, str, str]:
    """Registration order varies between runs (the engine registers concurrently): sort instead."""
    if resource.type.startswith(PROVIDER_PREFIX):
        return (0, resource.type, "", resource.name)
    if resource.type.startswith(K8S_PREFIX):
        kind = str(resource.inputs.get("kind", ""))
        meta = resource.inputs.get("metadata", {})
        rank = KIND_ORDER.index(kind) if kind in KIND_ORDER else len(KIND_ORDER)
        return (1 + rank, kind, str(meta.get("namespace", "")), str(meta.get("name", resource.name)))
    return (100, resource.type, "", resource.name)


def write_stack(out: Path, run: ProgramRun) -> dict[str, Any]:
    """Write one stack's files; its entry in the index."""
    root = out / run.stack
    resources: list[dict[str, Any]] = []
    providers: list[dict[str, Any]] = []
    documents: list[str] = []
    for r in sorted(run.resources, key=_order):
        entry: dict[str, Any] = {"type": r.type, "name": r.name}
        if r.type.startswith(PROVIDER_PREFIX):
            path = Path("providers") / f"{_safe(r.name)}.json"
            providers.append({"name": r.name, "type": r.type, "file": f"{run.stack}/{path}",
                              "targets": provider_target(r)})
            atomic_write_text(root / path, _dump_json(r.inputs))
            continue
        if r.type.startswith(K8S_PREFIX):
            obj = k8s_object(r)
            meta = obj.get("metadata", {})
            namespace = meta.get("namespace")
            parts = [obj["kind"], *([_safe(namespace)] if namespace else []), f"{_safe(meta['name'])}.yaml"]
            path = Path("kubernetes", *parts)
            text = _dump_yaml(obj)
            documents.append(text)
            entry.update({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "objectName": meta["name"],
                          **({"namespace": namespace} if namespace else {})})
        else:
            path = Path("aws") / _aws_dir(r.type) / f"{_safe(r.name)}.json"
            text = _dump_json(r.inputs)
        atomic_write_text(root / path, text)
        entry["file"] = f"{run.stack}/{path}"
        if r.options:
            entry["options"] = r.options
        resources.append(entry)
    if documents:
        atomic_write_text(root / "kubernetes.yaml", "---\n".join(documents))
    return {"project": run.project, "stack": run.stack, "providers": providers, "resources": resources,
            "outputs": run.outputs}


def write_synth(out: Path, runs: Sequence[ProgramRun], *, plan_digest: str, inventory: str) -> Path:
    """Replace `out`'s stacks (this run's, and those an earlier index lists) and write the index."""
    old_index = out / "index.json"
    if old_index.is_file():
        try:
            previous = [s.get("stack", "") for s in json.loads(old_index.read_text()).get("stacks", [])]
        except (ValueError, AttributeError):
            previous = []
        for name in previous:
            if isinstance(name, str) and name and _safe(name) == name and (out / name).is_dir():
                shutil.rmtree(out / name)
    for run in runs:
        if (out / run.stack).exists():
            shutil.rmtree(out / run.stack)
    stacks = [write_stack(out, run) for run in runs]
    index = {"format": FORMAT, "inventory": inventory, "planDigest": plan_digest, "stacks": stacks}
    path = out / "index.json"
    atomic_write_text(path, _dump_json(index))
    return path
