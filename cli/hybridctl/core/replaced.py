"""Which entries of a copied list are not the very objects of the original (a disrupted inventory keeps
most of its workloads, sites, pools and datasets as they were, a replanned plan most of its
placements): found without a Python step per entry."""

from __future__ import annotations

import operator
from collections.abc import Iterator, Sequence
from itertools import compress
from typing import Protocol, TypeVar


class Named(Protocol):
    @property
    def name(self) -> str: ...


N = TypeVar("N", bound=Named)
T = TypeVar("T")


def replaced(was: Sequence[N], now: Sequence[N]) -> list[N] | None:
    """The entries of `now` that are not the very objects at their place in `was`; None unless both are
    as long and each replaced entry keeps its name (the same entries, in the same order)."""
    if len(was) != len(now):
        return None
    differ = list(map(operator.is_not, was, now))
    changed = list(compress(now, differ))
    if any(a.name != b.name for a, b in zip(compress(was, differ), changed, strict=True)):
        return None
    return changed


def not_in(these: Sequence[T], those: Sequence[T]) -> Iterator[T]:
    """The entries of `these` that are not (the very objects) in `those`, in their order."""
    present = set(map(id, those))
    return compress(these, map(operator.not_, map(present.__contains__, map(id, these))))
