"""The CI building blocks: the pre-commit hooks validate whole inventories (a split inventory is one
directory), and the composite GitHub Action's scripts run as GitHub runs them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.action import ACTION, run_action
from support.examples import EXAMPLES

ROOT = Path(__file__).resolve().parents[2]
HYBRIDCTL = [sys.executable, "-m", "hybridctl"]


def ci_doc_yaml_blocks() -> list[Any]:
    """The yaml examples of docs/ci.md, where the README sends its readers for CI."""
    text = (ROOT / "docs" / "ci.md").read_text()
    return [yaml.safe_load(block) for block in re.findall(r"```yaml\n(.*?)```", text, re.S)]


def run_hook_entry(entry: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """As pre-commit runs a hook with pass_filenames: false: the entry and its args, no file names."""
    words = entry.split()
    assert words[0] == "hybridctl"
    return subprocess.run([*HYBRIDCTL, *words[1:], *args], cwd=cwd, capture_output=True, text=True, check=False,
                          env={**os.environ, "NO_COLOR": "1"}, timeout=120)


class TestPreCommit:
    def test_the_hooks_validate_the_inventories_in_args_not_each_file(self) -> None:
        hooks = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
        assert {h["id"] for h in hooks} == {"hybridctl-validate", "hybridctl-validate-strict"}
        for hook in hooks:
            assert hook["pass_filenames"] is False
            # one file of a split inventory fails on its own (the old hook did this) ...
            alone = run_hook_entry(hook["entry"], ["inventories/enterprise/datasets.yaml"], ROOT)
            assert alone.returncode == 1
            # ... the directory, as the args in docs/ci.md name it, passes
            whole = run_hook_entry(hook["entry"], ["inventories/enterprise"], ROOT)
            assert whole.returncode == 0, whole.stdout + whole.stderr

    def test_the_ci_doc_examples_name_real_hooks_and_no_made_up_rev(self, tmp_path: Path) -> None:
        shutil.copytree(EXAMPLES / "enterprise", tmp_path / "infra" / "inventory")
        ids = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
        configs = [b for b in ci_doc_yaml_blocks() if isinstance(b, dict) and "repos" in b]
        assert configs, "docs/ci.md shows a .pre-commit-config.yaml"
        for config in configs:
            for repo in config["repos"]:
                if repo["repo"] == "local":
                    for hook in repo["hooks"]:
                        assert hook["pass_filenames"] is False
                        done = run_hook_entry(hook["entry"], hook.get("args", []), tmp_path)
                        assert done.returncode == 0, done.stdout + done.stderr
                else:
                    assert {h["id"] for h in repo["hooks"]} <= ids
                    assert repo["rev"] != "v0.1.0"  # no such tag is published
                    assert all(h.get("args") for h in repo["hooks"]), "name the inventories in args"


class TestAction:
    def test_a_good_inventory_validates_comments_its_plan_and_passes_the_drill(self, tmp_path: Path) -> None:
        done = run_action(tmp_path, {"inventory": "inventories/cloud-burst.yaml"})
        for name, step in done.steps.items():
            assert step.returncode == 0, (name, step.stdout, step.stderr)
        assert done.steps["validate"].stdout == ""  # no annotations
        assert "repos/acme/infra/issues/17/comments" in done.gh_log and "-X POST" in done.gh_log
        assert done.comment.startswith("<!-- hybridctl-plan -->\n### hybridctl plan: `cloud-burst`")
        assert done.comment in done.summary
        assert "### hybridctl drill — `cloud-burst`: ✅ passed" in done.summary
        assert re.fullmatch(r"\d+\.\d\d", done.output("total-usd-per-month"))

    def test_a_broken_inventory_is_annotated_and_fails(self, tmp_path: Path) -> None:
        bad = tmp_path / "bad.yaml"
        bad.write_text((EXAMPLES / "cloud-burst.yaml").read_text().replace("gpu: H100", "gpu: H1OO", 1))
        done = run_action(tmp_path, {"inventory": str(bad), "plan-comment": "false", "drill": "false"})
        assert done.steps["validate"].returncode == 1
        assert done.steps["validate"].stdout.startswith(f"::error file={bad},line=")

    def test_the_drill_takes_a_scenario_file(self, tmp_path: Path) -> None:
        # a hospital-style fleet: --standard loses a clinic's 1-GPU box and a subsidiary, which its file expects
        fleet = {"inventory": "tests/data/drill/clinics.yaml", "validate": "false", "plan-comment": "false"}
        (tmp_path / "standard").mkdir()
        (tmp_path / "chosen").mkdir()
        standard = run_action(tmp_path / "standard", fleet)
        assert standard.steps["drill"].returncode == 1
        assert "❌ failed (2 of 6 scenarios)" in standard.summary
        chosen = run_action(tmp_path / "chosen", {**fleet, "scenarios": "tests/data/drill/clinics-drills.yaml"})
        assert chosen.steps["drill"].returncode == 0, chosen.steps["drill"].stderr
        assert "### hybridctl drill — `clinics`: ✅ passed" in chosen.summary
        assert "| `main-dc-and-triage` |" in chosen.summary

    @pytest.mark.parametrize("step", ["plan", "drill"])
    def test_steps_can_be_turned_off(self, tmp_path: Path, step: str) -> None:
        done = run_action(tmp_path, {"inventory": "inventories/cloud-burst.yaml", "plan-comment": "false",
                                     "drill": "false"})
        assert done.steps[step].returncode == 0 and done.steps[step].stdout == ""
        assert done.gh_log == ""

    def test_the_ci_doc_workflow_uses_the_action_with_its_inputs(self) -> None:
        inputs = yaml.safe_load(ACTION.read_text())["inputs"]
        workflows = [b for b in ci_doc_yaml_blocks() if isinstance(b, dict) and "jobs" in b]
        uses = [s for w in workflows for job in w["jobs"].values() for s in job["steps"]
                if "actions/hybridctl" in s.get("uses", "")]
        assert uses, "docs/ci.md shows a workflow using .github/actions/hybridctl"
        for step in uses:
            assert set(step["with"]) <= set(inputs)
            assert all(name in step["with"] for name, spec in inputs.items() if spec.get("required"))
