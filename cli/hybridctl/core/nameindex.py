"""An inventory list's entries by name, worked out once per list in a run that passes its RunMemo.

A drill reads one fleet's workloads by name in every scenario: in the impacts of each failover
and its rollback, and in the checker. Building the dict is a Python step per workload of the
fleet (10,000 pydantic attribute reads), so the run's memo (core/memo.py: the NAMES slot) keeps
the last few lists' indexes. Lists are told apart by identity and kept alive there, so an id is
never reused for another; inventories are never changed in place, so an index stays true.
Callers must not change what they get.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, TypeVar

from hybridctl.core.identitymemo import IdentityMemo
from hybridctl.core.memo import RunMemo, Slot


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)


# A drill reads one fleet's workloads by name in every scenario (the impacts of its failover and rollback, the
# checker); each dict is a Python step per workload. 6: the base inventory's lists, and the few lists of the
# scenario at hand.
NAMES: Slot[IdentityMemo[Sequence[Any], tuple[dict[str, int], dict[str, Any]]]] = Slot(
    "an inventory list's entries by name", lambda: IdentityMemo(6))


def _index(entries: Sequence[Any]) -> tuple[dict[str, int], dict[str, Any]]:
    names = [entry.name for entry in entries]
    return dict(zip(names, range(len(names)), strict=True)), dict(zip(names, entries, strict=True))


def _indexes(entries: Sequence[N], run_memo: RunMemo | None) -> tuple[dict[str, int], dict[str, N]]:
    return _index(entries) if run_memo is None else run_memo[NAMES].get(entries, _index)


def by_name(entries: Sequence[N], run_memo: RunMemo | None = None) -> dict[str, N]:
    """The entries by name, in the list's order (kept in `run_memo`, if given)."""
    return _indexes(entries, run_memo)[1]


def named(entries: Sequence[N], names: Collection[str], run_memo: RunMemo | None = None) -> list[N]:
    """The entries with these names, in the list's order (names it does not hold are left out)."""
    where = _indexes(entries, run_memo)[0]
    return [entries[i] for i in sorted(where[name] for name in names if name in where)]
