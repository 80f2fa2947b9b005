"""Write synthesized stacks to a directory: the layout documented in README.md ("hybridctl synth").

    DIR/index.json                                   stacks, providers (and their clusters), resources
    DIR/<stack>/kubernetes/<Kind>/<name>.yaml        a cluster-scoped Kubernetes object
    DIR/<stack>/kubernetes/<Kind>/<ns>/<name>.yaml   a namespaced one
    DIR/<stack>/kubernetes.yaml                      all of the stack's objects, referenced ones first
    DIR/<stack>/aws/<service>.<Type>/<name>.json     an AWS resource's inputs (wire names)
    DIR/<stack>/providers/<name>.json                an explicit provider's inputs
    DIR/<stack>/.hybridctl-synth                     synth's marker: the stack's name, every file's size and digest

Files are written whole, resources in a fixed order and keys sorted, so two runs of the same
plan give the same bytes and a pull request shows only what changed.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from hybridctl.drivers.filereader import DOCUMENT_LIMIT, MIB, FileRefusedError, describe_mode, read_bounded
from hybridctl.drivers.files import atomic_write_text, fill, replace_atomically
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
    """Write one stack's files, its marker first (so an interrupted run leaves a directory synth knows as
    its own); its entry in the index. The marker names its writer, and each file is written through a temp
    file named for it (`.NAME.<writer>.tmp`): what a killed write leaves is known as this writer's, and a
    user's file merely shaped like a temp file is not. The writer is the digest of what the marker lists
    (synth's output is the same bytes for the same plan, marker included)."""
    root = out / run.stack
    resources: list[dict[str, Any]] = []
    providers: list[dict[str, Any]] = []
    documents: list[str] = []
    files: dict[str, str] = {}  # path in the stack directory -> text; a later file of the same path wins
    for r in sorted(run.resources, key=_order):
        entry: dict[str, Any] = {"type": r.type, "name": r.name}
        if r.type.startswith(PROVIDER_PREFIX):
            path = Path("providers") / f"{_safe(r.name)}.json"
            providers.append({"name": r.name, "type": r.type, "file": f"{run.stack}/{path}",
                              "targets": provider_target(r)})
            files[path.as_posix()] = _dump_json(r.inputs)
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
        files[path.as_posix()] = text
        entry["file"] = f"{run.stack}/{path}"
        if r.options:
            entry["options"] = r.options
        resources.append(entry)
    if documents:
        files["kubernetes.yaml"] = "---\n".join(documents)
    encoded = {name: text.encode("utf-8") for name, text in files.items()}
    listed = {name: {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}
              for name, data in sorted(encoded.items())}
    writer = hashlib.sha256(_dump_json({"stack": run.stack, "files": listed}).encode()).hexdigest()[:16]
    marker = {"format": MARKER_FORMAT, "stack": run.stack, "writer": writer, "files": listed}
    atomic_write_text(root / MARKER, _dump_json(marker))
    for name, data in encoded.items():
        _write_as(root / name, data, writer)
    return {"project": run.project, "stack": run.stack, "providers": providers, "resources": resources,
            "outputs": run.outputs}


def _write_as(path: Path, data: bytes, writer: str) -> None:
    """files.atomic_write_bytes with the temp file's name this writer's own: `.NAME.<writer>.tmp`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{writer}.tmp")
    # a leftover of this very writer's (the same content, killed) is this write's to reuse; a link is never followed
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    try:
        fill(str(temp), data)
        replace_atomically(str(temp), path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def out_locked(out: Path, note: Callable[[str], None] | None = None) -> Iterator[None]:
    """`out` (made if need be) held by this synth until the block ends, another synth's hold waited for: one
    synth at a time checks, removes and writes its stacks (two at once left a stack directory whose files one
    had written and whose marker the other had removed). The lock is the directory's own (flock on it), so
    that `out` holds nothing synth did not write for its stacks."""
    out.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(out, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if note is not None:
                note(f"waiting for another synth into {out} to finish")
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def write_synth(out: Path, runs: Sequence[ProgramRun], *, plan_digest: str, inventory: str,
                note: Callable[[str], None] | None = None) -> Path:
    """Replace `out`'s stacks under its lock (out_locked); see _write_synth."""
    with out_locked(out, note):
        return _write_synth(out, runs, plan_digest=plan_digest, inventory=inventory, note=note)


def _write_synth(out: Path, runs: Sequence[ProgramRun], *, plan_digest: str, inventory: str,
                 note: Callable[[str], None] | None = None) -> Path:
    """Replace `out`'s stacks (this run's, and those an earlier index lists) and write the index.

    Only what synth wrote is removed, and only inside `out`: a stack directory is a single path
    component of the form synth gives stack names (never `.`, `..` or a path), a real directory (not
    a symbolic link) directly in `out` that bears synth's marker for that very stack and holds nothing
    but the files the marker lists, as synth wrote them (and the temp files of an interrupted write).
    An earlier index that is not synth's (another format, unreadable) names nothing to remove. A stale
    directory that is not synth's is left in place (`note` says so); one this run must write is refused
    (UsageError) before anything is removed or written."""
    names = {run.stack for run in runs}
    stale = [name for name in _indexed_stacks(out) if name not in names]
    owned: list[_Owned] = []
    for name in dict.fromkeys([*(run.stack for run in runs), *stale]):
        if not STACK_NAME.fullmatch(name):  # never: this run's names come from the plan's DNS labels
            raise UsageError(f"synth: {name!r} cannot name a stack directory")
        path = out / name
        verdict = _synths(path, name)
        if isinstance(verdict, _Owned):
            owned.append(verdict)
        elif verdict is None:
            continue
        elif name in names:
            raise UsageError(f"--out {out}: {path} {verdict}, so synth will not replace it",
                             location=Location(str(path)),
                             hint=f"move {path} away, or write the stacks to another directory (--out): synth "
                                  f"removes only the stack directories that bear its marker ({MARKER})")
        elif note is not None:
            note(f"{path} {verdict}: left in place (synth removes only the stack directories it wrote)")
    for stack in owned:
        stack.remove()
    stacks = [write_stack(out, run) for run in runs]
    index = {"format": FORMAT, "inventory": inventory, "planDigest": plan_digest, "stacks": stacks}
    path = out / "index.json"
    atomic_write_text(path, _dump_json(index))
    return path


# A stack name as synth writes it (an inventory's name and a site's or a cluster's, DNS labels):
# one path component, never `.` or `..`.
STACK_NAME = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,254}")
# synth's marker in each stack directory it writes: the only proof that synth wrote the directory. No
# .json/.yaml suffix, so `kubectl apply -R -f` of a stack directory passes over it.
MARKER = ".hybridctl-synth"
MARKER_FORMAT = "hybridctl-synth-stack/v1"
# What _write_as leaves beside `name` when a run is killed between write and rename: the writer's token in it.
_WRITER = re.compile(r"[0-9a-f]{16}")
_LEFTOVER = re.compile(r"\.(?P<name>.+)\.(?P<writer>[0-9a-f]{16})\.tmp")


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


@dataclass(frozen=True)
class _Owned:
    """A stack directory synth wrote, checked: what to remove, files first, the marker last."""

    root: Path
    files: tuple[Path, ...]
    directories: tuple[Path, ...]  # deepest first

    def remove(self) -> None:
        for path in self.files:
            path.unlink(missing_ok=True)
        (self.root / MARKER).unlink(missing_ok=True)  # last: an interrupted removal leaves a marked directory
        for directory in (*self.directories, self.root):
            directory.rmdir()  # never rmtree: whatever appeared since the check stays, and says so (ENOTEMPTY)


def _synths(path: Path, name: str) -> _Owned | str | None:
    """`path` (the directory of stack `name`) if synth wrote it; nothing there: None; otherwise why not."""
    try:
        mode = path.lstat().st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc})"
    if stat.S_ISLNK(mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(mode):
        return f"is not a directory ({describe_mode(mode)})"
    marked = _marker(path, name)
    if isinstance(marked, str):
        return marked
    try:
        return _check_files(path, *marked)
    except OSError as exc:
        return f"cannot be examined ({exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''})"


def _marker(path: Path, name: str) -> tuple[dict[str, tuple[int, str]], str | None] | str:
    """The files synth's marker in `path` lists (path -> size, SHA-256) and its writer's token (None from a
    synth that wrote none), or why it has no marker of synth's."""
    marker = path / MARKER
    try:
        data = json.loads(read_bounded(marker, DOCUMENT_LIMIT, what="synth's stack marker", follow_symlinks=False))
    except FileNotFoundError:
        return f"was not written by synth (it has no {MARKER} marker)"
    except (OSError, ValueError, RecursionError, FileRefusedError) as exc:  # a FIFO, a link, a directory, not JSON
        reason = exc.message if isinstance(exc, FileRefusedError) else str(exc)
        return f"was not written by synth (its {MARKER} is not synth's: {reason})"
    files = data.get("files") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("format") != MARKER_FORMAT or not isinstance(files, dict):
        return f"was not written by synth (its {MARKER} is not synth's)"
    if data.get("stack") != name:
        return f"was not written by synth as this stack (its {MARKER} names {str(data.get('stack'))[:80]!r})"
    listed: dict[str, tuple[int, str]] = {}
    for file, entry in files.items():
        size = entry.get("bytes") if isinstance(entry, dict) else None
        digest = entry.get("sha256") if isinstance(entry, dict) else None
        if type(size) is not int or not isinstance(digest, str):
            return f"was not written by synth (its {MARKER} is not synth's)"
        listed[file] = (size, digest)
    writer = data.get("writer")
    return listed, writer if isinstance(writer, str) and _WRITER.fullmatch(writer) else None


def _check_files(root: Path, listed: dict[str, tuple[int, str]], writer: str | None) -> _Owned | str:
    """Every entry under `root` (links never followed, nothing but regular files opened) is a file the
    marker lists, with the size and digest it lists (or the temp file the marker's writer left of one)."""
    parents = {p.as_posix() for file in listed for p in Path(file).parents if p != Path(".")}
    files: list[Path] = []
    directories: list[Path] = []
    foreign: list[str] = []
    changed: list[str] = []
    pending = [Path()]
    while pending:
        relative = pending.pop()
        with os.scandir(root / relative) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                name = (relative / entry.name).as_posix()
                if entry.is_dir(follow_symlinks=False):
                    if name in parents:
                        pending.append(relative / entry.name)
                        directories.append(root / name)
                    else:
                        foreign.append(name + "/")
                    continue
                if not entry.is_file(follow_symlinks=False):  # a link, a FIFO, a socket, a device
                    foreign.append(name)
                    continue
                if name == MARKER:
                    continue
                if name in listed:
                    if not _as_written(root / name, *listed[name]):
                        changed.append(name)
                    files.append(root / name)
                    continue
                leftover = _LEFTOVER.fullmatch(entry.name)
                if leftover and leftover["writer"] == writer and (relative / leftover["name"]).as_posix() in listed:
                    files.append(root / name)
                    continue
                foreign.append(name)
    if foreign:
        return f"holds files synth did not write ({_some(foreign)})"
    if changed:
        return f"holds files changed since synth wrote them ({_some(changed)})"
    directories.sort(key=lambda d: len(d.parts), reverse=True)
    return _Owned(root, tuple(files), tuple(directories))


def _as_written(path: Path, size: int, digest: str) -> bool:
    """Whether the regular file at `path` (never a link followed, never a FIFO opened) has these bytes."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    try:
        opened = os.fstat(descriptor)
        if not stat.S_ISREG(opened.st_mode) or opened.st_size != size:
            return False
        sha = hashlib.sha256()
        read = 0
        while read <= size:
            chunk = os.read(descriptor, min(MIB, size + 1 - read))
            if not chunk:
                break
            sha.update(chunk)
            read += len(chunk)
        return read == size and sha.hexdigest() == digest
    finally:
        os.close(descriptor)


def _some(names: list[str]) -> str:
    return f"{', '.join(names[:3])}{', …' if len(names) > 3 else ''}"
