"""A runbook's `at` (when it acts in its plan's week) is outside every digest (issue 45, item 3): a time past the
year 9998 at its offset (`9999-12-31T23:59:59-23:59`) overflowed, and a NaN hour of the week broke the clock, in
`runbook show` and `runbook resume` (exit 70 in the middle of an incident). Each is now exit 1 naming the field."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from support.hostile import applied_state, assert_refused, run, snapshot


@pytest.fixture(scope="module")
def unfinished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A state whose failover's cloud step failed: its runbook is the unfinished run."""
    _, state = applied_state(tmp_path_factory.mktemp("times"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HYBRIDCTL_RECORDING_CLOUD_FAIL", "hostile-aws-b")
        assert run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state).code == 1
    return state


SPAN = {"index": 1, "of": 2, "start_hour": 0.0, "end_hour": 84.0, "starts_at": "2026-11-23T00:00:00Z",
        "ends_at": "2026-11-26T12:00:00Z", "clock": "Mon 00:00 → Thu 12:00 UTC"}
AT: dict[str, tuple[dict[str, Any], str]] = {  # name: (the `at` object's change, what the message says)
    "past 9998 at its offset": ({"time": "9999-12-31T23:59:59-23:59"}, "at.time"),
    "before 1970": ({"time": "1969-12-31T23:59:59Z"}, "at.time"),
    "no offset": ({"time": "2026-11-27T02:30:00"}, "at.time"),
    "a number for a time": ({"time": 5}, "at.time"),
    "NaN hour": ({"segment": {**SPAN, "start_hour": "NaN"}}, "at.segment.start_hour"),
    "an hour past the week": ({"segment": {**SPAN, "end_hour": 169}}, "at.segment.end_hour"),
    "segment 0 of 2": ({"segment": {**SPAN, "index": 0}}, "at.segment.index"),
    "a segment past 9998": ({"segment": {**SPAN, "ends_at": "9999-12-31T23:59:59-23:59"}}, "at.segment.ends_at"),
    "later steps not a list": ({"later_steps": {}}, "at.later_steps"),
    "a later step's NaN": ({"later_steps": [{"step": "x", "workloads": [], "segment": {**SPAN, "end_hour": "nan"},
                                             "needed_by": "2026-11-23T00:00:00Z"}]},
                           "at.later_steps[0].segment.end_hour"),
}


@pytest.mark.parametrize("command", [("runbook", "show"), ("runbook", "resume", "--auto-approve", "--manual-steps-done")])
@pytest.mark.parametrize("name", sorted(AT))
def test_a_runbooks_time_read_back(unfinished: Path, tmp_path: Path, name: str, command: tuple[str, ...]) -> None:
    state = shutil.copytree(unfinished, tmp_path / "state")
    target = json.loads((state / "state.json").read_text())["pending"]["target"]
    path = state / "runbooks" / f"{target}.json"
    document = json.loads(path.read_text())
    change, field = AT[name]
    document["at"] = {**(document["at"] or {"version": 1, "week": None, "segment": None, "later_steps": []}),
                      "time": "2026-11-27T02:30:00Z", **change}
    path.write_text(json.dumps(document, indent=2))
    before = snapshot(state)
    result = run(*command, "--state", state)
    assert_refused(result, f"{target}.json", field, codes=frozenset({1}))
    assert snapshot(state) == before


def test_an_ordinary_time_still_reads(unfinished: Path, tmp_path: Path) -> None:
    state = shutil.copytree(unfinished, tmp_path / "state")
    target = json.loads((state / "state.json").read_text())["pending"]["target"]
    path = state / "runbooks" / f"{target}.json"
    document = json.loads(path.read_text())
    document["at"] = {"version": 1, "time": "2026-11-27T02:30:00+01:00", "week": "2026-W48", "segment": SPAN,
                      "later_steps": []}
    path.write_text(json.dumps(document, indent=2))
    assert run("runbook", "show", "--state", state).code == 0
