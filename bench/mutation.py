"""Mutation testing on demand, with mutmut: do the tests catch small bugs injected in the code?

Run it by hand, one scope at a time (not in CI: a whole scope takes hours on 2 cores):

    .venv/bin/pip install -e '.[mutation]'
    .venv/bin/python bench/mutation.py core/plan --sample 60      # 60 mutants drawn at random
    .venv/bin/python bench/mutation.py drivers/state               # every mutant of the scope
    .venv/bin/python bench/mutation.py core/plan --sample 20 --rev 2c90c6d   # the code and tests of a commit

mutmut only understands ./, src/ or source/ layouts, so the script builds one in a scratch
directory (default .mutation/, git-ignored): src/hybridctl, tests/, bench/ and the asset
directories of this checkout, or of a commit with --rev (before/after comparisons), with a pyproject.toml holding the scope's mutmut and pytest settings; it then
runs `mutmut run` there on the scope's mutants (or a seeded sample of them) with the scope's
tests only, and prints killed / total. A sampled score is an estimate: say so when quoting it.
Surviving mutants are listed; `cd .mutation && ../.venv/bin/mutmut show NAME` shows the diff.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# scope -> (files or directories under cli/hybridctl to mutate, the tests that guard them)
SCOPES: dict[str, tuple[list[str], list[str]]] = {
    "core/plan": (["core/plan/"], ["tests/core/plan/test_checker_rules.py", "tests/core/plan/test_planner_cases.py",
                                   "tests/commands/test_cost_by_hand.py"]),
    "core/inventory": (["core/inventory/"], ["tests/commands/test_validate_rules.py",
                                             "tests/commands/test_hostile_inputs.py"]),
    "core/failover": (["core/failover/"], ["tests/core/failover"]),
    "drivers/state": (["drivers/state.py", "drivers/journal.py", "drivers/statelock.py", "drivers/files.py"],
                      ["tests/drivers/test_state.py", "tests/drivers/test_durability.py"]),
}
ASSETS = ("templates", "stacks", "playbooks", "inventories")


def build(work: Path, scope: str, rev: str | None) -> None:
    """The scratch tree mutmut runs in: a src/ layout of this checkout (or of commit `rev`), and the
    scope's settings. The scope's tests that do not exist there are left out of the selection."""
    sources, tests = SCOPES[scope]
    if work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True)
    root = ROOT
    if rev is not None:
        root = work / "checkout"
        root.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "cli", "tests", "bench", *ASSETS],
                                 check=True, capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=archive, check=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis")
    shutil.copytree(root / "cli" / "hybridctl", work / "src" / "hybridctl", ignore=ignore)
    for name in ("tests", "bench", *ASSETS):
        if (root / name).is_dir():
            shutil.copytree(root / name, work / name, ignore=ignore, symlinks=True)
    if rev is not None:
        shutil.rmtree(root)
    tests = [t for t in tests if (work / t).exists()]
    # the whole package is copied (a partial copy would leave the real one to be imported), and
    # only the scope's files are mutated
    patterns = [f"src/hybridctl/{s}*" if s.endswith("/") else f"src/hybridctl/{s}" for s in sources]
    (work / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src/hybridctl"]\n'
        f"only_mutate = {json.dumps(patterns)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-m", "not hosts"]\n'
        f"also_copy = {json.dumps([*ASSETS, 'bench'])}\n"
        "\n[tool.pytest.ini_options]\n"
        'testpaths = ["tests"]\npythonpath = ["tests", "bench"]\naddopts = "-ra"\n'
        'markers = ["hosts: real SSH test hosts"]\n')


def mutmut(work: Path, *args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    done = subprocess.run([str(exe), *args], cwd=work, text=True, check=False,
                          stdout=subprocess.PIPE if capture else None)
    if done.returncode not in (0, 1) and not capture:
        raise SystemExit(f"mutmut {' '.join(args)} failed with exit {done.returncode}")
    return done.stdout or ""


def results(work: Path) -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true`."""
    statuses: dict[str, str] = {}
    for line in mutmut(work, "results", "--all", "true", capture=True).splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            statuses[name] = status
    return statuses


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scope", choices=sorted(SCOPES))
    parser.add_argument("--sample", type=int, default=0, help="run only this many mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-children", type=int, default=1, help="parallel test runs (the machine is shared)")
    parser.add_argument("--work", type=Path, default=ROOT / ".mutation")
    parser.add_argument("--rev", help="mutate the code of this commit, with its tests (default: the working tree)")
    args = parser.parse_args()
    build(args.work, args.scope, args.rev)
    names: list[str] = []
    if args.sample:
        # generate the mutants and their names without running them: `mutmut run` on a name that
        # matches nothing still writes every mutant and the test-to-function stats
        mutmut(args.work, "run", "--max-children", str(args.max_children), "no-such-mutant")
        every = sorted(results(args.work))
        names = sorted(random.Random(args.seed).sample(every, min(args.sample, len(every))))
    mutmut(args.work, "run", "--max-children", str(args.max_children), *names)
    statuses = results(args.work)
    ran = {n: s for n, s in statuses.items() if not names or n in names}
    killed = sum(s in ("killed", "timeout", "segfault") for s in ran.values())
    survived = sorted(n for n, s in ran.items() if s in ("survived", "no tests"))
    sampled = f" (a seeded sample of {len(ran)} of {len(statuses)} mutants)" if names else ""
    print(f"\n{args.scope}: killed {killed} / {len(ran)}{sampled}")
    for name in survived:
        print(f"  {ran[name]}: {name}")


if __name__ == "__main__":
    main()
