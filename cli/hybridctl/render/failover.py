"""Runbooks and drill reports for people: rich tables, or markdown (templates/runbook.md.j2, drill.md.j2)."""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hybridctl.core.failover.drill import DrillReport, ScenarioResult
from hybridctl.core.failover.impact import Status, WorkloadImpact
from hybridctl.core.failover.runbook import Runbook
from hybridctl.core.failover.timing import later_text, timing_summary
from hybridctl.core.failover.worst import worst_segment_text
from hybridctl.render.listing import Cell, print_table
from hybridctl.render.templates import render_markdown_template

_STATUS_STYLE = {Status.MOVED: "yellow", Status.DEGRADED: "magenta", Status.DOWN: "red", Status.STARTED: "green",
                 Status.UNCHANGED: ""}


def usd(value: float) -> str:
    return f"${value:,.2f}"


def signed_usd(value: float) -> str:
    return f"{'+' if value > 0 else '−' if value < 0 else '±'}${abs(value):,.2f}"


def split_text(extra_usd: float, stopped_usd: float, stopped: Mapping[str, float]) -> str:
    """An incident's cash change split as the spec says: the extra spend beside the work stopped, each stopped
    workload named with the cash it paid (pricing/incident.py), so a fall that is only work stopped never reads
    as a saving."""
    text = f"{signed_usd(extra_usd)} extra spend"
    if stopped:
        text += (f", {'−' if stopped_usd else ''}{usd(stopped_usd)} of work stopped ("
                 + ", ".join(f"{w} {usd(v)}" for w, v in stopped.items()) + ")")
    return text


def cash_text(runbook: Runbook) -> str:
    """The cost line of a runbook: the change in cash, split into extra spend and work stopped, beside the
    committed capacity lost (still paid)."""
    cash = runbook.cash
    text = (f"{usd(cash.before_usd_per_month)} → {usd(cash.after_usd_per_month)}/month in cash "
            f"({signed_usd(cash.usd_per_month)}: "
            f"{split_text(cash.extra_usd_per_month, cash.stopped_usd_per_month, cash.stopped)})")
    if cash.lost:
        text += (f"; committed capacity lost: {cash.lost_gpus} GPU{'s' * (cash.lost_gpus != 1)} "
                 f"({usd(cash.lost_usd_per_month)}/month, still paid)")
    return text


def teams_text(runbook: Runbook) -> str:
    """The cash change per team, adding up to the runbook's; empty when no team's changes."""
    teams = runbook.cash.by_team(runbook.before.teams)
    return "by team: " + ", ".join(f"{team} {signed_usd(usd)}" for team, usd in teams.items()) if teams else ""


def unlisted_text(runbook: Runbook) -> str:
    """The part of the cash change no row shows, so that the rows add up to it; empty when there is none."""
    rest = runbook.unlisted_usd_per_month_delta
    if not rest:
        return ""
    repriced = [e for e in runbook.events if e.startswith("price ")]
    if not runbook.impacts and repriced:  # nothing moved: the change is the new price of what stays
        return f"{signed_usd(rest)}/month: workloads that stay where they are, at the prices of {', '.join(repriced)}"
    why = "machines shared with work that moved, or data read from elsewhere"
    if repriced:
        why = f"the prices of {', '.join(repriced)}; {why}"
    return f"{signed_usd(rest)}/month: workloads that stay where they are ({why})"


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
    if runbook.timing is not None:
        console.print(escape(timing_summary(runbook.timing, runbook.after)))
        for later in runbook.timing.later:
            console.print(f"later: {escape(later.step)} {escape(later_text(later, runbook.timing.at))}")
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
    if rest := unlisted_text(runbook):
        console.print(f"and {escape(rest)}")
    if teams := teams_text(runbook):
        console.print(escape(teams))
    console.print(f"[bold]cost: {escape(cash_text(runbook))}[/]; estimated duration "
                  f"~{runbook.estimated_minutes:g} min; {len(runbook.steps)} steps"
                  + (f"; [red]down: {', '.join(down)}[/]" if down else "")
                  + (f"; expected loss (survives_site_loss: false): {', '.join(expected)}" if expected else "")
                  + (f"; [red]RTO missed: {', '.join(missed)}[/]" if missed else ""))


_PROGRESS_STYLE = {"done": "green", "failed": "red", "declined": "yellow", "cut off": "red", "running": "cyan",
                   "deferred": "magenta", "pending": ""}


def render_progress(console: Console, rows: list[dict[str, object]]) -> None:
    """Where each step of a runbook stands (operations/runbook_progress.py)."""
    table = Table(title="Progress", title_justify="left")
    table.add_column("step", overflow="fold", min_width=18)
    table.add_column("status", no_wrap=True)
    table.add_column("when (UTC)", no_wrap=True)
    table.add_column("by (how)", overflow="fold")
    table.add_column("note", overflow="fold")
    for r in rows:
        status = str(r["status"])
        style = _PROGRESS_STYLE.get(status, "")
        by = f"{r['by']} ({r['how']})" if r["by"] else ""
        note = "" if r["by"] else str(r["note"] or "")  # an approval's note only repeats who and how
        table.add_row(escape(str(r["step"])), f"[{style}]{status}[/]" if style else status,
                      str(r["at"] or "").replace("T", " ")[:19], escape(by), escape(note))
    console.print(table)


def runbook_markdown(runbook: Runbook) -> str:
    return render_markdown_template("runbook.md.j2", runbook=runbook, usd=usd, signed_usd=signed_usd, placement_text=placement_text,
                  cash_text=cash_text, unlisted_text=unlisted_text, teams_text=teams_text,
                  recovery_text=recovery_text, work_lost_text=work_lost_text, timing_summary=timing_summary,
                  later_text=later_text)


def delta_text(r: ScenarioResult) -> str:
    """A scenario's change in cash, split into extra spend and work stopped, beside the committed capacity it
    loses (still paid)."""
    lost = (f"; {r.committed_lost_gpus} GPU{'s' * (r.committed_lost_gpus != 1)} lost, "
            f"{usd(r.committed_lost_usd_per_month)} still paid") if r.committed_lost_gpus else ""
    return (f"{signed_usd(r.usd_per_month_delta)} ("
            f"{split_text(r.extra_usd_per_month, r.stopped_usd_per_month, r.work_stopped)}{lost})")


def over_budget_text(r: ScenarioResult) -> str:
    """The over-budget column: how much, and whether the scenario file allows it (else a warning only)."""
    allowed = r.allowed_over_budget_usd_per_month
    if r.over_budget_usd_per_month < 0.005:
        return "—"
    over = usd(r.over_budget_usd_per_month)
    if allowed is None:
        return f"! {over} (not gated)"
    return f"{over} ({'over' if r.over_budget_fails else 'within'} {usd(allowed)} allowed)"


def rto_text(r: ScenarioResult) -> str:
    """The RTO column, as the gate judges it: fixed-tier workloads down or back late are misses. "met" only when
    no workload is down nor back late: a workload down never reads as met, even when it is an expected loss
    or of a tier the gate does not judge."""
    fixed = {i.workload for i in r.unexpected_fixed_losses} | {i.workload for i in r.rto_misses if i.tier == "fixed"}
    expected = {i.workload for i in r.lost if r.expected(i)}
    others = ({i.workload for i in r.rto_misses if i.tier != "fixed"}
              | {i.workload for i in r.lost if i.tier != "fixed"}) - expected
    parts = [f"{len(fixed)} fixed missed" if fixed else "", f"{len(expected)} down, expected" if expected else "",
             f"{len(others)} other tier(s) down or late, not gated" if others else ""]
    return "; ".join(filter(None, parts)) or "met"


def _result_cells(r: ScenarioResult, timed: bool = False) -> list[str]:
    """The row's cells after its name; `timed` (a base plan with a week): with its worst segment after `lost`."""
    worst = r.worst_outage_minutes
    fixed_down = len(r.unexpected_fixed_losses)
    other_down = sum(1 for i in r.lost if not r.expected(i) and i.tier != "fixed")
    recovery = (f"{r.recovery_minutes:g} min" + (f" (outage {worst:g})" if worst is not None else "")
                if r.moved or r.degraded or not r.lost else "—")  # nothing recovers: no time to show
    down = "; ".join(part for part in (f"{fixed_down} fixed down" if fixed_down else "",
                                       f"{other_down} other down" if other_down else "") if part)
    return [
        str(len(r.moved)),
        ", ".join(f"{i.workload} ({i.fallback or f'{i.replicas_running}/{i.replicas_wanted}'})" for i in r.degraded)
        or "—",
        ", ".join(f"{i.workload} ({i.tier}{', expected' if r.expected(i) else ''})" for i in r.lost) or "—",
        *([worst_segment_text(r.worst_segment)] if timed else []),
        delta_text(r),
        over_budget_text(r),
        # a workload down never recovers in this plan: the moved ones' time is not the scenario's
        (down if recovery == "—" else f"{recovery}; {down}") if down else recovery,
        rto_text(r),
    ]


def render_drill(console: Console, report: DrillReport) -> None:
    table = Table(title=f"Drill: {report.inventory} (base {usd(report.base.total_usd_per_month)}/month)",
                  title_justify="left")
    timed = bool(report.base.segments)
    for column, justify in (("scenario", "left"), ("moves", "right"), ("degraded (fallback)", "left"),
                            ("lost", "left"), *((("worst segment (UTC)", "left"),) if timed else ()),
                            ("Δ cost/mo", "right"), ("over budget", "right"),
                            ("recovery", "right"), ("RTO", "left"),
                            ("gate", "left")):
        # names are never cut ("site-lost-c…" three times over could not be told apart): the scenario's is
        # kept whole on its line, and a workload's too long for its column folds onto the next
        table.add_column(column, justify=justify, no_wrap=column == "scenario", overflow="fold")
    for r in report.results:
        cells = [escape(c) for c in _result_cells(r, timed)]
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
    timed = bool(report.base.segments)
    rows = [(r, _result_cells(r, timed)) for r in report.results]
    return render_markdown_template("drill.md.j2", report=report, rows=rows, usd=usd, timed=timed)
