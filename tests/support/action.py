"""The composite GitHub Action's `run:` steps, run as a runner runs them: each with GitHub's shell and files,
its `${{ }}` expressions filled from the inputs, the event and the outputs earlier steps wrote to
$GITHUB_OUTPUT, in a working directory of the test's choosing (a git repository for a pull request's path).
`gh` is a stand-in that records its calls: the GitHub API cannot be reached here."""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / ".github" / "actions" / "hybridctl" / "action.yml"
EXPRESSION = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


@dataclass
class ActionRun:
    steps: dict[str, subprocess.CompletedProcess[str]]
    outputs: dict[str, str]  # "steps.ID.outputs.NAME" -> value
    summary: str
    gh_log: str
    comment: str  # the body of the last comment posted or edited

    def output(self, name: str) -> str:
        """The action's own output `name` (its `outputs:` mapping), as a workflow would read it."""
        spec = yaml.safe_load(ACTION.read_text())["outputs"][name]
        return _substitute(spec["value"], self.outputs)


def _substitute(value: str, context: dict[str, str]) -> str:
    # an output no step wrote is empty, as in GitHub's expressions
    return EXPRESSION.sub(lambda m: context.get(m.group(1), "") if m.group(1).startswith("steps.")
                          else context[m.group(1)], value)


def _outputs(path: Path) -> dict[str, str]:
    """$GITHUB_OUTPUT's `name=value` lines (the action writes no multi-line values)."""
    if not path.exists():
        return {}
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def run_action(tmp_path: Path, inputs: dict[str, str], *, cwd: Path = ROOT, pr: str = "17",
               base_sha: str = "") -> ActionRun:
    """Every `run` step of the action but the install, in `cwd` (GitHub's workspace)."""
    action = yaml.safe_load(ACTION.read_text())
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    gh = bin_dir / "gh"
    gh.write_text('#!/bin/sh\necho "$@" >> "$GH_LOG"\nfor a; do case "$a" in body=@*) cat "${a#body=@}" '
                  '> "$GH_BODY";; esac; done\n')
    gh.chmod(gh.stat().st_mode | stat.S_IEXEC)
    (bin_dir / "hybridctl").write_text(f"#!/bin/sh\nexec {sys.executable} -m hybridctl \"$@\"\n")
    (bin_dir / "hybridctl").chmod(0o755)
    (bin_dir / "python").symlink_to(sys.executable)
    context = {"github.action_path": str(ACTION.parent), "github.token": "t0ken", "github.repository": "acme/infra",
               "github.event.pull_request.number": pr, "github.event.pull_request.base.sha": base_sha}
    values = {name: _substitute(str(spec.get("default", "")), context) for name, spec in action["inputs"].items()}
    values.update(inputs)
    context |= {f"inputs.{k}": str(v) for k, v in values.items()}
    files = {name: tmp_path / name for name in ("summary.md", "gh.log", "gh-body.md")}
    runner_temp = tmp_path / "runner"
    runner_temp.mkdir()
    steps = {}
    for step in action["runs"]["steps"]:
        if "run" not in step or step["id"] == "install":
            continue
        output = tmp_path / f"output-{step['id']}.txt"
        env = {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), "NO_COLOR": "1",
               "RUNNER_TEMP": str(runner_temp), "GITHUB_STEP_SUMMARY": str(files["summary.md"]),
               "GITHUB_OUTPUT": str(output), "GH_LOG": str(files["gh.log"]), "GH_BODY": str(files["gh-body.md"]),
               "PYTHONPATH": os.environ.get("PYTHONPATH", "")}
        env |= {k: _substitute(str(v), context) for k, v in step.get("env", {}).items()}
        steps[step["id"]] = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                           env=env, cwd=cwd, capture_output=True, text=True, timeout=300,
                                           check=False)
        context |= {f"steps.{step['id']}.outputs.{k}": v for k, v in _outputs(output).items()}
    read = {k: p.read_text() if p.exists() else "" for k, p in files.items()}
    return ActionRun(steps, {k: v for k, v in context.items() if k.startswith("steps.")}, read["summary.md"],
                     read["gh.log"], read["gh-body.md"])
