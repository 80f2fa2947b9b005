"""No module of the core reads the calendar clock: the week a plan is for, the moment a failover strikes, a lock's
or a run's time stamp are the operation's to read (operations/week.py this_week) and pass down, so that the core's
answers depend on its arguments alone. A run's elapsed time (time.perf_counter, time.monotonic: the solver's time
limit, a drill's seconds) is not a date and stays allowed.

Read with `ast`, nothing imported: a call of `now`, `utcnow` or `today` on anything (datetime.now(UTC),
date.today(), a renamed import's), of time.time, time.time_ns, time.localtime, time.gmtime or time.ctime, or an
import of those from `time`, fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import hybridctl.core

CORE = Path(hybridctl.core.__file__).parent
_CLOCK_METHODS = frozenset({"now", "utcnow", "today"})  # datetime.now, datetime.utcnow, date.today, ...
_CLOCK_TIME = frozenset({"time", "time_ns", "localtime", "gmtime", "ctime"})  # of the `time` module


def clock_reads(source: str) -> Iterator[tuple[int, str]]:
    """(line, what) for each read of the calendar clock in a module's source."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if node.func.attr in _CLOCK_METHODS:
                yield node.lineno, f"{ast.unparse(node.func)}()"
            elif isinstance(owner, ast.Name) and owner.id == "time" and node.func.attr in _CLOCK_TIME:
                yield node.lineno, f"time.{node.func.attr}()"
        elif isinstance(node, ast.ImportFrom) and node.module == "time":
            for alias in node.names:
                if alias.name in _CLOCK_TIME:
                    yield node.lineno, f"from time import {alias.name}"


def test_the_scan_finds_a_clock_read_and_allows_elapsed_time() -> None:
    source = ("import time\nfrom datetime import UTC, date, datetime\nfrom time import time_ns\n"
              "a = datetime.now(UTC)\nb = date.today()\nc = time.time()\nd = time.perf_counter()\n"
              "e = time.monotonic()\nf = datetime.fromisoformat('2026-11-27T00:00+00:00')\n")
    assert sorted(clock_reads(source)) == [(3, "from time import time_ns"), (4, "datetime.now()"),
                                         (5, "date.today()"), (6, "time.time()")]


def test_no_core_module_reads_the_clock() -> None:
    modules = sorted(CORE.rglob("*.py"))
    assert len(modules) > 50  # the scan reads the core, not an empty directory
    found = [f"core/{m.relative_to(CORE)}:{line}: {what}" for m in modules
             for line, what in sorted(clock_reads(m.read_text(encoding="utf-8")))]
    assert found == [], ("the core reads the clock: take the moment or the week as an argument, read by the "
                         "operation (operations/week.py this_week):\n" + "\n".join(found))
