"""Ctrl-C the operator can read (issue 46, item 4): at a `Go ahead? [y/N]` prompt the first Ctrl-C cancels at
once; a second Ctrl-C names the step it cut off, whose outcome is unknown."""

from __future__ import annotations

import _thread
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import typer
from hybridctl.core.deploy.steps import StepGraph, make_step
from hybridctl.drivers.state import JournalEvent, StateStore
from hybridctl.executor import CutOff, StepContext, StepOutcome, StepStatus, run_operation
from hybridctl.operations.failover import ExecOptions, _confirm_runner
from hybridctl.render.terminal import Terminal
from rich.console import Console

GATE = make_step("confirm/capacity", "runbook-confirm", "confirm: bring capacity into service",
                 {"group": "capacity", "title": "Bring capacity into service", "steps": ["cloud-pools/a"]})


def test_an_interrupt_at_the_prompt_cancels_it_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    never = threading.Event()
    monkeypatch.setattr(typer, "confirm", lambda question, default=False: never.wait())  # nobody presses Enter
    cancel = threading.Event()
    runner = _confirm_runner(ExecOptions(), Terminal(out=Console(file=open(os.devnull, "w"))))  # noqa: SIM115
    threading.Timer(0.2, cancel.set).start()  # the first Ctrl-C
    started = time.monotonic()
    outcome: StepOutcome = runner(GATE, StepContext(GATE, cancel, lambda message: None))
    assert outcome.status is StepStatus.CANCELED and "cut off at the prompt" in outcome.summary
    assert time.monotonic() - started < 5


def test_a_second_interrupt_names_the_step_it_cut_off(tmp_path: Path) -> None:
    store = StateStore(tmp_path / "state")
    store.lock.acquire(command="test")
    stuck = threading.Event()

    def hung(step, context):  # type: ignore[no-untyped-def]
        _thread.interrupt_main(signal.SIGINT)  # the first Ctrl-C: the step does not stop
        time.sleep(0.3)
        _thread.interrupt_main(signal.SIGINT)  # the second
        stuck.wait()
        return StepOutcome(StepStatus.DONE)

    graph = StepGraph.of([make_step("cloud-pools/a", "work", "a", {}, deploys=True, site="a")])
    try:
        with pytest.raises(CutOff) as cut:
            run_operation(store, graph, {"work": hung}, operation="runbook", target="rb-1")
            time.sleep(2)  # the interrupt lands in the main thread's loop
    finally:
        stuck.set()
        store.lock.release()
    assert cut.value.steps == ("cloud-pools/a",)
    assert "cut off while running cloud-pools/a: its outcome is unknown" in str(cut.value)
    canceled = [r for r in store.journal.records() if r.event == JournalEvent.STEP_CANCELED]
    assert [r.step for r in canceled] == ["cloud-pools/a"] and "outcome is unknown" in (canceled[0].error or "")
