"""Where a runbook stands, step by step, from the journal of its runs: what `runbook show` lists beside it.

A step is done, failed, declined, running (its run holds the lock now), cut off (started by a run that
ended, or canceled by Ctrl-C), deferred (at a site the events made unreachable) or pending; with when and,
for an approval, who gave it and how.
"""

from __future__ import annotations

from collections.abc import Sequence

from hybridctl.core.failover.runbook import Runbook
from hybridctl.drivers.state import JournalEvent, State, StateStore


def runbook_runs(state: State, runbook_id: str) -> list[str]:
    """The runs that executed the runbook, oldest first (its pending series, or those the history records)."""
    if state.pending is not None and state.pending.target == runbook_id:
        return list(state.pending.run_ids)
    return [r.run_id for r in state.history if r.operation == "runbook" and r.target == runbook_id]


def step_progress(store: StateStore, runbook: Runbook, run_ids: Sequence[str]) -> list[dict[str, object]]:
    """One row per step of the runbook, then one per deferred step: step, status, at, by, how, note."""
    wanted = set(run_ids)
    last: dict[str, tuple[str, str, str, dict[str, object]]] = {}
    for record in store.journal.records():
        if record.run in wanted and record.step:
            last[record.step] = (record.event, record.time, record.error or record.summary or "",
                                 dict(record.detail or {}))
    holder, alive = store.lock.holder_status()
    running_now = holder is not None and alive is not False and holder.command.startswith(("failover", "runbook"))
    rows: list[dict[str, object]] = []
    for s in runbook.steps:
        event, at, note, detail = last.get(s.id, ("", "", "", {}))
        status = {JournalEvent.STEP_DONE: "done", JournalEvent.STEP_FAILED: "failed",
                  JournalEvent.STEP_CANCELED: "cut off", JournalEvent.STEP_SKIPPED: "skipped",
                  JournalEvent.STEP_STARTED: "running" if running_now else "cut off"}.get(event, "pending")
        if status == "failed" and note.startswith("declined"):
            status = "declined"
        rows.append({"step": s.id, "status": status, "at": at or None, "by": detail.get("approved_by"),
                     "how": detail.get("how"), "note": note or None})
    rows += [{"step": d.step_id, "status": "deferred", "at": None, "by": None, "how": None,
              "note": d.reason} for d in runbook.deferred]
    return rows
