"""A runbook for people: its effect on workloads as a rich table, or past RICH_ROWS rows (a lost data centre of
a fleet) as plain aligned columns, every workload a line."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.plan_steps import plain_steps
from hybridctl.core.failover.runbook import Runbook
from hybridctl.render.failover import render_runbook
from hybridctl.render.listing import RICH_ROWS
from rich.console import Console
from support.examples import planned_enterprise
from support.failover_runs import failed_over


@pytest.fixture(scope="module")
def runbook() -> Runbook:
    inventory, base = planned_enterprise()
    made, _ = failed_over(inventory, base, [Event(EventKind.SITE_LOST, "dc-frankfurt")],
                            steps_for=plain_steps(inventory))
    return made


def _rendered(runbook: Runbook, impacts: int) -> str:
    """The runbook with its impacts repeated, under new names, to `impacts` rows."""
    rows = [dataclasses.replace(runbook.impacts[n % len(runbook.impacts)], workload=f"w-{n:04}")
            for n in range(impacts)]
    console = Console(file=io.StringIO(), width=120, no_color=True, highlight=False)
    render_runbook(console, dataclasses.replace(runbook, impacts=tuple(rows)))
    return console.file.getvalue()  # type: ignore[attr-defined]


def test_a_few_workloads_are_a_rich_table(runbook: Runbook) -> None:
    out = _rendered(runbook, 3)
    assert "Effect on workloads" in out and "┃ workload" in out and "│ w-0002" in out


def test_a_fleets_workloads_are_one_line_each_with_what_the_table_says(runbook: Runbook) -> None:
    out = _rendered(runbook, RICH_ROWS + 50)
    lines = out.splitlines()
    start = lines.index(f"Effect on workloads ({RICH_ROWS + 50:,} rows)")
    header, body = lines[start + 1], lines[start + 3:start + 3 + RICH_ROWS + 50]
    assert header.split()[:3] == ["workload", "tier", "status"]
    assert [line.split()[0] for line in body] == [f"w-{n:04}" for n in range(RICH_ROWS + 50)]
    first = runbook.impacts[0]
    assert first.status.value in body[0] and first.reason in body[0]
    assert "Steps" in out  # the rest of the runbook follows
