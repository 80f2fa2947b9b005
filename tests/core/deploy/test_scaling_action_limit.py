"""AWS's 125 scheduled actions per Auto Scaling group as a boundary pair (issue 45 item 8): a week needing
exactly 125 resizes keeps every one of them, 126 are coarsened to at most 125 (the stack's side:
tests/stacks/test_scaling_schedule_stack.py). A planted `>=` for `>` (or 124, 126 for the limit) fails here."""

from __future__ import annotations

import pytest
from hybridctl.core.deploy.scaling_schedule import MAX_ACTIONS, weekly_actions
from hybridctl.core.deploy.stackvalues import ScalingAction


def resizing_week(stretches: int) -> tuple[tuple[int, ...], tuple[tuple[int, int], ...]]:
    """`stretches` of 30 minutes, each needing a machine count other than its neighbours' (0, 1, 2, 0, …;
    a count not a multiple of 3, so the last differs from the first too): that many resizes a week."""
    return tuple(range(0, stretches * 30, 30)), tuple((k % 3, k % 3) for k in range(stretches))


def test_exactly_the_limit_keeps_every_resize() -> None:
    starts, needs = resizing_week(MAX_ACTIONS)
    assert MAX_ACTIONS == 125
    actions = weekly_actions(starts, needs, 0, 8)
    assert actions == tuple(ScalingAction(s, low, high, 8) for s, (low, high) in zip(starts, needs, strict=True))


@pytest.mark.parametrize("stretches", [MAX_ACTIONS + 1, MAX_ACTIONS + 2])
def test_one_past_the_limit_is_coarsened_to_it(stretches: int) -> None:
    starts, needs = resizing_week(stretches)
    actions = weekly_actions(starts, needs, 0, 8)
    assert MAX_ACTIONS - 2 <= len(actions) <= MAX_ACTIONS
    for start, (_, desired) in zip(starts, needs, strict=True):  # never fewer machines than a stretch needs
        held = next(a.desired_size for a in reversed(actions) if a.minute <= start) if start >= actions[0].minute \
            else actions[-1].desired_size
        assert held >= desired, start
