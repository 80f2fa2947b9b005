"""RunMemo: the values one run works out from its fleet's lists and plans again and again, kept for that run.

A run (a `failover` or `runbook rollback` command, a drill) makes one and passes it down to the
functions that read it; none is made at import, so nothing outlives the run or leaks from one
run, or one test, into another. A function called without one works its value out afresh: the
same value, only slower.

Each module that keeps something declares its own Slot (what it keeps, and how many entries,
with why beside it): nameindex.NAMES, plan/delta.DELTAS and GROUPED, failover/impact.POOL_SITES
and TALLIES, failover/serialize.RUNBOOK_TEXTS, deploy/stackconfig.DIGESTS. A RunMemo makes a
slot's value the first time the run asks for it. This module imports none of them, so it sits
below all of them.

The memos in the slots tell their inputs apart by identity and hold them (identitymemo.py), so an
id never passes to another object meanwhile; what they keep must be immutable in practice
(inventories and plans are never changed in place). A drill makes its RunMemo before its
scenarios fork into worker processes (drivers/parallel.py): what the base inventory and plan
filled in is every worker's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

V = TypeVar("V")


@dataclass(frozen=True, eq=False)  # told apart by identity: each module's own
class Slot(Generic[V]):
    """What a module keeps in a run's memo: `make` gives the empty value."""

    name: str
    make: Callable[[], V]


class RunMemo:
    """One run's memos, one value a slot."""

    def __init__(self) -> None:
        self._values: dict[Slot[object], object] = {}

    def __getitem__(self, slot: Slot[V]) -> V:
        if slot not in self._values:
            self._values[cast(Slot[object], slot)] = slot.make()
        return cast(V, self._values[cast(Slot[object], slot)])
