"""Runbooks and drill reports for people: rich tables, or markdown (templates/runbook.md.j2, drill.md.j2)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hybridctl.core.failover.drill import DrillReport, ScenarioResult
from hybridctl.core.failover.impact import Status, WorkloadImpact
from hybridctl.core.failover.runbook import Runbook
from hybridctl.render.listing import Cell, print_table
from hybridctl.render.templates import render

_STATUS_STYLE = {Status.MOVED: "yellow", Status.DEGRADED: "magenta", Status.DOWN: "red", Status.STARTED: "green",
                 Status.UNCHANGED: ""}


def usd(value: float) -> str:
    return f"${value:,.2f}"


def signed_usd(value: float) -> str:
    return f"{'+' if value > 0 else '−' if value < 0 else '±'}${abs(value):,.2f}"


def placement_text(replicas: dict[str, int]) -> str:
    return ", ".join(f"{pool}×{n}" for pool, n in sorted(replicas.items())) or "nothing"


def minutes(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} min"


def recovery_text(i: WorkloadImpact) -> str:
    """Outage against the objective, as an operator reads it."""
    if i.expected_loss:
        return f"{i.status.value}, expected (survives_site_loss: false)"
    if i.status is Status.DOWN:
        return "down" + (f" (RTO {i.rto_minutes:g} min missed)" if i.rto_minutes is not None else "")
    if i.outage_minutes is None:
        back = "keeps running" if i.status is not Status.STARTED else f"starts in ~{i.recovery_minutes:g} min"
    else:
        back = f"back in ~{i.outage_minutes:g} min"
    if i.rto_minutes is not None:
        back += f" (RTO {i.rto_minutes:g} min: {'met' if i.meets_rto else 'MISSED'})"
    return back


def work_lost_text(i: WorkloadImpact) -> str:
    if i.work_lost_minutes_max is not None:
        return f"≤ {i.work_lost_minutes_max:g} min (resumes from checkpoint)"
    if i.restarts_from_scratch:
        return "restarts from scratch (no checkpoint_minutes)"
    return ""


_IMPACT_COLUMNS = ("workload", "tier", "status", "before → after", "recovery", "work lost", "Δ cost/mo>", "why")


def _impact_row(i: WorkloadImpact) -> list[Cell]:
    status = i.status.value + (f" → fallback {i.fallback}" if i.fallback else "")
    return [i.workload, i.tier, Text(status, style=_STATUS_STYLE.get(i.status, "")),
            f"{placement_text(i.before)} → {placement_text(i.after)}", recovery_text(i), work_lost_text(i),
            signed_usd(i.usd_per_month_delta), i.reason]


def render_runbook(console: Console, runbook: Runbook) -> None:
    what = "Failover" if runbook.kind.value == "failover" else "Rollback"
    console.print(f"[bold]{what} runbook {runbook.id}[/] for {escape(runbook.inventory)}: "
                  f"{escape(', '.join(runbook.events))}")
    if runbook.impacts:
        # a lost site's thousand rows come out as plain columns (listing.py): rich took 1.3 s over them
        print_table(console, "Effect on workloads", _IMPACT_COLUMNS, [_impact_row(i) for i in runbook.impacts])
    else:
        console.print("No workload is affected.")
    steps = Table(title="Steps", title_justify="left")
    for column, justify in (("#", "right"), ("group", "left"), ("system", "left"), ("step", "left"),
                            ("est.", "right"), ("what", "left")):
        steps.add_column(column, justify=justify)  # type: ignore[arg-type]
    for n, s in enumerate(runbook.steps, 1):
        steps.add_row(str(n), s.group, s.system.value, escape(s.id), f"{s.estimated_minutes:g} min",
                      escape(s.detail or s.step.title))
    console.print(steps)
    if runbook.deferred:
        deferred = Table(title="Deferred (site unreachable)", title_justify="left")
        for column in ("step", "site", "why"):
            deferred.add_column(column)
        for d in runbook.deferred:
            deferred.add_row(escape(d.step_id), d.site, escape(d.reason))
        console.print(deferred)
    for note in runbook.notes:
        console.print(f"[cyan]note:[/] {escape(note)}")
    down = [i.workload for i in runbook.impacts if i.loses_service and not i.expected_loss]
    expected = [i.workload for i in runbook.impacts if i.expected_loss]
    missed = [i.workload for i in runbook.impacts if i.meets_rto is False and not i.loses_service]
    console.print(f"[bold]cost: {usd(runbook.before.total_usd_per_month)} → {usd(runbook.after.total_usd_per_month)}"
                  f"/month ({signed_usd(runbook.usd_per_month_delta)})[/]; estimated duration "
                  f"~{runbook.estimated_minutes:g} min; {len(runbook.steps)} steps"
                  + (f"; [red]down: {', '.join(down)}[/]" if down else "")
                  + (f"; expected loss (survives_site_loss: false): {', '.join(expected)}" if expected else "")
                  + (f"; [red]RTO missed: {', '.join(missed)}[/]" if missed else ""))


def runbook_markdown(runbook: Runbook) -> str:
    return render("runbook.md.j2", runbook=runbook, usd=usd, signed_usd=signed_usd, placement_text=placement_text,
                  recovery_text=recovery_text, work_lost_text=work_lost_text)


def _result_cells(r: ScenarioResult) -> list[str]:
    worst = r.worst_outage_minutes
    rto = f"{len(r.rto_misses)} missed" if r.rto_misses else "met"
    return [
        str(len(r.moved)),
        ", ".join(f"{i.workload} ({i.fallback or f'{i.replicas_running}/{i.replicas_wanted}'})" for i in r.degraded)
        or "—",
        ", ".join(f"{i.workload} ({i.tier}{', expected' if i.expected_loss else ''})" for i in r.lost) or "—",
        signed_usd(r.usd_per_month_delta),
        f"{r.recovery_minutes:g} min" + (f" (outage {worst:g})" if worst is not None else ""),
        rto,
    ]


def render_drill(console: Console, report: DrillReport) -> None:
    table = Table(title=f"Drill: {report.inventory} (base {usd(report.base.total_usd_per_month)}/month)",
                  title_justify="left")
    for column, justify in (("scenario", "left"), ("moves", "right"), ("degraded (fallback)", "left"),
                            ("lost", "left"), ("Δ cost/mo", "right"), ("recovery", "right"), ("RTO", "left"),
                            ("gate", "left")):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for r in report.results:
        cells = [escape(c) for c in _result_cells(r)]
        table.add_row(r.scenario.name, *cells, "[green]pass[/]" if r.passed else "[red]FAIL[/]")
    console.print(table)
    for r in report.results:
        for failure in r.gate_failures:
            console.print(f"[red]✗[/] {r.scenario.name}: {escape(failure)}")
        if r.budget_problem:
            console.print(f"[yellow]![/] {r.scenario.name}: {escape(r.budget_problem)}")
    verdict = "[green]passed[/]" if report.passed else f"[red]failed[/] ({len(report.failed)} scenario(s))"
    console.print(f"[bold]drill {verdict}[/]: {len(report.results)} scenarios in {report.seconds:.2f} s")


def drill_markdown(report: DrillReport) -> str:
    rows = [(r, _result_cells(r)) for r in report.results]
    return render("drill.md.j2", report=report, rows=rows, usd=usd)
