"""How `pytest -n 2 --dist loadgroup` (the README's command) shares the suite between two workers.

- Every test on the real SSH hosts runs in one worker, one lab at a time, as in a serial run: their
  waits (ssh keepalives after a cut link, task timeouts, a SIGKILL mid-playbook) never share the two
  cores with a second lab. That chain is the longest part of the suite, so it starts first; the other
  worker meanwhile runs the rest, and both share what is left when the chain ends.
- Every other module is one unit, so that a module-scoped fixture (the PostgreSQL server, node.yml's
  runs in tests/playbooks/test_node_playbook.py) is set up once, not once per worker.

A module is on the hosts when its source marks tests `hosts` or asks for the lab (`host_lab`), which
is how tests/hosts/README.md says to write one. This is read here, in the controller, because the
controller sees only test ids: pytest-xdist 3.8's own loadgroup reads `xdist_group` marks through
the ids, which pytest 9.2 no longer lets it rewrite (pytest-dev/pytest-xdist#1386), so those marks
are honoured only where that works.
"""

from __future__ import annotations

from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadGroupScheduling

HOSTS_GROUP = "hosts"
_HOSTS_SIGNS = ("mark.hosts", "host_lab")


class _HostsFirst(OrderedDict[str, dict[str, bool]]):
    """The work queue, with the hosts' unit always at its head: it is handed out first."""

    def __setitem__(self, scope: str, nodeids: dict[str, bool]) -> None:
        super().__setitem__(scope, nodeids)
        if scope == HOSTS_GROUP:
            self.move_to_end(scope, last=False)


class HostsInOneWorker(LoadGroupScheduling):
    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self.workqueue = _HostsFirst()
        self._root = Path(config.rootpath)
        self._on_hosts: dict[str, bool] = {}

    def _split_scope(self, nodeid: str) -> str:
        if nodeid.rfind("@") > nodeid.rfind("]"):  # an xdist_group mark that reached the id
            return super()._split_scope(nodeid)
        module = nodeid.split("::", 1)[0]
        return HOSTS_GROUP if self._module_on_hosts(module) else module

    def _module_on_hosts(self, module: str) -> bool:
        if module not in self._on_hosts:
            try:
                source = (self._root / module).read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                source = ""
            self._on_hosts[module] = any(sign in source for sign in _HOSTS_SIGNS)
        return self._on_hosts[module]
