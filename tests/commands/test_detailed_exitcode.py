"""`--detailed-exitcode` (issue 44, item 5): as Terraform's, 0 nothing changed, 2 something changed and
nothing else, 1 for every error, so that CI can tell a change from a broken job. Without the option
every exit code is the documented one (2 for a usage error). That an unchanged plan exits 0 and a
changed one 2 is test_plan_changes_count.py's."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.errors import ExitCode
from support.examples import EXAMPLES
from support.inproc import run_cli

CLOUD_BURST = str(EXAMPLES / "cloud-burst.yaml")


def _dangling_inventory(tmp_path: Path) -> str:
    """An inventory directory one of whose *.yaml entries is a symbolic link to nothing."""
    inventory = tmp_path / "inventory"
    inventory.mkdir()
    (inventory / "fleet.yaml").write_text(Path(CLOUD_BURST).read_text())
    (inventory / "extra.yaml").symlink_to("nowhere.yaml")
    return str(inventory)


def _state_file(tmp_path: Path) -> str:
    (tmp_path / "statefile").write_text("")
    return str(tmp_path / "statefile")


# (the command's words, what its one message says): each a usage error, exit 2 without the option
USAGE_ERRORS = {
    "a missing --previous file": (
        lambda tmp: ["plan", CLOUD_BURST, "--previous", str(tmp / "nope.json"), "--state", str(tmp / "state")],
        "nope.json: no such plan file"),
    "a mistyped option": (lambda tmp: ["plan", CLOUD_BURST, "--no-such-option"],
                          "No such option: --no-such-option"),
    "a bad value": (lambda tmp: ["plan", CLOUD_BURST, "--gap", "7"], "Invalid value for '--gap'"),
    "a missing inventory": (lambda tmp: ["plan", str(tmp / "missing.yaml")], "missing.yaml: no such file or directory"),
    "an inventory that cannot be read": (
        lambda tmp: ["plan", _dangling_inventory(tmp), "--state", str(tmp / "state")],
        "a symbolic link to nowhere.yaml, which does not exist"),
    "a state that cannot be read": (lambda tmp: ["status", "--state", _state_file(tmp)],
                                    "is a file, not a state directory"),
}


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_with_detailed_exitcode_a_usage_error_exits_1_not_2(tmp_path: Path, case: str) -> None:
    words, message = USAGE_ERRORS[case]
    result = run_cli(*words(tmp_path), "--detailed-exitcode")
    assert result.code == ExitCode.FAILED, result.output
    assert message in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("case", USAGE_ERRORS)
def test_without_detailed_exitcode_a_usage_error_still_exits_2(tmp_path: Path, case: str) -> None:
    words, message = USAGE_ERRORS[case]
    result = run_cli(*words(tmp_path))
    assert result.code == ExitCode.USAGE, result.output
    assert message in result.stderr


def test_with_detailed_exitcode_the_option_first_counts_too(tmp_path: Path) -> None:
    # click stops at the first unknown word: --detailed-exitcode before it is still on the command line
    result = run_cli("plan", CLOUD_BURST, "--detailed-exitcode", "--no-such-option")
    assert result.code == ExitCode.FAILED, result.output
    assert "No such option: --no-such-option" in result.stderr


def test_with_detailed_exitcode_status_before_any_apply_exits_1_not_4(tmp_path: Path) -> None:
    (tmp_path / "state").mkdir()
    result = run_cli("status", "--state", str(tmp_path / "state"), "--detailed-exitcode")
    assert result.code == ExitCode.FAILED, result.output
    assert "nothing has been applied with the state in" in result.stderr
    assert run_cli("status", "--state", str(tmp_path / "state")).code == ExitCode.REFUSED  # without the option
