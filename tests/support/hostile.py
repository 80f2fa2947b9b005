"""What the hostile-input tests share: a small applied state, snapshots of what a command may not
write, and the one assertion every hostile input gets (a documented exit code, never 70, one message
naming the file and the field, no traceback)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from support.apply_cli import SUPPORT_DIR
from support.inproc import Result, run_cli

DOCUMENTED = frozenset({0, 1, 2, 3, 4})  # docs/commands.md, "Exit codes"; 70 is a bug in hybridctl


def cloud_document(budget: float | None = 100_000.0) -> dict[str, Any]:
    """Two cloud regions, one always-on service: applied with the recording cloud, no hosts to reach."""
    def region(name: str, price: float) -> dict[str, Any]:
        return {"name": name, "kind": "cloud", "provider": "aws", "region": f"eu-{name}", "cluster": f"k8s-{name}",
                "jurisdiction": "EU", "egress_usd_per_gb": 0.09, "latency_ms": {"eu-users": 20},
                "pools": [{"name": f"{name}-g6", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 8,
                           "capacity_type": "on_demand", "usd_per_gpu_hour": price}]}

    document: dict[str, Any] = {
        "version": 1, "name": "hostile", "regions": ["eu-users"], "sites": [region("aws-a", 0.8), region("aws-b", 1.0)],
        "workloads": [{"name": "api", "type": "realtime_inference", "gpu": {"types": ["L4"], "count": 1},
                       "replicas": 2}]}
    if budget is not None:
        document["policies"] = {"monthly_budget_usd": budget}
    return document


def write_json(path: Path, document: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


@contextmanager
def recording_cloud() -> Iterator[None]:
    """The in-process CLI with the recording cloud driver (tests/support/recording_cloud.py) wired in."""
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(SUPPORT_DIR))
        patch.setenv("HYBRIDCTL_CLOUD_DRIVER", "recording_cloud:factory")
        patch.setenv("NO_COLOR", "1")
        patch.setenv("COLUMNS", "200")
        yield


def run(*args: str | Path) -> Result:
    with recording_cloud():
        return run_cli(*map(str, args))


def applied_state(directory: Path) -> tuple[Path, Path]:
    """(inventory, state directory) with the cloud document applied."""
    inventory = write_json(directory / "inventory.json.yaml", cloud_document())
    state = directory / "state"
    result = run("apply", inventory, "--state", state, "--auto-approve")
    assert result.code == 0, result.output
    return inventory, state


def copy_state(source: Path, target: Path) -> Path:
    shutil.copytree(source, target)
    return target


def snapshot(directory: Path) -> dict[str, bytes]:
    """Every file under `directory` and its bytes, but the bookkeeping a command sets up before it reads
    anything: the lock and its holder record, and an empty known_hosts file (ssh's, made on first use)."""
    if not directory.exists():
        return {}
    return {str(p.relative_to(directory)): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name not in ("lock", "lock.holder.json")
            and not (p.name == "known_hosts" and not p.stat().st_size)}


def tree(root: Path) -> dict[str, tuple[int, str, int]]:
    """Every entry under root (links not followed, FIFOs and devices never opened): its kind, content and,
    but for directories (whose own entries are listed), modification time: a file written again with the
    same bytes shows too."""
    found: dict[str, tuple[int, str, int]] = {}
    for directory, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(directory) / name
            info = path.lstat()
            if stat.S_ISLNK(info.st_mode):
                content = os.readlink(path)
            elif stat.S_ISREG(info.st_mode):
                with path.open("rb") as handle:
                    content = hashlib.sha256(handle.read(1 << 20)).hexdigest() + f":{info.st_size}"
            else:
                content = ""
            modified = 0 if stat.S_ISDIR(info.st_mode) else info.st_mtime_ns
            found[str(path.relative_to(root))] = (stat.S_IFMT(info.st_mode), content, modified)
    return found


def contents(directory: Path) -> tuple[dict[str, bytes], list[str]]:
    """snapshot(directory), and every directory below it: a command that only makes an empty directory (a
    default ./.hybridctl) shows here too."""
    return snapshot(directory), sorted(str(p.relative_to(directory)) for p in directory.rglob("*") if p.is_dir())


def assert_refused(result: Result, *fragments: str, codes: frozenset[int] = frozenset({1, 2, 4})) -> None:
    """A documented exit code other than 0 and 70, and one message (one `error:` line) holding every fragment."""
    assert result.code in codes and result.code in DOCUMENTED, (result.code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    text = " ".join(result.output.split())  # rich folds long lines
    for fragment in fragments:
        assert " ".join(fragment.split()) in text, (fragment, result.output)


def assert_clean(result: Result, codes: frozenset[int] = DOCUMENTED) -> None:
    """Whatever the input: a documented exit code, never 70, never a traceback."""
    assert result.code in codes, (result.code, result.output)
    assert "Traceback" not in result.output and "internal error" not in result.output, result.output


SHA256 = re.compile(r"sha256:[0-9a-f]{64}")


def resummarize(document: dict[str, Any]) -> dict[str, Any]:
    """A plan document with its pools, totals and content digest worked out again from its placements, as a
    forger who knows the format would: every summary agrees with the placements, the digest verifies."""
    from hybridctl.core.plan.serialize import content_digest

    always = 730
    pools = {p["pool"]: p for p in document["pools"]}
    sums: dict[str, dict[str, float]] = {name: {"used": 0, "amortized": 0.0, "always_on": 0, "own": 0, "own_usd": 0.0}
                                         for name in pools}
    for pl in document["placements"]:
        pool, total = pools[pl["pool"]], sums[pl["pool"]]
        total["used"] += pl["gpus"]
        total["amortized"] += pl["usd_per_month"]
        if pl["hours_per_month"] == always:
            total["always_on"] += pl["gpus"]
        else:
            machines = pl["replicas"] * -(-pl["gpus_per_replica"] // pool["gpus_per_node"])
            total["own"] += machines
            total["own_usd"] += machines * pool["gpus_per_node"] * pl["hours_per_month"] * pool["usd_per_gpu_hour"]
    for name, pool in pools.items():
        total, gpn, price = sums[name], pool["gpus_per_node"], pool["usd_per_gpu_hour"]
        pool["used_gpus"] = int(total["used"])
        pool["amortized_usd_per_month"] = round(total["amortized"], 2)
        if pool["committed"]:
            pool["machines"], pool["always_on_machines"] = -(-pool["capacity_gpus"] // gpn), 0
            pool["usd_per_month"] = round(pool["capacity_gpus"] * always * price, 2)
        else:
            shared = -(-int(total["always_on"]) // gpn)
            pool["machines"], pool["always_on_machines"] = shared + int(total["own"]), shared
            pool["usd_per_month"] = round(shared * gpn * always * price + total["own_usd"], 2)
    committed = round(sum(p["usd_per_month"] for p in pools.values() if p["committed"]), 2)
    pay_per_use = round(sum(p["usd_per_month"] for p in pools.values() if not p["committed"]), 2)
    document["compute_usd_per_month"] = round(sum(pl["usd_per_month"] for pl in document["placements"]), 2)
    document["committed_usd_per_month"] = committed
    document["pay_per_use_usd_per_month"] = pay_per_use
    document["idle_committed_usd_per_month"] = round(
        committed - sum(p["amortized_usd_per_month"] for p in pools.values() if p["committed"]), 2)
    document["total_usd_per_month"] = round(
        committed + pay_per_use + document["data_usd_per_month"] if document["cost_model"] == "cash"
        else document["compute_usd_per_month"] + document["data_usd_per_month"], 2)
    budget = document.get("budget_usd_per_month")
    if "over_budget" in document:  # format 4 marks a plan over its budget
        document["over_budget"] = budget is not None and document["total_usd_per_month"] > budget + 0.005
    document["content_digest"] = content_digest(document)
    return document


def placed_copy(document: dict[str, Any], where: dict[str, Any], **change: Any) -> dict[str, Any]:
    """A copy of the first placement matching `where`, changed, its cost at its pool's price; appended."""
    found = next(p for p in document["placements"] if all(p[k] == v for k, v in where.items()))
    extra = {**found, **change}
    if "replicas" in change:
        extra["gpus"] = extra["replicas"] * extra["gpus_per_replica"]
    price = next(p["usd_per_gpu_hour"] for p in document["pools"] if p["pool"] == extra["pool"])
    extra["usd_per_month"] = round(extra["gpus"] * extra["hours_per_month"] * price, 2)
    document["placements"].append(extra)
    return extra
