"""validate's text shows the first diagnostics of a broken inventory and counts the rest: 8,000 duplicated
workloads printed 16,000 lines in 13 s (an anchored workload aliased 40,000 times, a 280 KB file: 125 s).
--format json still lists every one."""

from __future__ import annotations

import json
from pathlib import Path

from hybridctl.paths import inventories_dir
from hybridctl.render.diagnostics import TEXT_DIAGNOSTICS_SHOWN
from support.inproc import run_cli

WORKLOAD = "  - &w\n    name: dup\n    type: training\n    gpu: {types: [H100], count: 8}\n    hours_per_month: 100\n"


def test_the_first_are_shown_and_the_rest_counted(tmp_path: Path) -> None:
    base = (inventories_dir() / "cloud-burst.yaml").read_text()
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text(base[:base.index("workloads:")] + "workloads:\n" + WORKLOAD + "  - *w\n" * 500)
    text = run_cli("validate", str(inventory))
    assert text.code == 1 and text.output.count("[duplicate-name]") == TEXT_DIAGNOSTICS_SHOWN
    assert f"… and {500 - TEXT_DIAGNOSTICS_SHOWN} more" in text.output
    every = json.loads(run_cli("validate", str(inventory), "--format", "json").stdout)
    [report] = every["inventories"]
    assert sum(d["code"] == "duplicate-name" for d in report["diagnostics"]) == 500
