"""Mutation testing on demand, with mutmut: do the tests catch small bugs injected in the code?

Run it by hand, one scope at a time (not in CI: a whole scope takes hours on 2 cores):

    .venv/bin/pip install -e '.[mutation]'
    nice -n 19 .venv/bin/python bench/mutation.py core/failover --sample 100   # 100 mutants drawn at random
    nice -n 19 .venv/bin/python bench/mutation.py drivers/state                # every mutant of the scope
    nice -n 19 .venv/bin/python bench/mutation.py core/plan --sample 20 --rev 2c90c6d   # the code and tests of a commit

mutmut only understands ./, src/ or source/ layouts, so the script builds one in a scratch
directory (default .mutation/SCOPE[@REV], git-ignored): src/hybridctl, tests/, bench/ and the asset
directories of this checkout, or of a commit with --rev (before/after comparisons), with a pyproject.toml holding the scope's mutmut and pytest settings; it then
runs `mutmut run` there on the scope's mutants (or a seeded sample of them) with the scope's
tests only, and prints killed / total. A sampled score is an estimate: say so when quoting it.
The same --seed on the same code draws the same mutants, so a before/after pair on a commit
that only adds tests compares like with like.
Surviving mutants are listed; `cd .mutation/core-plan && ../../.venv/bin/mutmut show NAME` shows the diff.

What it costs (2 cores): mutmut mutates every string, number and operator, so a scope holds
thousands of mutants (core/failover about 3,700) and a whole scope is hours; generating them
(libcst) takes a minute or two, and mapping tests to functions runs the scope's tests once.
A sample therefore generates the mutants without running anything, draws the sample, and only
then runs mutmut, on the sampled mutants' tests only. Each scope's tests are the fast ones that
guard it; slow ones are left out: the fuzz test of hostile inventories (8 s for every surviving
mutant), and the planner's route and property tests (tests/core/placement/test_planner_routes.py,
test_planner_properties.py: half a minute and more), so core/plan's large-fleet solve routes
show as "no tests" and its score is a lower bound.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# scope -> (files or directories under cli/hybridctl to mutate, the tests that guard them, and tests
# of those left out because they are slow); a test path missing from the code (--rev) is skipped
SCOPES: dict[str, tuple[list[str], list[str], list[str]]] = {
    "core/plan": (["core/plan/"], ["tests/core/checker/test_checker_rules.py", "tests/core/checker/test_checker_revision2.py",
                                   "tests/core/placement/test_planner_cases.py", "tests/core/pricing/test_cost_model_cases.py",
                                   "tests/commands/test_cost_by_hand.py",
                                   "tests/commands/test_plans_are_checked.py",  # plan/verify.py
                                   "tests/commands/test_hostile_plan_numbers.py",  # plan/serialize.py
                                   "tests/render/test_plan_summary.py"], []),  # plan/diff.py
    "core/inventory": (["core/inventory/"], ["tests/core/inventory", "tests/commands/test_validate_rules.py",
                                             "tests/commands/test_validate_revision2.py",
                                             "tests/commands/test_hostile_inputs.py"],
                       ["tests/commands/test_hostile_inputs.py::test_mutated_examples_never_crash"]),
    "core/failover": (["core/failover/"], ["tests/core/failover"], []),
    # where issue 45's planted bugs hid: secret parameters, repeated ones, a file one byte over its limit (the
    # hostile-file tests are left out: their CLI runs wait minutes on a mutant that blocks)
    "drivers/limits": (["drivers/pgurl.py", "drivers/filereader.py"],
                       ["tests/drivers/test_state_urls.py", "tests/drivers/test_state_url_variants.py",
                        "tests/drivers/test_filereader.py", "tests/drivers/test_reader_limits.py"], []),
    "drivers/state": (["drivers/state.py", "drivers/journal.py", "drivers/statelock.py", "drivers/files.py"],
                      ["tests/drivers/test_state.py", "tests/drivers/test_durability.py",
                       "tests/drivers/test_statelock.py"], []),
}
ASSETS = ("templates", "stacks", "playbooks", "inventories", "docs")  # docs: tests that hold code to them


def build(work: Path, scope: str, rev: str | None) -> None:
    """The scratch tree mutmut runs in: a src/ layout of this checkout (or of commit `rev`), and the
    scope's settings. The scope's tests that do not exist there are left out of the selection."""
    sources, tests, slow = SCOPES[scope]
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
    deselect = [arg for test in slow for arg in ("--deselect", test)]
    (work / "pyproject.toml").write_text(
        "[tool.mutmut]\n"
        'source_paths = ["src/hybridctl"]\n'
        f"only_mutate = {json.dumps(patterns)}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}\n"
        f"pytest_add_cli_args = {json.dumps(['-p', 'no:cacheprovider', '-q', '-m', 'not hosts', *deselect])}\n"
        f"also_copy = {json.dumps([*ASSETS, 'bench'])}\n"
        "\n[tool.pytest.ini_options]\n"
        'testpaths = ["tests"]\npythonpath = ["tests", "bench"]\naddopts = "-ra"\n'
        'markers = ["hosts: real SSH test hosts"]\n')


# mutmut has no "generate only" command, and `mutmut run` on no mutant still maps every test to
# the functions it calls and runs the whole selection clean: this is the first step of `run`.
GENERATE = """
import os, sys
from mutmut.__main__ import create_mutants, set_mutant_under_test
from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths
set_mutant_under_test("mutant_generation")
os.makedirs("mutants", exist_ok=True)
copy_src_dir()
copy_also_copy_files()
setup_source_paths()
create_mutants(int(sys.argv[1]))
"""


def mutmut(work: Path, *args: str, capture: bool = False) -> str:
    exe = Path(sys.executable).with_name("mutmut")
    done = subprocess.run([str(exe), *args], cwd=work, text=True, check=False,
                          stdout=subprocess.PIPE if capture else None)
    if done.returncode not in (0, 1) and not capture:
        raise SystemExit(f"mutmut {' '.join(args)} failed with exit {done.returncode}")
    return done.stdout or ""


def generate(work: Path, jobs: int) -> None:
    """Write every mutant of the scope (and mutmut's list of them) without running a test."""
    done = subprocess.run([sys.executable, "-c", GENERATE, str(jobs)], cwd=work, check=False,
                          stdout=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"generating the mutants failed with exit {done.returncode} (a mutmut version "
                         "whose internals differ from 3.8's?)")


def results(work: Path) -> dict[str, str]:
    """mutant name -> status, from `mutmut results --all true`."""
    statuses: dict[str, str] = {}
    for line in mutmut(work, "results", "--all", "true", capture=True).splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and name:
            statuses[name] = status
    return statuses


def children_cpu() -> float:
    usage = os.times()
    return usage.children_user + usage.children_system


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scope", choices=sorted(SCOPES))
    parser.add_argument("--sample", type=int, default=0, help="run only this many mutants, drawn at random")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-children", type=int, default=1, help="parallel test runs (the machine is shared)")
    parser.add_argument("--work", type=Path, help="scratch directory (default .mutation/SCOPE, or SCOPE@REV)")
    parser.add_argument("--rev", help="mutate the code of this commit, with its tests (default: the working tree)")
    args = parser.parse_args()
    work = args.work or ROOT / ".mutation" / (args.scope.replace("/", "-") + (f"@{args.rev}" if args.rev else ""))
    started, cpu = time.monotonic(), children_cpu()
    build(work, args.scope, args.rev)
    generate(work, args.max_children)
    every = sorted(results(work))
    names: list[str] = []
    if args.sample:
        names = sorted(random.Random(args.seed).sample(every, min(args.sample, len(every))))
    generated, generated_cpu = time.monotonic() - started, children_cpu() - cpu
    mutmut(work, "run", "--max-children", str(args.max_children), *names)
    statuses = results(work)
    ran = {n: s for n, s in statuses.items() if not names or n in names}
    killed = sum(s in ("killed", "timeout", "segfault") for s in ran.values())
    survived = sorted(n for n, s in ran.items() if s not in ("killed", "timeout", "segfault"))
    sampled = f" (a sample of {len(ran)} of {len(every)} mutants, seed {args.seed})" if names else ""
    print(f"\n{args.scope}: killed {killed} / {len(ran)}{sampled}")
    print(f"time: {time.monotonic() - started:.0f} s wall, {children_cpu() - cpu:.0f} s CPU "
          f"(generating {generated:.0f} s wall, {generated_cpu:.0f} s CPU); work directory {work}")
    for name in survived:
        print(f"  {ran[name]}: {name}")


if __name__ == "__main__":
    main()
