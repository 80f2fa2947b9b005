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
import re
import shutil
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hybridctl.core.filereader import DOCUMENT_LIMIT, FileRefusedError, read_bounded
from hybridctl.drivers.files import atomic_write_text
from hybridctl.drivers.synth import ProgramRun, Registered
from hybridctl.errors import Location, UsageError

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
    """One path component for a file synth writes: never empty, `.` or `..`, never a separator."""
    safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in name)
    return safe if safe.strip(".") else "_" * max(len(safe), 1)


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
            parts = [_safe(str(obj["kind"])), *([_safe(namespace)] if namespace else []), f"{_safe(meta['name'])}.yaml"]
            path = Path("kubernetes", *parts)
            text = _dump_yaml(obj)
            documents.append(text)
            entry.update({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "objectName": meta["name"],
                          **({"namespace": namespace} if namespace else {})})
        else:
            path = Path("aws") / _safe(_aws_dir(r.type)) / f"{_safe(r.name)}.json"
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
    """Replace `out`'s stacks (this run's, and those an earlier index lists) and write the index.

    Only what synth wrote is removed, and only inside `out`: a stack directory is a single path
    component of the form synth gives stack names (never `.`, `..` or a path), a real directory (not
    a symbolic link) directly in `out`, holding only what write_stack writes. An earlier index that
    is not synth's (another format, unreadable) names nothing to remove."""
    stale = [name for name in _indexed_stacks(out) if name not in {run.stack for run in runs}]
    for name in [*stale, *(run.stack for run in runs)]:
        _remove_stack_dir(out, name, required=name not in stale)
    stacks = [write_stack(out, run) for run in runs]
    index = {"format": FORMAT, "inventory": inventory, "planDigest": plan_digest, "stacks": stacks}
    path = out / "index.json"
    atomic_write_text(path, _dump_json(index))
    return path


# A stack name as synth writes it (an inventory's name and a site's or a cluster's, DNS labels):
# one path component, never `.` or `..`.
STACK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")
# What write_stack puts in a stack's directory (and what an interrupted atomic write leaves: .*.tmp).
STACK_ENTRIES = frozenset({"kubernetes", "kubernetes.yaml", "aws", "providers"})


def _indexed_stacks(out: Path) -> list[str]:
    """The stack names an earlier synth's index lists; none when there is no index of synth's."""
    try:
        data = read_bounded(out / "index.json", DOCUMENT_LIMIT, what="synth's index.json", follow_symlinks=False)
        index = json.loads(data)
    except (OSError, ValueError, RecursionError, FileRefusedError):
        return []  # not there, or not synth's: it lists nothing synth made
    if not isinstance(index, dict) or index.get("format") != FORMAT or not isinstance(index.get("stacks"), list):
        return []
    names = [s.get("stack") for s in index["stacks"] if isinstance(s, dict)]
    return [name for name in names if isinstance(name, str) and STACK_NAME.fullmatch(name)]


def _remove_stack_dir(out: Path, name: str, *, required: bool) -> None:
    """Remove `out/name` if it is a stack directory synth wrote. A stale one that is not is left alone;
    one this run must write is refused (UsageError) rather than written through or deleted."""
    if not STACK_NAME.fullmatch(name):  # never: this run's names come from the plan's DNS labels
        raise UsageError(f"synth: {name!r} cannot name a stack directory")
    path = out / name
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return
    foreign = _not_synths(path, mode)
    if foreign is None:
        shutil.rmtree(path)
    elif required:
        raise UsageError(f"--out {out}: {path} {foreign}, so synth will not replace it",
                         location=Location(str(path)),
                         hint=f"move {path} away, or write the stacks to another directory (--out)")


def _not_synths(path: Path, mode: int) -> str | None:
    """Why `path` is not a stack directory synth wrote, or None when it is one."""
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(mode):
        return "is not a directory"
    others = sorted(p.name for p in path.iterdir()
                    if p.name not in STACK_ENTRIES and not (p.name.startswith(".") and p.name.endswith(".tmp")))
    if others:
        return f"holds files synth does not write ({', '.join(others[:3])}{', …' if len(others) > 3 else ''})"
    return None
