"""Hostile state directories (issue 34, finding 8): a state whose fields were corrupted — by hand, by a
tool, by a disk — is refused by every command that reads it, with a documented exit code (never 70: it
was, for a dozen of these), one message naming the file and the field, and nothing written: the state,
its journal and its documents are exactly as they were.

A field of the wrong type was taken as it came before (a serial of 1.5, an inventory path that is a
number) or failed far from where it was read (int('x'), a JSON list iterated as a list of runbook ids).
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.hostile import applied_state, assert_clean, assert_refused, run, snapshot

Edit = Callable[[Path], None]


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return applied_state(tmp_path_factory.mktemp("applied"))


def field(name: str, value: object) -> Edit:
    def edit(state: Path) -> None:
        document = json.loads((state / "state.json").read_text())
        document[name] = value
        (state / "state.json").write_text(json.dumps(document))
    return edit


def text(old: str, new: str) -> Edit:
    def edit(state: Path) -> None:
        content = (state / "state.json").read_text()
        assert old in content, old
        (state / "state.json").write_text(content.replace(old, new, 1))
    return edit


def nested(path: tuple[str | int, ...], value: object) -> Edit:
    def edit(state: Path) -> None:
        document = json.loads((state / "state.json").read_text())
        target: Any = document
        for part in path[:-1]:
            target = target[part] if not (isinstance(part, str) and part == "*") else next(iter(target.values()))
        target[path[-1]] = value
        (state / "state.json").write_text(json.dumps(document))
    return edit


def document(name: str, content: str) -> Edit:
    def edit(state: Path) -> None:
        (state / name).parent.mkdir(parents=True, exist_ok=True)
        (state / name).write_text(content)
    return edit


def journal_last(change: dict[str, object]) -> Edit:
    def edit(state: Path) -> None:
        lines = (state / "journal.jsonl").read_text().splitlines()
        record = json.loads(lines[-1])
        record.update(change)
        lines[-1] = json.dumps(record)
        (state / "journal.jsonl").write_text("\n".join(lines) + "\n")
    return edit


STATE = "state.json"
ACTIVE = "runbooks/active.json"
# name: (edit, the file named, the field named)
CASES: dict[str, tuple[Edit, str, str]] = {
    "revision as text": (field("revision", "x"), STATE, "revision"),
    "revision a list": (field("revision", []), STATE, "revision"),
    "revision 1e400": (text('"revision":', '"revision": 1e400, "r":'), STATE, "revision"),
    "serial as text": (field("serial", "7"), STATE, "serial"),
    "serial null": (field("serial", None), STATE, "serial"),
    "serial 1.5": (field("serial", 1.5), STATE, "serial"),
    "serial true": (field("serial", True), STATE, "serial"),
    "serial negative": (field("serial", -3), STATE, "serial"),
    "serial 1e400": (text('"serial":', '"serial": 1e400, "s":'), STATE, "serial"),
    "serial of 5,000 digits": (text('"serial":', '"serial": ' + "9" * 5000 + ', "s":'), STATE, "4300 digits"),
    "inventory_path a number": (field("inventory_path", 5), STATE, "inventory_path"),
    "inventory_path a list": (field("inventory_path", ["a"]), STATE, "inventory_path"),
    "inventory_path with NUL": (field("inventory_path", "/tmp/a\0b"), STATE, "inventory_path"),
    "inventory_path a lone surrogate": (text('"inventory_path":', '"inventory_path": "\\ud800", "i":'), STATE,
                                        "inventory_path"),
    "applied_plan_digest a number": (field("applied_plan_digest", 5), STATE, "applied_plan_digest"),
    "applied_at a number": (field("applied_at", 5), STATE, "applied_at"),
    "lineage a list": (field("lineage", [1]), STATE, "lineage"),
    "site_kinds a list": (field("site_kinds", [1]), STATE, "site_kinds"),
    "site_kinds of numbers": (field("site_kinds", {"aws-a": 5}), STATE, "site_kinds.aws-a"),
    "deployed a list": (field("deployed", [1]), STATE, "deployed"),
    "deployed of numbers": (field("deployed", {"x": 5}), STATE, "deployed.x"),
    "a deployed record a list": (nested(("deployed", "*", "record"), [1]), STATE, ".record"),
    "a deployed site a number": (nested(("deployed", "*", "site"), 7), STATE, ".site"),
    # what destroy and `status --drift` run again: a Pulumi project (a program), a playbook, hosts (security audit)
    "a deployed record's Pulumi project elsewhere": (nested(("deployed", "*", "record", "project"), "/tmp/evil"),
                                                     STATE, ".record.project: '/tmp/evil' is not the Pulumi project"),
    "a deployed record's stack name up the tree": (nested(("deployed", "*", "record", "stack_name"), "../../x"),
                                                   STATE, ".record.stack_name"),
    "pending a list": (field("pending", [1]), STATE, "pending"),
    "pending text": (field("pending", "apply"), STATE, "pending"),
    "pending run_ids text": (field("pending", {"operation": "apply", "run_ids": "abc"}), STATE, "pending.run_ids"),
    "pending detail a list": (field("pending", {"operation": "apply", "run_ids": ["r"], "detail": [1]}), STATE,
                              "pending.detail"),
    "history an object": (field("history", {"a": 1}), STATE, "history"),
    "history of numbers": (field("history", [5]), STATE, "history[0]"),
    "a run's pid as text": (nested(("history", 0, "pid"), "x"), STATE, "history[0].pid"),
    "a run's resumed_from a number": (nested(("history", 0, "resumed_from"), 5), STATE, "history[0].resumed_from"),
    "a run's finished_at a number": (nested(("history", 0, "finished_at"), 5), STATE, "history[0].finished_at"),
    "applied_plan a list": (field("applied_plan", [1]), STATE, "applied_plan"),
    "the applied plan's placements as text": (nested(("applied_plan", "placements"), "x"), STATE,
                                              "applied_plan: placements has the wrong type"),
    "the applied plan holding a lone surrogate": (text('"reason": "', '"reason": "\\ud800'), STATE,
                                                  "applied_plan: placements[0].reason: text with a lone surrogate"),
    "the applied plan's inventory a lone surrogate": (text('"inventory": "', '"inventory": "\\udc00'), STATE,
                                                      "applied_plan: inventory: text with a lone surrogate"),
    "a journal seq as text": (journal_last({"seq": "7"}), "journal.jsonl", "seq"),
    "a journal seq 7.5": (journal_last({"seq": 7.5}), "journal.jsonl", "seq"),
    "a journal run a number": (journal_last({"run": 5}), "journal.jsonl", "run"),
    "active.json a list": (document(ACTIVE, "[1, 2]\n"), ACTIVE, "not a hybridctl list of the failovers"),
    "active.json garbage": (document(ACTIVE, "\x01garbage{\n"), ACTIVE, "not valid JSON"),
    "active.json failovers a number": (document(ACTIVE, '{"failovers": 5}\n'), ACTIVE, "failovers must be a list"),
    "active.json failovers of numbers": (document(ACTIVE, '{"failovers": [1, 2]}\n'), ACTIVE, "failovers"),
    "active.json naming a path": (document(ACTIVE, '{"failovers": ["../../etc/passwd"]}\n'), ACTIVE, "failovers"),
    "active.json a key twice": (document(ACTIVE, '{"failovers": [], "failovers": []}\n'), ACTIVE, "appears twice"),
    "active.json before_plan a number": (document(ACTIVE, '{"failovers": ["rb-0123456789abcdef"], "before_plan": 5}\n'),
                                         ACTIVE, "before_plan"),
}

# The commands that read the state, and which of the corruptions each one reads.
COMMANDS: dict[str, tuple[str, ...]] = {
    "status": ("status", "--no-drift", "--format", "json"),
    "plan": ("plan", "INVENTORY"),
    "apply": ("apply", "INVENTORY", "--auto-approve"),
    "failover": ("failover", "site-lost", "aws-a", "--format", "json"),
    "runbook show": ("runbook", "show"),
    "runbook rollback": ("runbook", "rollback", "--dry-run"),
    "destroy": ("destroy", "--auto-approve", "--skip-cloud"),
}
_READS_JOURNAL = ("apply", "destroy")  # the others never read the journal of a state with nothing unfinished
_READS_ACTIVE = ("apply", "runbook show", "runbook rollback")
_READS_APPLIED_PLAN = ("plan", "apply", "failover")


def _reads(command: str, name: str) -> bool:
    if name.startswith("a journal"):
        return command in _READS_JOURNAL
    if name.startswith("active.json"):
        return command in _READS_ACTIVE
    if name.startswith("the applied plan"):
        return command in _READS_APPLIED_PLAN
    return True


@pytest.mark.parametrize(("name", "command"), [(name, command) for name in sorted(CASES) for command in sorted(COMMANDS)
                                                if _reads(command, name)])
def test_a_corrupted_state_field(applied: tuple[Path, Path], tmp_path: Path, name: str, command: str) -> None:
    inventory, source = applied
    state = tmp_path / "state"
    shutil.copytree(source, state)
    edit, named_file, named_field = CASES[name]
    edit(state)
    before = snapshot(state)
    argv = [str(inventory) if part == "INVENTORY" else part for part in COMMANDS[command]]
    result = run(*argv, "--state", state)
    assert_refused(result, str(state / named_file), named_field, codes=frozenset({1, 2}))
    assert snapshot(state) == before
    assert result.stdout == "" or "--format" not in argv  # no half a JSON document


@pytest.mark.timeout(300)  # bounded in time: the examples are few and each a run or three
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["lineage", "serial", "applied_plan", "applied_plan_digest", "applied_at",
                             "inventory_path", "site_kinds", "deployed", "pending", "history", "format_version",
                             "revision"]),
       value=st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                       max_size=3), max_leaves=6))
def test_fuzz_any_value_in_any_state_field(applied: tuple[Path, Path], tmp_path: Path, name: str,
                                           value: object) -> None:
    inventory, source = applied
    state = tmp_path / "fuzzed"
    shutil.rmtree(state, ignore_errors=True)
    shutil.copytree(source, state)
    document = json.loads((state / "state.json").read_text())
    document[name] = value
    (state / "state.json").write_text(json.dumps(document))  # NaN and Infinity too: json writes them
    before = snapshot(state)
    for argv in (("status", "--no-drift", "--format", "json"), ("plan", str(inventory)), ("runbook", "show")):
        result = run(*argv, "--state", state)
        assert_clean(result, frozenset({0, 1, 2}))
        if result.code:  # one message, naming the state file
            assert_refused(result, str(state / "state.json"), codes=frozenset({1, 2}))
        assert snapshot(state) == before


@pytest.mark.parametrize("content", ["[1, 2]\n", '{"failovers": 5}\n', "\x01garbage{\n"])
def test_a_damaged_list_of_failovers_is_refused_before_a_failover_runs_a_step(
        applied: tuple[Path, Path], tmp_path: Path, content: str) -> None:
    _, source = applied
    state = shutil.copytree(source, tmp_path / "state")
    document(ACTIVE, content)(state)
    before = snapshot(state)
    result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done", "--state", state)
    assert_refused(result, str(state / ACTIVE), codes=frozenset({1}))
    assert snapshot(state) == before  # no step journaled, no stack brought up


# --- state migrate: only the state's own regular files are copied ------------------------------------


def _link_to_hostname(state: Path) -> Path:
    (state / "runbooks").mkdir(exist_ok=True)
    (state / "runbooks" / "rb-0000000000000000.json").symlink_to("/etc/hostname")
    return state / "runbooks" / "rb-0000000000000000.json"


def _link_as_runbooks(state: Path) -> Path:
    shutil.rmtree(state / "runbooks", ignore_errors=True)
    (state.parent / "elsewhere").mkdir()
    (state.parent / "elsewhere" / "rb-0000000000000000.json").write_text("{}")
    (state / "runbooks").symlink_to(state.parent / "elsewhere")
    return state / "runbooks"


def _fifo_in_pulumi(state: Path) -> Path:
    (state / "pulumi").mkdir(exist_ok=True)
    (state / "pulumi" / "Pulumi.yaml").write_text("name: x\n")
    os.mkfifo(state / "pulumi" / "fifo")
    return state / "pulumi" / "fifo"


def _link_in_pulumi(state: Path) -> Path:
    (state / "pulumi").mkdir(exist_ok=True)
    (state / "pulumi" / "stolen").symlink_to("/etc/hostname")
    return state / "pulumi" / "stolen"


def _link_as_working_file(state: Path) -> Path:
    (state / "notes").symlink_to("/etc/hostname")
    return state / "notes"


MIGRATE_HOSTILE: dict[str, tuple[Callable[[Path], Path], str]] = {
    "a runbook that links out of the state": (_link_to_hostname, "a symbolic link"),
    "runbooks/ a link to another directory": (_link_as_runbooks, "a symbolic link"),
    "a FIFO in the Pulumi backend": (_fifo_in_pulumi, "a FIFO"),
    "a link in the Pulumi backend": (_link_in_pulumi, "a symbolic link"),
    "a working file that is a link": (_link_as_working_file, "a symbolic link"),
}


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name", sorted(MIGRATE_HOSTILE))
def test_state_migrate_copies_only_regular_files_and_refuses_before_copying(
        applied: tuple[Path, Path], tmp_path: Path, name: str) -> None:
    """Audit finding: a runbook linked to /etc/hostname was copied into the target (with PostgreSQL, into the
    shared database); a FIFO under pulumi/ ended in `error: Error` with the target half copied."""
    _, source = applied
    state = shutil.copytree(source, tmp_path / "state")
    make, words = MIGRATE_HOSTILE[name]
    path = make(state)
    before = snapshot(state)
    target = tmp_path / "target"
    result = run("state", "migrate", "--from", state, "--to", target)
    assert_refused(result, str(path), words, "nothing was copied", codes=frozenset({2}))
    copied = [p for p in target.rglob("*") if p.name not in ("lock", "lock.holder.json")] if target.exists() else []
    assert copied == []
    assert snapshot(state) == before


def test_state_migrate_copies_the_working_files_it_may(applied: tuple[Path, Path], tmp_path: Path) -> None:
    _, source = applied
    state = shutil.copytree(source, tmp_path / "state")
    (state / "pulumi" / ".pulumi" / "stacks").mkdir(parents=True)
    (state / "pulumi" / ".pulumi" / "stacks" / "s.json").write_text('{"checkpoint": {}}')
    (state / "pulumi" / ".pulumi" / "stacks" / "s.json").chmod(0o600)
    (state / "runbooks").mkdir(exist_ok=True)
    (state / "runbooks" / "rb-0000000000000001.json").write_text('{"id": "rb-0000000000000001"}')
    result = run("state", "migrate", "--from", state, "--to", tmp_path / "target")
    assert result.code == 0, result.output
    copied = tmp_path / "target" / "pulumi" / ".pulumi" / "stacks" / "s.json"
    assert copied.read_text() == '{"checkpoint": {}}' and copied.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "target" / "runbooks" / "rb-0000000000000001.json").read_text() == '{"id": "rb-0000000000000001"}'
