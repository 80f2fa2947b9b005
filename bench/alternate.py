"""Run a bench against a git revision and the working tree, alternately. Prints figures; asserts nothing.

    .venv/bin/python bench/alternate.py REV [--rounds 2] -- bench/failover_bench.py --sizes "" ...

This machine's speed drifts by a fifth over minutes, so a figure taken now and one taken an hour
ago tell little about a change. Run in turn, within the same minutes, the two share the drift.
REV is checked out in a temporary worktree (removed afterwards); each run is a fresh interpreter
that imports the hybridctl of its own tree (PYTHONPATH), with this checkout's venv. Each line the
bench prints comes back prefixed with the tree it ran on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True, text=True).stdout.strip()


def _run(label: str, tree: Path, bench: list[str]) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(tree / "cli"), os.environ.get("PYTHONPATH")])))
    done = subprocess.run([sys.executable, str(tree / bench[0]), *bench[1:]], cwd=tree, env=env,
                          capture_output=True, text=True, check=False)
    for line in done.stdout.splitlines():
        print(f"{label}: {line}", flush=True)
    if done.returncode:
        print(f"{label}: exit {done.returncode}: {done.stderr.strip()[-500:]}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("rev", help="the revision to compare with, e.g. HEAD~3 or a commit")
    parser.add_argument("--rounds", type=int, default=2)
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    bench = argv[split + 1:]  # the bench script (a path in the tree) and its arguments
    if not bench:
        parser.error("name the bench to run after --, e.g. -- bench/failover_bench.py --sizes ''")
    commit = _git("rev-parse", "--short", args.rev)
    with tempfile.TemporaryDirectory(prefix="hybridctl-alternate-") as scratch:
        tree = Path(scratch) / commit
        _git("worktree", "add", "--detach", str(tree), commit)
        try:
            for _ in range(args.rounds):
                _run(commit, tree, bench)
                _run("working tree", ROOT, bench)
        finally:
            _git("worktree", "remove", "--force", str(tree))


if __name__ == "__main__":
    main()
