"""The README's `pytest -n 2 --dist loadgroup`: which unit of work each test belongs to, in the
controller (tests/support/xdist_hosts.py): every module on the real hosts in one unit, handed out
first; every other module a unit of its own."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

from support.xdist_hosts import HOSTS_GROUP, HostsInOneWorker


def _scheduler(root: Path) -> HostsInOneWorker:
    values = {"tx": ["2*popen"], "loadscopereorder": True}
    config: Any = SimpleNamespace(getvalue=values.__getitem__, rootpath=root,
                                  option=SimpleNamespace(loadscopereorder=True))
    return HostsInOneWorker(config)


def test_host_modules_share_one_unit_and_every_other_module_is_its_own(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests/test_marked.py").write_text("pytestmark = [pytest.mark.hosts]\n")
    (tmp_path / "tests/test_lab_user.py").write_text("def test_a(host_lab): ...\n")
    (tmp_path / "tests/test_plain.py").write_text("def test_b(tmp_path): ...\n")
    scheduler = _scheduler(tmp_path)
    assert scheduler._split_scope("tests/test_marked.py::TestA::test_a[x]") == HOSTS_GROUP
    assert scheduler._split_scope("tests/test_lab_user.py::test_a") == HOSTS_GROUP
    assert scheduler._split_scope("tests/test_plain.py::TestB::test_b") == "tests/test_plain.py"
    assert scheduler._split_scope("tests/test_plain.py::test_b@mine") == "mine"  # an xdist_group in the id


def test_the_hosts_unit_is_handed_out_first_whatever_the_order_of_the_others(tmp_path: Path) -> None:
    queue = _scheduler(tmp_path).workqueue
    queue["tests/test_big.py"] = {"tests/test_big.py::t": False}
    queue[HOSTS_GROUP] = {"tests/test_h.py::t": False}
    queue["tests/test_small.py"] = {"tests/test_small.py::t": False}
    assert list(queue) == [HOSTS_GROUP, "tests/test_big.py", "tests/test_small.py"]
