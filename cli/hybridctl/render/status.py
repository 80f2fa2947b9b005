"""`status` for people: the applied plan, each site with its steps and drift, the last run, the lock, and
the model version each host runs."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from hybridctl.core.deploy.model_versions import VersionState


def _short_time(iso: str) -> str:
    return iso.replace("T", " ")[:16]


def _drift_text(drift: dict[str, object] | None) -> str:
    if drift is None:
        return "not checked"
    word = {True: "[red]drifted[/]", False: "[green]in sync[/]"}.get(drift["drifted"], "[yellow]unknown[/]")  # type: ignore[call-overload]
    hosts = drift["hosts"]
    lines = [f"{word}: {escape(str(drift['summary']))}"]
    if isinstance(hosts, dict):
        lines += [f"  {escape(h)}: {escape(v)}" for h, v in hosts.items()]
    return "\n".join(lines)


def render_status(out: Console, doc: dict[str, object]) -> None:
    applied = doc["applied"]
    out.print(f"state: {doc['state_dir']} (serial {doc['serial']})")
    if isinstance(applied, dict):
        out.print(f"applied plan: inventory {applied['inventory']}, {applied['plan_digest']}, applied {applied['applied_at']}, "
                  f"${applied['total_usd_per_month']:,.2f}/month, {applied['placements']} placements of "
                  f"{applied['placed_workloads']} workloads")
    else:
        out.print("applied plan: none")
    render_incident(out, doc.get("failover"))
    table = Table(title="sites", title_justify="left")
    for column in ("site", "kind", "GPUs used/capacity", "deployed step", "applied (UTC)", "drift"):
        table.add_column(column)
    for site in doc["sites"]:  # type: ignore[attr-defined]
        pool_text = "\n".join(f"{p['pool']} {p['used_gpus']}/{p['capacity_gpus']}" for p in site["pools"]) or "-"
        steps = site["steps"] or [None]
        for i, step in enumerate(steps):
            first = i == 0
            table.add_row(site["site"] if first else "", site["kind"] if first else "", pool_text if first else "",
                          step["step"] if step else "nothing deployed", _short_time(step["applied_at"]) if step else "",
                          _drift_text(step["drift"]) if step else "", end_section=i == len(steps) - 1)
    out.print(table)
    last = doc["last_run"]
    if isinstance(last, dict):
        out.print(f"last run: {last['operation']} {last['run_id']} {last['status']} (started {last['started_at']}, "
                  f"finished {last['finished_at'] or '-'}): {last['summary'] or '-'}")
    pending = doc["pending"]
    if isinstance(pending, dict) and pending.get("held_by"):
        out.print(f"[yellow]{pending['operation']} in progress[/]: {escape(str(pending['held_by']))} is running it; "
                  "wait for it to finish (status shows its progress)")
    elif isinstance(pending, dict):
        out.print(f"[yellow]unfinished {pending['operation']}[/] ({len(pending['run_ids'])} run(s)), resumable: "
                  f"run `{escape(str(pending['resume']))}` with the same options; finished steps are not repeated")
        ways = pending.get("or") or []
        if ways:
            out.print(f"  or undo what it did: `{escape(str(ways[0]))}`; or end it as it is: `{escape(str(ways[1]))}`")
    lock = doc["lock"]
    if isinstance(lock, dict):
        unsure = " (on another host: not checked whether it still runs)" if lock["alive"] is None else ""
        out.print(f"lock: held by pid {lock['pid']} on {escape(str(lock['host']))} since "
                  f"{escape(str(lock['started_at']))} ({escape(str(lock['command']))}){unsure}")
    checked = doc["drift"]
    if isinstance(checked, dict):
        for note in checked["notes"]:
            out.print(f"note: {escape(note)}")
        out.print("drift: " + ("[red]found[/]" if checked["found"] else "none found")
                  + (" (some checks failed)" if checked["errors"] else ""))


def render_incident(out: Console, incident: object) -> None:
    """The failovers in effect, the sites they fenced or cut off and since when, and the way back."""
    if not isinstance(incident, dict):
        return
    if "error" in incident:
        out.print(f"[yellow]failover in effect, but its runbook cannot be read[/]: {escape(str(incident['error']))}")
        return
    for failover in incident["failovers"]:
        out.print(f"[yellow]failover in effect[/]: {escape(failover['runbook'])} ({escape(', '.join(failover['events']))}),"
                  f" incident {escape(failover['incident'])}, since {escape(str(failover['since'] or '-'))}")
    for key, what in (("fenced_sites", "fenced"), ("link_down_sites", "link down")):
        for entry in incident[key]:
            out.print(f"  {what}: {escape(entry['site'])} since {escape(str(entry['since'] or '-'))}")
    out.print(f"  once the sites are back: `{escape(str(incident['rollback']))}`")


def render_model_versions(out: Console, rows: list[dict[str, object]]) -> None:
    if not rows:
        return
    table = Table(title="models on hosts", title_justify="left")
    for column in ("site", "workload", "host", "model", "expected", "active", "activated (UTC)", "state"):
        table.add_column(column)
    colours = {VersionState.AS_PLANNED.value: "green", VersionState.UNKNOWN.value: "yellow"}
    for r in rows:
        state = str(r["state"])
        text = f"[{colours.get(state, 'red')}]{escape(state)}[/]" + (f": {escape(str(r['note']))}" if r["note"] else "")
        table.add_row(str(r["site"] or "-"), str(r["workload"]), str(r["host"]), str(r["model"]), str(r["expected"]),
                      str(r["active"] or "-"), str(r["activated_at"] or "-").replace("T", " ")[:16], text)
    out.print(table)
