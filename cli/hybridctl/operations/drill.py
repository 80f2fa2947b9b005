"""The flow behind drill, and the plan files that drills and failover rehearsals start from (no state)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hybridctl.core.inventory.models import Inventory
from hybridctl.errors import UsageError
from hybridctl.render.terminal import Terminal

if TYPE_CHECKING:
    from hybridctl.core.failover.expectations import FileChoices
    from hybridctl.core.failover.scenario import Scenario
    from hybridctl.core.week.segments import IsoWeek

PARALLEL_DRILL_MIN_WORK = 20_000  # workloads × scenarios below which a drill runs in this process


def run_drill(inventory_path: Path, scenario_files: Sequence[Path], *, standard: bool, output_format: str,
              json_out: Path | None, move_threshold_usd: float, time_limit_s: float,
              view: Terminal, plan_file: Path | None = None, week: IsoWeek | None = None) -> int:
    """`week`: the one a fresh plan is made for (default: the current one); a plan file's drill keeps the plan's."""
    from hybridctl.core.failover.drill import drill
    from hybridctl.core.failover.replan import FailoverOptions
    from hybridctl.core.failover.scenario import parse_scenario_file
    from hybridctl.core.failover.serialize import drill_to_json
    from hybridctl.core.memo import RunMemo
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.drivers.filereader import SCENARIO_LIMIT, read_utf8
    from hybridctl.drivers.files import atomic_write_text
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.parallel import map_in_processes
    from hybridctl.operations.common import check_output_path, plan_of_inventory
    from hybridctl.operations.week import planning_week
    from hybridctl.render.failover import drill_markdown, render_drill

    check_output_path(json_out, "--json-out")
    run_memo = RunMemo()  # the drill's, made before its scenarios (and their worker processes)
    # the replans keep the base plan's week; this one is for a fresh plan, or a plan file that names none
    week = planning_week(week)
    if plan_file is not None:
        base, inventory = plan_of_inventory(plan_file, inventory_path, run_memo)
    else:
        inventory = load_inventory(inventory_path).inventory
    scenarios = []
    choices = []
    for path in scenario_files:
        try:
            text = read_utf8(path, SCENARIO_LIMIT, what="a scenario file")
        except FileNotFoundError:
            raise UsageError(f"{path}: no such scenario file") from None
        except OSError as exc:
            raise UsageError(f"{path}: cannot read: {exc.strerror or exc}") from None
        found, chosen = parse_scenario_file(text, str(path))
        scenarios += found
        choices.append(chosen)
    scenarios = with_expectations(inventory, scenarios, choices, standard=standard, view=view)
    if plan_file is None:
        # verified by drill(), which keeps the verdict to check each scenario's plan where it differs
        base = plan(inventory, options=PlanOptions(time_limit_s=time_limit_s, week=week))
    # scenarios are independent: spread a large fleet's over the CPUs (a small one is faster here)
    spread = len(inventory.workloads) * len(scenarios) >= PARALLEL_DRILL_MIN_WORK
    report = drill(inventory, base, scenarios, FailoverOptions(move_threshold_usd, time_limit_s, week=week),
                   map_scenarios=map_in_processes if spread else None, memo=run_memo)
    if output_format == "json":
        view.document(drill_to_json(report))
    elif output_format == "markdown":
        view.document(drill_markdown(report))
    else:
        render_drill(view.out, report)
    if json_out is not None:
        atomic_write_text(json_out, drill_to_json(report))
    return 0 if report.passed else 1


def with_expectations(inventory: Inventory, scenarios: list[Scenario], choices: Sequence[FileChoices], *,
                      standard: bool, view: Terminal) -> list[Scenario]:
    """The files' scenarios, the built-ins chosen (a file's `standard` decides which; else --standard runs them
    all), each with its file's expectations; checked against the inventory."""
    from dataclasses import replace

    from hybridctl.core.failover.expectations import check_expectations, merged
    from hybridctl.core.failover.scenario import (
        ScenarioError,
        check_scenarios,
        standard_scenarios,
        unhalvable_pools,
    )

    picks = [c.standard for c in choices if c.standard is not None]
    skipped: list[str] = []
    if picks or standard:
        builtins = [s for s in standard_scenarios(inventory) if not picks or any(p.chooses(s.name) for p in picks)]
        scenarios = [*scenarios, *builtins]
        skipped = unhalvable_pools(inventory)
    check_scenarios(scenarios, inventory)
    expect = merged(choices, ScenarioError)
    check_expectations(expect, {s.name for s in scenarios}, inventory, ScenarioError)
    if skipped:  # once per drill, not per scenario
        view.note(f"note: the standard scenarios do not halve {len(skipped)} 1-GPU pool(s) ("
                  f"{', '.join(skipped[:5])}{', …' if len(skipped) > 5 else ''}): halving one is losing "
                  "it, which site-lost drills", markup=False)
    return [replace(s, expect=expect.expect.get(s.name)) for s in scenarios]
