"""Work done while HiGHS solves (beside.py): it runs during a large solve, once, and changes no result."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hybridctl.core.plan import beside
from hybridctl.core.plan.beside import also_beside_solver, beside_solver, in_steps, solving
from hybridctl.core.plan.planner import plan
from support.examples import planned_enterprise

WAIT_S = 10.0  # a bound on a hang, never reached when the behaviour holds


def _solver_waiting_for(event: threading.Event, ran_on: list[threading.Thread]) -> object:
    """A solver's run that finishes only once `event` is set: by a task, if one runs meanwhile."""

    def run() -> None:
        ran_on.append(threading.current_thread())
        assert event.wait(WAIT_S), "no task ran while the solver ran"

    return run


def test_tasks_run_here_in_order_while_a_large_model_is_solved_on_another_thread() -> None:
    done = threading.Event()
    order: list[str] = []
    solver_threads: list[threading.Thread] = []
    with beside_solver(lambda: order.append("steps"), lambda: (order.append("fingerprint"), done.set())):
        solving(_solver_waiting_for(done, solver_threads), beside.MIN_COLUMNS)  # type: ignore[arg-type]
    assert order == ["steps", "fingerprint"]
    assert solver_threads and solver_threads[0] is not threading.current_thread()


def test_a_small_model_or_no_block_runs_no_task() -> None:
    ran: list[str] = []
    with beside_solver(lambda: ran.append("task")):
        solving(lambda: None, beside.MIN_COLUMNS - 1)
    solving(lambda: None, beside.MIN_COLUMNS)
    assert ran == []


def _join_the_solver() -> None:
    for thread in threading.enumerate():
        if thread.name == "highs":
            thread.join(WAIT_S)


def test_a_task_runs_once_and_one_left_when_a_solve_ends_waits_for_the_next() -> None:
    ran: list[str] = []
    first_done, second_done = threading.Event(), threading.Event()

    def first() -> None:
        ran.append("first")
        first_done.set()
        _join_the_solver()  # the solve is over before this task is: the next task must wait

    with beside_solver(first, lambda: (ran.append("second"), second_done.set())):
        solving(_solver_waiting_for(first_done, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
        assert ran == ["first"]
        solving(_solver_waiting_for(second_done, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
        assert ran == ["first", "second"]
        solving(lambda: None, beside.MIN_COLUMNS)
    assert ran == ["first", "second"]


def test_tasks_left_when_the_block_ends_are_dropped() -> None:
    ran: list[str] = []
    with beside_solver(lambda: ran.append("never")):
        pass
    solving(lambda: None, beside.MIN_COLUMNS)
    assert ran == []


def test_work_queued_inside_a_block_runs_after_its_tasks_and_outside_one_is_not_kept() -> None:
    done = threading.Event()
    order: list[str] = []
    also_beside_solver(lambda: order.append("never"))  # no block: nothing to queue it in
    with beside_solver(lambda: order.append("caller's")):
        also_beside_solver(lambda: (order.append("replan's"), done.set()))
        solving(_solver_waiting_for(done, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
    solving(lambda: None, beside.MIN_COLUMNS)
    assert order == ["caller's", "replan's"]


def test_a_failing_task_is_dropped_and_the_next_runs() -> None:
    done = threading.Event()

    def failing() -> None:
        raise ValueError("worked out again where its result is needed")

    with beside_solver(failing, done.set):
        solving(_solver_waiting_for(done, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
    assert done.is_set()


def test_work_in_steps_runs_a_step_at_a_time_after_the_other_tasks_until_no_step_is_left() -> None:
    """Each step goes behind the work queued meanwhile (the replan's own): a solve that ends waits for one
    step at most, and the steps left run beside the next solve."""
    order: list[str] = []
    steps_left = [3]
    first_solve, last_step = threading.Event(), threading.Event()

    def step() -> bool:
        steps_left[0] -= 1
        order.append(f"step, {steps_left[0]} left")
        if not steps_left[0]:
            last_step.set()
        return steps_left[0] > 0

    def ending_the_first_solve() -> None:
        first_solve.set()
        _join_the_solver()

    with beside_solver(in_steps(step)):
        also_beside_solver(lambda: order.append("replan's"))
        also_beside_solver(ending_the_first_solve)
        solving(_solver_waiting_for(first_solve, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
        assert order == ["step, 2 left", "replan's"]
        solving(_solver_waiting_for(last_step, []), beside.MIN_COLUMNS)  # type: ignore[arg-type]
        solving(lambda: None, beside.MIN_COLUMNS)
    assert order == ["step, 2 left", "replan's", "step, 1 left", "step, 0 left"]


def test_the_solvers_own_error_reaches_the_caller() -> None:
    def broken() -> None:
        raise RuntimeError("HiGHS failed")

    with beside_solver(lambda: None), pytest.raises(RuntimeError, match="HiGHS failed"):
        solving(broken, beside.MIN_COLUMNS)


def test_a_plan_solved_with_tasks_beside_is_the_plan_solved_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    inventory, alone = planned_enterprise()
    monkeypatch.setattr(beside, "MIN_COLUMNS", 0)  # the example's models are small: every solve takes tasks
    ran: list[int] = []
    with beside_solver(*(lambda i=i: ran.append(i) for i in range(50))):
        together = plan(inventory)
    assert ran  # at least one task ran beside a solve
    assert together.placements == alone.placements and together.unplaced == alone.unplaced
    assert np.isclose(together.solver.objective, alone.solver.objective)
