"""The operator at 3 a.m. (issue 46): the failover commands in-process against the recording cloud, with the
small two-region state of support/hostile.py (api on aws-a, failed over to aws-b)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hybridctl.drivers.state import JournalEvent, StateStore
from support.hostile import applied_state, run
from support.text import flat


@pytest.fixture(scope="module")
def applied(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return applied_state(tmp_path_factory.mktemp("applied"))


@pytest.fixture
def lab(applied: tuple[Path, Path], tmp_path: Path) -> tuple[Path, Path]:
    inventory, source = applied
    return inventory, shutil.copytree(source, tmp_path / "state")


class TestManualStepsStayManual:
    def test_auto_approve_without_a_terminal_is_refused_for_the_fencing_step(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--state", state)
        said = flat(result.stderr)
        assert result.code == 4, result.output
        assert "manual/fence/aws-a" in said and "--auto-approve never approves those" in said
        assert "--manual-steps-done" in said
        assert StateStore(state).read().pending is None

    def test_the_named_flag_is_journaled_with_who_and_how(self, lab: tuple[Path, Path]) -> None:
        _, state = lab
        result = run("failover", "site-lost", "aws-a", "--execute", "--auto-approve", "--manual-steps-done",
                     "--state", state)
        assert result.code == 0, result.output
        done = {r.step: r for r in StateStore(state).journal.records() if r.event == JournalEvent.STEP_DONE}
        fence = done["manual/fence/aws-a"]
        assert fence.detail["how"] == "--manual-steps-done" and "@" in str(fence.detail["approved_by"])
        assert done["confirm/capacity"].detail["how"] == "--auto-approve"
