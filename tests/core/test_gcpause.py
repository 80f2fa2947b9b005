"""The collector is paused inside loading and planning, and comes back as it was."""

from __future__ import annotations

import gc

import pytest
from hybridctl.core.gcpause import paused_gc
from hybridctl.core.inventory import loader
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan import planner


def test_the_collector_is_paused_inside_and_restored_after_even_on_error() -> None:
    assert gc.isenabled()
    try:
        with paused_gc():
            assert not gc.isenabled()
            with paused_gc():
                assert not gc.isenabled()
            assert not gc.isenabled()  # the inner block leaves the outer pause alone
            raise ValueError
    except ValueError:
        pass
    assert gc.isenabled()


def test_a_collector_already_off_stays_off() -> None:
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_loading_and_planning_run_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def record(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        raise RuntimeError("recorded")

    monkeypatch.setattr(loader, "merge_documents", record)
    monkeypatch.setattr(planner, "_plan", record)
    for call in (lambda: loader.load_sources([]), lambda: planner.plan(Inventory.model_validate(
            {"version": 1, "name": "x", "sites": [], "workloads": []}))):
        with pytest.raises(RuntimeError):
            call()
    assert seen == [False, False] and gc.isenabled()


def test_replans_runbooks_drill_scenarios_and_checks_run_with_the_collector_paused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from hybridctl.core.failover import drill, failover, replan
    from hybridctl.core.plan import checker

    seen: list[bool] = []

    def record(*args: object, **kwargs: object) -> object:
        seen.append(gc.isenabled())
        raise RuntimeError("recorded")

    class Probe:  # what a runbook or a scenario reads first
        def __getattr__(self, name: str) -> object:
            return record()

    # the first thing each one calls
    monkeypatch.setattr(replan, "disrupt", record)
    monkeypatch.setattr(checker, "_Rules", record)
    for call in (lambda: replan.replan(None, None, ()),  # type: ignore[arg-type]
                 lambda: failover.failover_runbook(None, Probe(), steps_for=record),  # type: ignore[arg-type]
                 lambda: failover.plan_rollback(None, Probe(), None, steps_for=record,  # type: ignore[arg-type]
                                                returning_sites=()),
                 lambda: drill.run_scenario(None, None, Probe(), None),  # type: ignore[arg-type]
                 lambda: checker.check(None, None)):  # type: ignore[arg-type]
        with pytest.raises(RuntimeError):
            call()
    assert seen == [False] * 5 and gc.isenabled()
