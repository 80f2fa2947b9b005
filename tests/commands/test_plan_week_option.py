"""`plan --week`: the ISO week a timed plan is for, read at the CLI's edge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.examples import write
from support.inproc import run_cli
from support.timed import HAND


@pytest.fixture
def inventory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HYBRIDCTL_STATE", str(tmp_path / "state"))
    # the service in Amsterdam time: its UTC window moves with daylight saving
    text = HAND.replace('"20:00"}', '"20:00", tz: Europe/Amsterdam}').replace("HOURS", "434.523810")
    return write(tmp_path, text)


def test_the_named_week_is_the_plans(inventory: Path) -> None:
    winter = run_cli("plan", str(inventory), "--week", "2026-W48", "--format", "json")
    summer = run_cli("plan", str(inventory), "--week", "2026-W26", "--format", "json")
    assert (winter.code, summer.code) == (0, 0), winter.stderr + summer.stderr
    w, s = json.loads(winter.stdout), json.loads(summer.stdout)
    assert (w["week"], s["week"]) == ("2026-W48", "2026-W26")
    assert w["segments"][1] == {"start_hour": 7.0, "end_hour": 19.0}  # 08:00 CET is 07:00 UTC
    assert s["segments"][1] == {"start_hour": 6.0, "end_hour": 18.0}  # 08:00 CEST is 06:00 UTC


def test_the_text_plan_shows_the_week_strip(inventory: Path) -> None:
    result = run_cli("plan", str(inventory), "--week", "2026-W48")
    assert result.code == 0, result.stderr
    assert "week 2026-W48 (UTC, 11 segments)" in result.stdout


@pytest.mark.parametrize(("week", "words"), [("2026-48", "write YYYY-Www"), ("2026-W60", "2026 has no week 60")])
def test_a_week_that_is_not_one_is_a_usage_error(inventory: Path, week: str, words: str) -> None:
    result = run_cli("plan", str(inventory), "--week", week)
    assert result.code == 2 and f"--week: '{week}'" in result.stderr and words in result.stderr
    assert "hint: name an ISO week, such as 2026-W48" in result.stderr
