"""The solver writes nothing to the process's stdout.

`plan -f json`, `drill -f json` and the plan file go to stdout, and CI parses them. HiGHS logs
from C++ straight to file descriptor 1, past sys.stdout; highspy 1.16's Python wrapper logged
its banner there before output_flag could be cleared, which broke every JSON reader (one reason
for the pin in pyproject.toml). HiGHS logs that banner once per process, so each case runs in a
fresh interpreter: in this one an earlier test's solve would already have used it up.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from support.plan_week import PLAN_WEEK

ROOT = Path(__file__).resolve().parents[3]

_PLAN = """
import sys
from pathlib import Path

import yaml
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.core.solver import solve
from hybridctl.core.placement.planner import PlanOptions, plan
from hybridctl.core.week.segments import IsoWeek
sys.path.insert(0, {bench!r})
from inventory_gen import generate

if {lp_path!r}:
    solve.DIRECT_MIP_MAX_COLUMNS = 0  # a model this small goes to the MIP directly otherwise
    path = {tmp!r} + "/inventory.yaml"
    open(path, "w").write(yaml.safe_dump(generate(300, 40, 2), sort_keys=False))
else:
    path = {enterprise!r}
options = PlanOptions(week=IsoWeek({week.year}, {week.week}))  # the enterprise fleet has a schedule
methods = plan(load_inventory(Path(path)).inventory, options=options).solver.method.split("+")
print("methods:", *methods, file=sys.stderr)
"""


@pytest.mark.parametrize("lp_path", [False, True], ids=["direct-mip", "lp-guided"])
def test_solving_writes_nothing_to_stdout(lp_path: bool, tmp_path: Path) -> None:
    script = _PLAN.format(bench=str(ROOT / "bench"), lp_path=lp_path, tmp=str(tmp_path),
                          enterprise=str(ROOT / "inventories" / "enterprise"), week=PLAN_WEEK)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    assert ("lp" in run.stderr.split()) is lp_path, run.stderr  # the path this case names was taken
    assert run.stdout == ""
