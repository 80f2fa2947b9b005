"""The step executor with in-process runners over a real state directory: order, parallelism,
failure, resume, cancel, skip, and the journal and state it leaves."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hybridctl.core.deploy.steps import Step, StepGraph, make_step
from hybridctl.drivers.state import JournalEvent, StateStore, journal_problems
from hybridctl.errors import HybridctlError
from hybridctl.executor import StepContext, StepOutcome, StepRunner, StepStatus, run_operation

Runner = Callable[[Step, StepContext], StepOutcome]


class Recorder:
    """Runners that record the order steps ran in; behaviours per step id."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.lock = threading.Lock()
        self.behaviour: dict[str, Callable[[Step, StepContext], StepOutcome]] = {}

    def __call__(self, step: Step, context: StepContext) -> StepOutcome:
        with self.lock:
            self.calls.append(step.id)
        behave = self.behaviour.get(step.id)
        return behave(step, context) if behave else StepOutcome(StepStatus.DONE, f"{step.id} ok")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[StateStore]:
    store = StateStore(tmp_path / "state")
    store.lock.acquire(command="test")
    yield store
    store.lock.release()


def diamond(**params: object) -> StepGraph:
    """pools/a and pools/b (parallel) -> queues -> nodes; plus an independent edge chain."""
    return StepGraph.of([
        make_step("pools/a", "work", "a", {"n": params.get("a", 1)}, deploys=True, site="a"),
        make_step("pools/b", "work", "b", {"n": params.get("b", 1)}, deploys=True, site="b"),
        make_step("queues", "work", "q", {}, depends_on=["pools/a", "pools/b"], deploys=True),
        make_step("nodes", "work", "n", {}, depends_on=["queues"]),
        make_step("edge/preflight", "work", "e1", {}),
        make_step("edge/baseline", "work", "e2", {}, depends_on=["edge/preflight"]),
    ])


def run(store: StateStore, graph: StepGraph, recorder: StepRunner, **kwargs: object):  # type: ignore[no-untyped-def]
    return run_operation(store, graph, {"work": recorder}, operation="apply", target="t", **kwargs)  # type: ignore[arg-type]


def consistent(store: StateStore) -> None:
    assert journal_problems(store.journal.records()) == []


class TestOrder:
    def test_dependencies_first_and_independent_steps_in_parallel(self, store: StateStore) -> None:
        recorder = Recorder()
        meet = threading.Barrier(2, timeout=30)  # pools/a and pools/b must be running at the same time

        def together(step: Step, context: StepContext) -> StepOutcome:
            meet.wait()
            return StepOutcome(StepStatus.DONE)

        recorder.behaviour = {"pools/a": together, "pools/b": together}
        report = run(store, diamond(), recorder, parallelism=4)
        assert report.succeeded, report
        calls = recorder.calls
        assert calls.index("queues") > max(calls.index("pools/a"), calls.index("pools/b"))
        assert calls.index("nodes") > calls.index("queues")
        assert calls.index("edge/baseline") > calls.index("edge/preflight")
        consistent(store)

    def test_parallelism_one_runs_steps_one_at_a_time(self, store: StateStore) -> None:
        recorder = Recorder()
        running: list[int] = []
        active = [0]

        def count(step: Step, context: StepContext) -> StepOutcome:
            with recorder.lock:
                active[0] += 1
                running.append(active[0])
            context.cancel.wait(0.05)  # long enough for an overlapping step to show up
            with recorder.lock:
                active[0] -= 1
            return StepOutcome(StepStatus.DONE)

        recorder.behaviour = dict.fromkeys(diamond().ids, count)
        assert run(store, diamond(), recorder, parallelism=1).succeeded
        assert max(running) == 1


class TestFailure:
    def test_a_failure_blocks_its_dependents_only_and_the_report_says_what_was_done(self, store: StateStore) -> None:
        recorder = Recorder()
        recorder.behaviour["pools/b"] = lambda s, c: StepOutcome(StepStatus.FAILED, error="quota exceeded")
        report = run(store, diamond(), recorder)
        by_id = {r.step.id: r for r in report.steps}
        assert report.status == "failed"
        assert by_id["pools/b"].status is StepStatus.FAILED and by_id["pools/b"].error == "quota exceeded"
        assert by_id["queues"].status is StepStatus.BLOCKED and by_id["queues"].blocked_by == ("pools/b",)
        assert by_id["nodes"].status is StepStatus.BLOCKED
        # Independent work went on.
        assert {r.step.id for r in report.with_status(StepStatus.DONE)} == {"pools/a", "edge/preflight", "edge/baseline"}
        assert "queues" not in recorder.calls and "nodes" not in recorder.calls
        state = store.read()
        assert state.pending is not None and state.serial == 0
        assert set(state.deployed) == {"pools/a"}  # what was made is recorded even though the run failed
        consistent(store)

    def test_runner_exceptions_become_failed_steps(self, store: StateStore) -> None:
        recorder = Recorder()

        def boom(step: Step, context: StepContext) -> StepOutcome:
            raise HybridctlError("host unreachable", hint="check the network")

        def bug(step: Step, context: StepContext) -> StepOutcome:
            raise KeyError("oops")

        recorder.behaviour = {"edge/preflight": boom, "pools/a": bug}
        report = run(store, diamond(), recorder)
        by_id = {r.step.id: r for r in report.steps}
        assert by_id["edge/preflight"].error == "host unreachable (hint: check the network)"
        assert (by_id["pools/a"].error or "").startswith("internal error: KeyError")
        consistent(store)

    def test_a_step_without_a_runner_fails_cleanly(self, store: StateStore) -> None:
        graph = StepGraph.of([make_step("x", "unknown-kind", "x", {})])
        report = run_operation(store, graph, {}, operation="apply")
        assert report.steps[0].status is StepStatus.FAILED and "no runner" in (report.steps[0].error or "")


class TestResume:
    def test_a_rerun_does_not_redo_finished_steps(self, store: StateStore) -> None:
        recorder = Recorder()
        recorder.behaviour["queues"] = lambda s, c: StepOutcome(StepStatus.FAILED, error="api down")
        first = run(store, diamond(), recorder)
        assert not first.succeeded
        recorder = Recorder()
        second = run(store, diamond(), recorder)
        assert second.succeeded
        assert sorted(recorder.calls) == ["nodes", "queues"]
        assert second.resumed_from == (first.run_id,)
        assert {r.step.id for r in second.with_status(StepStatus.ALREADY_DONE)} == {
            "pools/a", "pools/b", "edge/preflight", "edge/baseline"}
        state = store.read()
        assert state.pending is None and state.serial == 1
        assert [r.status for r in state.history] == ["failed", "succeeded"]
        consistent(store)

    def test_a_changed_step_runs_again_and_unchanged_ones_do_not(self, store: StateStore) -> None:
        recorder = Recorder()
        recorder.behaviour["queues"] = lambda s, c: StepOutcome(StepStatus.FAILED, error="api down")
        run(store, diamond(), recorder)
        recorder = Recorder()
        assert run(store, diamond(a=2), recorder).succeeded  # pools/a's inputs changed
        assert sorted(recorder.calls) == ["nodes", "pools/a", "queues"]

    def test_after_a_success_the_next_operation_runs_everything_again(self, store: StateStore) -> None:
        assert run(store, diamond(), Recorder()).succeeded
        recorder = Recorder()
        assert run(store, diamond(), recorder).succeeded
        assert sorted(recorder.calls) == sorted(diamond().ids)  # converging again is how drift is repaired
        assert store.read().serial == 2

    def test_an_unfinished_apply_is_abandoned_by_a_destroy(self, store: StateStore) -> None:
        recorder = Recorder()
        recorder.behaviour["queues"] = lambda s, c: StepOutcome(StepStatus.FAILED, error="x")
        failed = run(store, diamond(), recorder)
        graph = StepGraph.of([make_step("destroy/pools/a", "work", "d", {}, removes=["pools/a"])])
        report = run_operation(store, graph, {"work": Recorder()}, operation="destroy")
        assert report.succeeded and report.resumed_from == ()
        state = store.read()
        assert state.run(failed.run_id).status == "abandoned"  # type: ignore[union-attr]
        assert "pools/a" not in state.deployed and state.pending is None

    def test_a_run_left_running_by_a_dead_process_reads_as_interrupted(self, store: StateStore) -> None:
        recorder = Recorder()
        recorder.behaviour["queues"] = lambda s, c: StepOutcome(StepStatus.FAILED, error="x")
        first = run(store, diamond(), recorder)
        # As if the process had died mid-run: the record still says running.
        from dataclasses import replace

        state = store.read()
        store.write(replace(state, history=tuple(replace(r, status="running", finished_at=None) for r in state.history)))
        run(store, diamond(), Recorder())
        assert store.read().run(first.run_id).status == "interrupted"  # type: ignore[union-attr]


class TestCancel:
    def test_cancel_stops_running_steps_and_starts_nothing_new(self, store: StateStore) -> None:
        cancel = threading.Event()
        started = threading.Event()
        recorder = Recorder()

        def slow(step: Step, context: StepContext) -> StepOutcome:
            started.set()
            if context.cancel.wait(30):
                return StepOutcome(StepStatus.CANCELED, "stopped")
            return StepOutcome(StepStatus.DONE)

        recorder.behaviour["queues"] = slow
        threading.Thread(target=lambda: started.wait(30) and cancel.set(), daemon=True).start()
        report = run(store, diamond(), recorder, cancel=cancel, parallelism=1)
        by_id = {r.step.id: r for r in report.steps}
        assert report.status == "interrupted"
        assert by_id["queues"].status is StepStatus.CANCELED
        assert by_id["nodes"].status is StepStatus.CANCELED and "nodes" not in recorder.calls
        consistent(store)
        events = [(r.step, r.event) for r in store.journal.records() if r.step == "queues"]
        assert events == [("queues", JournalEvent.STEP_STARTED), ("queues", JournalEvent.STEP_CANCELED)]
        # And the next run picks up from there.
        recorder = Recorder()
        assert run(store, diamond(), recorder).succeeded
        assert "queues" in recorder.calls and "pools/a" not in recorder.calls


class TestSkipAndState:
    def test_skipped_steps_are_journaled_and_do_not_fail_the_run(self, store: StateStore) -> None:
        recorder = Recorder()
        skip = {"pools/a": "skipped: --skip-cloud", "pools/b": "skipped: --skip-cloud", "queues": "skipped: --skip-cloud"}
        graph = StepGraph.of([s for s in diamond() if s.id != "nodes"])
        report = run(store, graph, recorder, skip=skip)
        assert report.succeeded
        assert sorted(recorder.calls) == ["edge/baseline", "edge/preflight"]
        assert {r.step.id for r in report.with_status(StepStatus.SKIPPED)} == set(skip)
        skipped = [r for r in store.journal.records() if r.event == JournalEvent.STEP_SKIPPED]
        assert len(skipped) == 3
        consistent(store)

    def test_a_step_that_waits_on_a_skipped_one_is_blocked(self, store: StateStore) -> None:
        report = run(store, diamond(), Recorder(), skip={"pools/a": "skipped"})
        assert {r.step.id: r.status for r in report.steps}["queues"] is StepStatus.BLOCKED
        assert not report.succeeded

    def test_deployed_records_carry_the_key_and_params_and_removals_drop_them(self, store: StateStore) -> None:
        run(store, diamond(), Recorder())
        deployed = store.read().deployed
        graph = diamond()
        assert set(deployed) == {"pools/a", "pools/b", "queues"}
        assert deployed["pools/a"].key == graph.get("pools/a").key and deployed["pools/a"].record == {"n": 1}
        teardown = StepGraph.of([make_step("destroy/queues", "work", "d", {}, removes=["queues"])])
        run_operation(store, teardown, {"work": Recorder()}, operation="destroy")
        assert set(store.read().deployed) == {"pools/a", "pools/b"}

    def test_run_operation_needs_the_lock(self, tmp_path: Path) -> None:
        with pytest.raises(RuntimeError, match="lock"):
            run_operation(StateStore(tmp_path), diamond(), {}, operation="apply")
