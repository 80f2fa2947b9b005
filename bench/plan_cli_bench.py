"""`hybridctl plan INVENTORY --out FILE` end to end, as a new process, timed; and digests of what it wrote.

Run from a checkout's root (alternate.py does: cwd is the tree, PYTHONPATH its cli):
    PYTHONPATH=$PWD/cli .venv/bin/python bench/alternate.py REV -- bench/plan_cli_bench.py [--workloads 10000] [--runs 3]

The inventory is bench/inventory_gen.py's seeded fleet, written once to /tmp/hybridctl-bench-inv-W-P-S.yaml and
reused (both trees plan the very same file). Each run is `python -m hybridctl plan INV --out OUT --state DIR
--format json`; its wall time, and its CPU time with its children's (getrusage RUSAGE_CHILDREN of this process
before and after: the command reaps its forked helpers, so their time is in the command's), are printed, then the
sha256 of the plan file and of stdout with solver.seconds nulled (the same in both trees when the fast path changes nothing).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path.cwd() / "bench"))


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _steady(stdout: bytes) -> bytes:
    """The printed plan without the solver's wall time (the plan file leaves it out; the printed JSON has it)."""
    try:
        document = json.loads(stdout)
    except ValueError:
        return stdout
    if isinstance(document.get("solver"), dict):
        document["solver"]["seconds"] = None
    return json.dumps(document, sort_keys=True).encode()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workloads", type=int, default=10_000)
    parser.add_argument("--pools", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    inventory = Path(f"/tmp/hybridctl-bench-inv-{args.workloads}-{args.pools}-{args.seed}.yaml")
    if not inventory.exists():
        from inventory_gen import generate, to_yaml

        partial = inventory.with_suffix(f".{os.getpid()}.part")
        partial.write_text(to_yaml(generate(args.workloads, args.pools, args.seed)), encoding="utf-8")
        partial.rename(inventory)
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="fastpaths-plan-") as scratch:
        for run in range(args.runs):
            out = Path(scratch) / f"plan-{run}.json"
            command = [sys.executable, "-m", "hybridctl", "plan", str(inventory), "--out", str(out),
                       "--state", str(Path(scratch) / f"state-{run}"), "--format", "json"]
            began_cpu, began = _cpu(), time.perf_counter()
            done = subprocess.run(command, capture_output=True, check=False, env=dict(os.environ, NO_COLOR="1"))
            walls.append(time.perf_counter() - began)
            cpus.append(_cpu() - began_cpu)
            plan_sha = hashlib.sha256(out.read_bytes()).hexdigest()[:16] if out.exists() else "none"
            out_sha = hashlib.sha256(_steady(done.stdout)).hexdigest()[:16]
            print(f"plan {args.workloads} workloads run {run}: wall {walls[-1]:.2f} s, CPU {cpus[-1]:.2f} s "
                  f"(exit {done.returncode}); plan file sha256 {plan_sha}, stdout sha256 {out_sha}")
            if done.returncode not in (0, 1):
                print(done.stderr.decode(errors="replace").strip()[-400:])
    print(f"plan {args.workloads} workloads, {args.runs} runs: wall total {sum(walls):.2f} s, "
          f"CPU total {sum(cpus):.2f} s")


if __name__ == "__main__":
    main()
