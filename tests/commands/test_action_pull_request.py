"""A pull request's path through the shipped Action (.github/actions/hybridctl/action.yml): its own `run:`
steps, run as a runner runs them in a git repository whose `main` holds the base inventory and whose branch
holds the change, with a stand-in `gh`. The comment compares with the base commit's plan of the same week."""

from __future__ import annotations

import datetime
import os
import subprocess
from pathlib import Path

import pytest
from support.action import ActionRun, run_action
from support.examples import EXAMPLES

FLEET = "infra/fleet.yaml"
BASE = (EXAMPLES / "cloud-burst.yaml").read_text()
# the head commit's date, so the week the action pins is known: 2026-03-30 is in ISO week 2026-W14
COMMIT_DATE = "2026-03-30T12:00:00+00:00"


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@example.com", "GIT_COMMITTER_NAME": "a",
           "GIT_COMMITTER_EMAIL": "a@example.com", "GIT_AUTHOR_DATE": COMMIT_DATE, "GIT_COMMITTER_DATE": COMMIT_DATE}
    return subprocess.run(["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True).stdout.strip()


def pull_request(tmp_path: Path, head: str | None, *, base: str | None = BASE, inputs: dict[str, str] | None = None
                 ) -> ActionRun:
    """`main` with `base` at infra/fleet.yaml (none when None), a branch with `head` there (the file removed
    when None), and the action run on the branch against main's commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README.md").write_text("infra\n")
    if base is not None:
        (repo / "infra").mkdir()
        (repo / FLEET).write_text(base)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    base_sha = _git(repo, "rev-parse", "HEAD")
    _git(repo, "switch", "-q", "-c", "change")
    if head is not None:
        (repo / "infra").mkdir(exist_ok=True)
        (repo / FLEET).write_text(head)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "change")
    runner = tmp_path / "runner-home"
    runner.mkdir()
    return run_action(runner, {"inventory": FLEET, "drill": "false", **(inputs or {})}, cwd=repo, base_sha=base_sha)


def _no_traceback(done: ActionRun) -> None:
    for name, step in done.steps.items():
        assert "Traceback" not in step.stdout + step.stderr, (name, step.stderr)


class TestComparedWithMain:
    def test_an_unchanged_inventory_says_no_change(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE)
        assert done.steps["plan"].returncode == 0, done.steps["plan"].stderr
        assert "No changes against the previous plan." in done.comment
        assert done.output("changed") == "false"
        assert done.output("change-usd-per-month") == "+0.00"
        assert "compared with base `" in done.comment
        _no_traceback(done)

    def test_a_price_only_change_names_the_price(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE.replace("usd_per_gpu_hour: 0.70", "usd_per_gpu_hour: 0.65"))
        assert done.steps["plan"].returncode == 0, done.steps["plan"].stderr
        assert "pool ash-l40s −$584.00 (price $0.70 → $0.65/GPU-h)" in done.comment
        assert done.output("changed") == "true"
        assert done.output("change-usd-per-month") == "-584.00"
        assert done.output("total-usd-per-month") == "167009.36"

    def test_a_new_workload_is_a_change_with_its_cost(self, tmp_path: Path) -> None:
        # twelve always-on 1-GPU replicas: nine fill the owned L40S's idle GPUs, three rent g6e machines
        added = BASE + ("  - name: triage-bot\n    type: realtime_inference\n    gpu: {types: [L40S], count: 1}\n"
                        "    replicas: 12\n")
        done = pull_request(tmp_path, added)
        assert done.steps["plan"].returncode == 0, done.steps["plan"].stderr
        changes = done.comment.split("#### Changes", 1)[1].split("####", 1)[0]
        assert "triage-bot" in changes
        assert done.output("changed") == "true"
        assert float(done.output("change-usd-per-month")) > 0

    def test_a_new_inventory_is_compared_with_nothing(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE, base=None)
        assert done.steps["plan"].returncode == 0, done.steps["plan"].stderr
        assert "no inventory at `infra/fleet.yaml` there" in done.comment
        assert done.output("changed") == "" and done.output("change-usd-per-month") == ""


class TestFailures:
    def test_an_invalid_inventory_is_commented_with_its_error_and_fails(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE.replace("gpu: {types: [H100], count: 8}", "gpu: {types: [H1OO], count: 8}"))
        assert done.steps["validate"].returncode == 1
        assert done.steps["validate"].stdout.startswith(f"::error file={FLEET},line=")
        assert done.steps["plan"].returncode == 1  # invalid (docs/commands.md, Exit codes)
        assert done.comment.startswith("<!-- hybridctl-plan -->\n### hybridctl plan: `infra/fleet.yaml` does not plan")
        assert "H1OO" in done.comment  # the error itself, where an old comment would show the previous plan
        assert "-X POST" in done.gh_log
        _no_traceback(done)

    def test_over_budget_is_commented_then_fails(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE.replace("monthly_budget_usd: 180000", "monthly_budget_usd: 150000"))
        assert done.steps["plan"].returncode == 1
        assert "OVER BUDGET" in done.comment
        assert "#### Changes" in done.comment  # compared with main: the change that broke the budget
        assert done.output("total-usd-per-month") == "167593.36"
        assert "-X POST" in done.gh_log
        _no_traceback(done)


class TestWeek:
    def test_every_run_of_a_commit_plans_its_commit_dates_week(self, tmp_path: Path) -> None:
        done = pull_request(tmp_path, BASE)
        assert done.outputs["steps.week.outputs.week"] == "2026-W14"
        assert datetime.date.fromisoformat(COMMIT_DATE[:10]).isocalendar()[:2] == (2026, 14)
        assert "week 2026-W14" in done.comment

    @pytest.mark.parametrize("week", ["2026-W02", "2026-W30"])
    def test_the_input_names_another(self, tmp_path: Path, week: str) -> None:
        done = pull_request(tmp_path, BASE, inputs={"week": week})
        assert done.outputs["steps.week.outputs.week"] == week
        assert f"week {week}" in done.comment
