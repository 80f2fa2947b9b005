"""core/nameindex.py: entries by name, in list order, worked out once per list object of a run (its RunMemo)."""

from __future__ import annotations

from dataclasses import dataclass

from hybridctl.core import nameindex
from hybridctl.core.memo import RunMemo


@dataclass(frozen=True)
class _Entry:
    name: str
    value: int = 0


def test_named_entries_come_in_the_lists_order_and_unknown_names_are_left_out() -> None:
    entries = [_Entry("c"), _Entry("a"), _Entry("b")]
    for memo in (None, RunMemo()):  # worked out afresh, or kept
        assert nameindex.named(entries, {"b", "c", "nowhere"}, memo) == [_Entry("c"), _Entry("b")]
        assert list(nameindex.by_name(entries, memo)) == ["c", "a", "b"]


def test_a_list_is_indexed_once_and_another_list_gets_its_own_index() -> None:
    memo = RunMemo()
    entries = [_Entry("a", 1), _Entry("b", 2)]
    assert nameindex.by_name(entries, memo) is nameindex.by_name(entries, memo)
    copy = [_Entry("a", 10), entries[1]]  # an inventory's changed copy: a new list
    assert nameindex.by_name(copy, memo)["a"].value == 10
    assert nameindex.by_name(entries, memo)["a"].value == 1


def test_only_the_last_few_lists_are_kept() -> None:
    memo = RunMemo()
    lists = [[_Entry(f"w-{i}")] for i in range(20)]
    for entries in lists:
        nameindex.by_name(entries, memo)
    assert len(memo[nameindex.NAMES]) <= memo[nameindex.NAMES].kept
    newest = nameindex.by_name(lists[-1], memo)
    assert nameindex.by_name(lists[-1], memo) is newest  # kept, not worked out again


def test_a_list_read_again_and_again_stays_while_others_come_and_go() -> None:
    memo = RunMemo()
    base = [_Entry("base")]
    index = nameindex.by_name(base, memo)
    for i in range(3 * memo[nameindex.NAMES].kept):  # a drill: each scenario's lists, and the base inventory's again
        nameindex.by_name([_Entry(f"scenario-{i}")], memo)
        assert nameindex.by_name(base, memo) is index


def test_without_a_runs_memo_nothing_is_kept() -> None:
    entries = [_Entry("a", 1)]
    assert nameindex.by_name(entries) == nameindex.by_name(entries)
    assert nameindex.by_name(entries) is not nameindex.by_name(entries)
    memo, other = RunMemo(), RunMemo()  # two runs: each keeps its own
    assert nameindex.by_name(entries, memo) is not nameindex.by_name(entries, other)
