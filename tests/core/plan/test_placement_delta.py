"""The placement delta names the placements that are not the very same objects in both plans, and is
worked out once per pair of plans, whichever way round it is asked for."""

from __future__ import annotations

import dataclasses

from hybridctl.core.memo import RunMemo
from hybridctl.core.plan.delta import PlacementDelta, by_pool_and_workload, placement_delta
from hybridctl.core.plan.model import Placement, Plan, SolverReport


def _placement(workload: str, pool: str, site: str = "dc") -> Placement:
    return Placement(workload, "fixed", site, pool, 1, 1, 1.0)


def _plan(*placements: Placement) -> Plan:
    return Plan("inv", "sha256:x", tuple(placements), (), (), (), SolverReport("optimal", 0, 0, 0, 0), 0.0, 0.0)


def test_a_copy_equal_in_value_counts_as_changed_and_a_kept_object_does_not() -> None:
    a, b, c = _placement("a", "p1"), _placement("b", "p1"), _placement("c", "p2", "edge")
    before = _plan(a, b, c)
    after = _plan(a, dataclasses.replace(b), _placement("d", "p3", "cloud"))
    found = PlacementDelta.of(before.placements, after.placements)
    assert [p.workload for p in found.removed] == ["b", "c"]
    assert [p.workload for p in found.added] == ["b", "d"]
    assert found.workloads == {"b", "c", "d"}
    assert found.sites == {"dc", "edge", "cloud"}
    assert found.pools == {"p1", "p2", "p3"}
    back = found.reversed
    assert (back.removed, back.added, back.before, back.after) == (found.added, found.removed, after.placements,
                                                                    before.placements)


def test_each_pair_is_worked_out_once_either_way_round_and_kept_through_a_rebuilt_plan(monkeypatch) -> None:
    calls: list[int] = []
    real = PlacementDelta.of

    def counted(before, after):  # type: ignore[no-untyped-def]
        calls.append(1)
        return real(before, after)

    monkeypatch.setattr(PlacementDelta, "of", staticmethod(counted))
    memo = RunMemo()
    before = _plan(_placement("a", "p1"))
    after = _plan(_placement("a", "p2"))
    first = placement_delta(before, after, memo)
    assert placement_delta(before, after, memo) is first
    assert placement_delta(dataclasses.replace(after, inventory_digest="sha256:y"), before, memo).removed == \
        first.added
    assert len(calls) == 1
    # another pair of placement tuples is worked out anew, never answered from the memo
    other = _plan(_placement("a", "p2"))
    assert placement_delta(before, other, memo).workloads == {"a"}
    assert len(calls) == 2
    assert placement_delta(before, before, memo).workloads == frozenset()
    # another run (its own memo), or none, works the pair out again: the same delta
    calls.clear()
    assert placement_delta(before, after, RunMemo()).removed == placement_delta(before, after).removed == first.removed
    assert len(calls) == 2


def test_the_placements_are_grouped_once_per_run_and_alike_without_a_memo() -> None:
    a, b, c = _placement("a", "p1"), _placement("b", "p1"), _placement("a", "p2")
    placements = (a, b, c)
    memo = RunMemo()
    grouped = by_pool_and_workload(placements, memo)
    assert grouped == ({"p1": [a, b], "p2": [c]}, {"a": [a, c], "b": [b]}) == by_pool_and_workload(placements)
    assert by_pool_and_workload(placements, memo) is grouped
    assert by_pool_and_workload(placements) is not by_pool_and_workload(placements)
