"""With its children at work (a large plan), `plan` renders what it prints beside them and prints it
after the checker's verdict; what comes out is the same, byte for byte, as when it is printed as it is
rendered (a small plan), in every format."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hybridctl.operations import plan as plan_operation
from support.examples import EXAMPLES
from support.inproc import run_cli

SOLVER_SECONDS = re.compile(r'(, [0-9.]+ s$|"seconds": [0-9.]+)', re.MULTILINE)  # the one thing that varies


@pytest.mark.parametrize("options", [(), ("--detailed", "--max-rows", "3"), ("--format", "json"),
                                     ("--format", "markdown")], ids=["table", "detailed", "json", "markdown"])
def test_rendered_beside_the_children_or_as_printed_the_output_is_the_same(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: tuple[str, ...]) -> None:
    inventory = EXAMPLES / "enterprise"
    outputs = []
    for placements in (10**9, 0):  # printed as rendered; rendered beside the checker and the file writer
        monkeypatch.setattr(plan_operation, "BACKGROUND_CHECK_PLACEMENTS", placements)
        out = tmp_path / f"plan-{placements}.json"
        result = run_cli("plan", str(inventory), "--out", str(out), "--state", str(tmp_path / "state"), *options)
        assert result.code == 0, result.output
        outputs.append((SOLVER_SECONDS.sub("", result.stdout), out.read_bytes()))
    assert outputs[0][0].count("\n") > 20
    assert outputs[0] == outputs[1]
