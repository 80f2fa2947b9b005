"""`status` of a timed applied plan: the segment of the plan's week the moment falls in, and what the plan
wants running in it (per pool, and the workloads with hours there)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table


def _figure(value: object) -> str:
    number = round(float(value), 1)  # type: ignore[arg-type]
    return f"{number:,.0f}" if number == int(number) else f"{number:,.1f}"


def _utc(iso: object) -> str:
    return str(iso).replace("T", " ")[:16]


def _offset(minutes: int) -> str:
    sign = "+" if minutes >= 0 else "-"
    hours, rest = divmod(abs(minutes), 60)
    return f"UTC{sign}{hours:02d}:{rest:02d}"


def render_running_now(out: Console, now: dict[str, object]) -> None:
    """`now` is the status document's object of that name (core/week/running.py `running_document`)."""
    if "error" in now:
        out.print(f"now: [yellow]the applied plan's week cannot be read[/]: {escape(str(now['error']))}")
        return
    for moved in now.get("clock_moved", []):  # type: ignore[attr-defined]
        out.print(f"[yellow]warning[/]: the applied plan is for week {escape(str(now['week']))}, when "
                  f"{escape(moved['zone'])} was {_offset(moved['plan_utc_offset_minutes'])}; it is "
                  f"{_offset(moved['utc_offset_minutes'])} now, so the plan's UTC segments are off its windows there "
                  f"(the node groups' scheduled resizes follow the zone's clock): plan this week (`plan --week`) "
                  f"and apply it", highlight=False)
    segment = now["segment"]
    assert isinstance(segment, dict)
    out.print(f"now: {_utc(now['at'])} UTC, segment {segment['index'] + 1} of {segment['of']} of the plan's week "
              f"{escape(str(now['week']))}: {segment['clock']} ({_utc(segment['starts_at'])} to "
              f"{_utc(segment['ends_at'])} UTC)", highlight=False)
    pools = Table(title="should be running now, per pool", title_justify="left")
    for column in ("site", "pool", "GPUs held/capacity", "machines", "idle committed GPU-h"):
        pools.add_column(column)
    for p in now["pools"]:  # type: ignore[attr-defined]
        pools.add_row(escape(p["site"]), escape(p["pool"]), f"{_figure(p['gpus'])}/{p['capacity_gpus']} {escape(p['gpu'])}",
                      "-" if p["committed"] else _figure(p["machines"]),
                      _figure(p["idle_committed_gpu_hours"]) if p["committed"] else "-")
    out.print(pools)
    workloads = now["workloads"]
    if not workloads:
        out.print("no workload runs in this segment")
        return
    table = Table(title="workloads in this segment", title_justify="left")
    for column in ("workload", "site", "pool", "replicas", "GPUs", "runs"):
        table.add_column(column)
    for w in workloads:  # type: ignore[attr-defined]
        runs = ("the whole segment" if w["runs"] == "whole segment"
                else f"deferrable: {_figure(w['hours'])} h reserved of {_figure(segment['end_hour'] - segment['start_hour'])}")
        table.add_row(escape(w["workload"]), escape(w["site"]), escape(w["pool"]), str(w["replicas"]), str(w["gpus"]),
                      runs)
    out.print(table)
