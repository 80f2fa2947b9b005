"""`plan --previous`: a plan whose cost or stack configuration differs is a change (exit 2 with
--detailed-exitcode), and the pull-request comment leads with the cost change and what moved it."""

from __future__ import annotations

from pathlib import Path

from support.examples import EXAMPLES
from support.inproc import run_cli

CLOUD_BURST = EXAMPLES / "cloud-burst.yaml"


def _repriced(tmp_path: Path) -> tuple[Path, Path]:
    """The previous plan, and the inventory with ash-h100's price raised from $1.85 to $2.35/GPU-h."""
    out = tmp_path / "old.json"
    assert run_cli("plan", str(CLOUD_BURST), "--out", str(out), "--state", str(tmp_path / "state")).code == 0
    inventory = tmp_path / "cloud-burst.yaml"
    text = CLOUD_BURST.read_text()
    assert text.count("usd_per_gpu_hour: 1.85") == 1
    inventory.write_text(text.replace("usd_per_gpu_hour: 1.85", "usd_per_gpu_hour: 2.35"))
    return out, inventory


def test_a_price_change_exits_2_with_detailed_exitcode(tmp_path: Path) -> None:
    previous, inventory = _repriced(tmp_path)
    result = run_cli("plan", str(inventory), "--previous", str(previous), "--detailed-exitcode",
                     "--state", str(tmp_path / "state"))
    assert result.code == 2, result.output
    # by hand: ash-h100's 32 committed GPUs × $0.50 × 730 h = $11,680.00, no replica moved
    assert ("change:    +$11,680.00/month against the previous plan, no replica moved: pool ash-h100 "
            "+$11,680.00 (price $1.85 → $2.35/GPU-h)") in result.stdout


def test_the_same_plan_exits_0(tmp_path: Path) -> None:
    out = tmp_path / "old.json"
    assert run_cli("plan", str(CLOUD_BURST), "--out", str(out), "--state", str(tmp_path / "state")).code == 0
    result = run_cli("plan", str(CLOUD_BURST), "--previous", str(out), "--detailed-exitcode",
                     "--state", str(tmp_path / "state"))
    assert result.code == 0, result.output


def test_the_pr_comment_leads_with_the_cost_change(tmp_path: Path) -> None:
    previous, inventory = _repriced(tmp_path)
    result = run_cli("plan", str(inventory), "--previous", str(previous), "--format", "markdown",
                     "--state", str(tmp_path / "state"))
    changes = result.stdout.split("#### Changes\n", 1)[1]
    assert "No changes" not in changes.split("####", 1)[0]
    first = changes.splitlines()[0]
    assert first.startswith("**+$11,680.00/month ($"), first
    assert first.endswith("): pool ash-h100 +$11,680.00 (price $1.85 → $2.35/GPU-h)**"), first


def test_a_daylight_saving_change_moves_no_scheduled_resize(tmp_path: Path) -> None:
    # The same timed fleet at a winter and a summer week: the same placements, and day-service's window
    # (Amsterdam time) opens an hour earlier in UTC; the node group's scheduled resizes are written in the
    # window's own zone, so they do not move, and a plan made in winter is no change in summer.
    from support.clock import CLOCK

    inventory = tmp_path / "clock.yaml"
    inventory.write_text(CLOCK)
    winter = tmp_path / "w44.json"
    assert run_cli("plan", str(inventory), "--week", "2026-W44", "--out", str(winter),
                   "--state", str(tmp_path / "state")).code == 0
    summer = run_cli("plan", str(inventory), "--week", "2026-W43", "--previous", str(winter), "--detailed-exitcode",
                     "--state", str(tmp_path / "state"))
    assert summer.code == 0, summer.output
    assert "cloud:     none (stack-configuration diff)" in summer.stdout
