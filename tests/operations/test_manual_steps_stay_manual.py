"""--auto-approve approves automated steps only (issue 46, item 3): a manual step needs a human at a terminal or
--manual-steps-done, and the journal records who approved it and how."""

from __future__ import annotations

import os
import threading
from typing import Any

import pytest
import typer
from hybridctl.core.deploy.steps import make_step
from hybridctl.executor import StepContext
from hybridctl.operations.failover import ExecOptions, _confirm_runner
from hybridctl.render.terminal import Terminal
from rich.console import Console

FENCE = make_step("manual/fence/dc-ashburn", "runbook-manual", "fence dc-ashburn",
                  {"instruction": "fence dc-ashburn", "incident": "inc-1", "site": "dc-ashburn"}, site="dc-ashburn")


def _run(monkeypatch: pytest.MonkeyPatch, options: ExecOptions, answer: bool) -> tuple[Any, list[str]]:
    asked: list[str] = []
    monkeypatch.setattr(typer, "confirm", lambda question, default=False: asked.append(question) or answer)
    runner = _confirm_runner(options, Terminal(out=Console(file=open(os.devnull, "w"))))  # noqa: SIM115
    return runner(FENCE, StepContext(FENCE, threading.Event(), lambda message: None)), asked


def test_auto_approve_asks_the_operator_for_a_manual_step(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, asked = _run(monkeypatch, ExecOptions(auto_approve=True), answer=False)
    assert asked == ["Done?"] and outcome.status.value != "done"


def test_a_human_answer_is_recorded_with_who_and_how(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, _ = _run(monkeypatch, ExecOptions(auto_approve=True), answer=True)
    assert outcome.status.value == "done" and outcome.detail["how"] == "asked on the terminal"
    assert "@" in str(outcome.detail["approved_by"])


def test_the_named_flag_records_the_manual_step_as_done_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    outcome, asked = _run(monkeypatch, ExecOptions(manual_steps_done=True), answer=False)
    assert asked == [] and outcome.status.value == "done"
    assert outcome.detail["how"] == "--manual-steps-done" and "done by hand" in outcome.summary
