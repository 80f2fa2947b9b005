"""A few values kept by the identity of what they were worked out from.

A drill reads one fleet's lists and plans in every scenario (its workloads by name, the base
plan's digest, its placements by pool): worked out again, each would cost a pass over the fleet.
Inputs are told apart by identity and kept alive here, so an id never passes to another object
meanwhile; what is kept must be immutable in practice (inventories and plans are never changed in
place). The most recently read entry goes first, so a drill's base entries stay while each
scenario's come and go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class IdentityMemo(Generic[K, V]):
    def __init__(self, kept: int) -> None:
        self.kept = kept
        self._entries: list[tuple[K, V]] = []

    def get(self, key: K, work_out: Callable[[K], V]) -> V:
        """The value kept for `key` (the very object), else work_out(key), kept."""
        for position, (known, value) in enumerate(self._entries):
            if known is key:
                if position:
                    self._entries.insert(0, self._entries.pop(position))
                return value
        value = work_out(key)
        self.put(key, value)
        return value

    def put(self, key: K, value: V) -> None:
        """Keep `value` for `key`, first, in place of what was kept for it."""
        self._entries = [(key, value), *((known, kept) for known, kept in self._entries if known is not key)]
        del self._entries[self.kept:]

    def __len__(self) -> int:
        return len(self._entries)

