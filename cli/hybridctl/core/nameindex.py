"""An inventory list's entries by name, worked out once per list.

A drill reads one fleet's workloads by name in every scenario: in the impacts of each failover
and its rollback, and in the checker. Building the dict is a Python step per workload of the
fleet (10,000 pydantic attribute reads), so the last few lists seen keep theirs. Lists are told
apart by identity and kept alive here, so an id is never reused for another; inventories are
never changed in place, so an index stays true. Callers must not change what they get.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol, TypeVar

from hybridctl.core.identitymemo import IdentityMemo


class _Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=_Named)

# a drill's base inventory's lists, and the few lists of the scenario at hand
_memo: IdentityMemo[Sequence[Any], tuple[dict[str, int], dict[str, Any]]] = IdentityMemo(6)


def _index(entries: Sequence[Any]) -> tuple[dict[str, int], dict[str, Any]]:
    names = [entry.name for entry in entries]
    return dict(zip(names, range(len(names)), strict=True)), dict(zip(names, entries, strict=True))


def _indexes(entries: Sequence[N]) -> tuple[dict[str, int], dict[str, N]]:
    return _memo.get(entries, _index)


def by_name(entries: Sequence[N]) -> dict[str, N]:
    """The entries by name, in the list's order."""
    return _indexes(entries)[1]


def named(entries: Sequence[N], names: Collection[str]) -> list[N]:
    """The entries with these names, in the list's order (names it does not hold are left out)."""
    where = _indexes(entries)[0]
    return [entries[i] for i in sorted(where[name] for name in names if name in where)]
