"""Amounts in whole cents that add up: a largest-remainder allocation.

Rounding each line of a breakdown to the cent on its own leaves the lines a few cents off their total;
every view of a plan's cost (showback, per-workload and per-team changes) must add up to the cent, so
the lines are rounded together: each is floored to the cent, and the cents still missing from the
total go, one each, to the lines with the largest remainders (ties: in the lines' order).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def to_cents(usd: float) -> int:
    """An amount, rounded to the cent, in cents (half away from zero, as round(x, 2) is read)."""
    return int(math.copysign(math.floor(abs(usd) * 100 + 0.5), usd))


def allocate_cents(amounts: Mapping[K, float], total_cents: int) -> dict[K, int]:
    """`amounts` (dollars, unrounded) in whole cents that add up to `total_cents` exactly.

    `total_cents` is the total as the plan states it (rounded once from its own sum), which differs from
    the amounts' sum by at most float noise and the rounding: the difference, in cents, is spread over
    the lines by their remainders.
    """
    if not amounts:
        return {}
    exact = {k: v * 100 for k, v in amounts.items()}
    floors = {k: math.floor(v) for k, v in exact.items()}
    missing = total_cents - sum(floors.values())
    order = sorted(exact, key=lambda k: exact[k] - floors[k], reverse=True)  # stable: ties keep their order
    n = len(order)
    step, rest = divmod(missing, n)  # more missing cents than lines only when the amounts are far off
    for i, k in enumerate(order):
        floors[k] += step + (1 if i < rest else 0)
    return floors
