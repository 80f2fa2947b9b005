"""Every output kind of every example, written to a directory, for byte-for-byte comparison across revisions.

A change that must not change behaviour (a refactor) is checked by running this at the base commit and
at the change, and comparing the two directories:

    .venv/bin/python bench/outputs.py /tmp/before            # at the base commit
    .venv/bin/python bench/outputs.py /tmp/after             # at the change
    diff -r /tmp/before /tmp/after                           # nothing but the --help timing line

Covered, per example inventory: validate (text, json, sarif, github), classify (table, json), plan
(table, detailed, json, markdown, the plan file), show, cost by every breakdown in table, csv and json,
report (HTML; with the drill and a previous plan), synth (every file it writes), a failover of each
site (table, json, markdown, the runbook file), the standard drill (table, json, markdown, the report
file), schema and every init pattern. Wall-clock figures (`in 9.31 s`) are the only text masked.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ["cloud-burst.yaml", "enterprise", "federated.yaml", "split-inference.yaml",
            "train-onprem-serve-cloud.yaml"]
WEEK = "2026-W48"
BREAKDOWNS = ["tier", "type", "site", "pool", "workload", "capacity_type", "team"]
PATTERNS = ["cloud-burst", "split-inference", "train-onprem-serve-cloud", "federated", "enterprise"]
# Wall-clock figures: the one thing two runs of the same revision may print differently.
_SECONDS = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|CPU-s)\b")


def _hybridctl(*args: str, cwd: Path) -> tuple[int, str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="160", HYBRIDCTL_STATE=str(cwd / "state"))
    done = subprocess.run([sys.executable, "-m", "hybridctl", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)
    return done.returncode, done.stdout + done.stderr


def _record(out: Path, name: str, args: list[str], cwd: Path) -> None:
    code, text = _hybridctl(*args, cwd=cwd)
    text = _SECONDS.sub("<t>", text.replace(str(cwd), "<out>"))
    (out / name).write_text(f"$ hybridctl {' '.join(args)}\nexit {code}\n{text}")


def _sites(plan_file: Path) -> list[str]:
    plan = json.loads(plan_file.read_text())
    return sorted({p["site"] for p in plan["placements"]} | {p["site"] for p in plan["pools"]})


def _example(out_root: Path, example: str) -> None:
    inv = str(ROOT / "inventories" / example)
    out = out_root / example.removesuffix(".yaml")
    out.mkdir(parents=True)
    plan = out / "plan.json"
    _record(out, "plan-file.txt", ["plan", inv, "--week", WEEK, "--out", str(plan)], out)
    for fmt in ("text", "json", "sarif", "github"):
        _record(out, f"validate-{fmt}.txt", ["validate", inv, "--format", fmt], out)
    for fmt in ("table", "json"):
        _record(out, f"classify-{fmt}.txt", ["classify", inv, "--format", fmt], out)
    for fmt in ("table", "json", "markdown"):
        _record(out, f"plan-{fmt}.txt", ["plan", inv, "--week", WEEK, "--format", fmt], out)
        _record(out, f"show-{fmt}.txt", ["show", str(plan), "--format", fmt], out)
    _record(out, "plan-detailed.txt", ["plan", inv, "--week", WEEK, "--detailed", "--max-rows", "0"], out)
    _record(out, "plan-previous.txt", ["plan", inv, "--week", WEEK, "--previous", str(plan),
                                      "--detailed-exitcode"], out)
    for by in BREAKDOWNS:
        for fmt in ("table", "csv", "json"):
            _record(out, f"cost-{by}-{fmt}.txt", ["cost", str(plan), "--by", by, "--format", fmt], out)
    drill_file = out / "drill.json"
    _record(out, "drill-table.txt", ["drill", inv, "--standard", "--week", WEEK, "--json-out", str(drill_file)], out)
    for fmt in ("json", "markdown"):
        _record(out, f"drill-{fmt}.txt", ["drill", inv, "--standard", "--week", WEEK, "--format", fmt], out)
    _record(out, "report.txt", ["report", str(plan), "--out", str(out / "report.html"), "--drill",
                                str(drill_file), "--previous", str(plan)], out)
    for site in _sites(plan):
        for fmt in ("table", "json", "markdown"):
            _record(out, f"failover-{site}-{fmt}.txt", ["failover", "site-lost", site, "--plan", str(plan),
                                                        "-i", inv, "--format", fmt,
                                                        "--out", str(out / f"runbook-{site}.json")], out)
    _record(out, "synth.txt", ["synth", str(plan), "--inventory", inv, "--out", str(out / "synth")], out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="a directory to create")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    args.out.mkdir(parents=True)
    _record(args.out, "schema.txt", ["schema"], args.out)
    _record(args.out, "help.txt", ["--help"], args.out)
    for pattern in PATTERNS:
        where = args.out / f"init-{pattern}"
        where.mkdir()
        _record(args.out, f"init-{pattern}.txt", ["init", "--pattern", pattern], where)
    with ThreadPoolExecutor(args.jobs) as pool:
        list(pool.map(lambda example: _example(args.out, example), EXAMPLES))
    print(f"wrote every output of {len(EXAMPLES)} examples to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
