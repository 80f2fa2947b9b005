"""core/nameindex.py: entries by name, in list order, worked out once per list object."""

from __future__ import annotations

from dataclasses import dataclass

from hybridctl.core import nameindex


@dataclass(frozen=True)
class _Entry:
    name: str
    value: int = 0


def test_named_entries_come_in_the_lists_order_and_unknown_names_are_left_out() -> None:
    entries = [_Entry("c"), _Entry("a"), _Entry("b")]
    assert nameindex.named(entries, {"b", "c", "nowhere"}) == [_Entry("c"), _Entry("b")]
    assert list(nameindex.by_name(entries)) == ["c", "a", "b"]


def test_a_list_is_indexed_once_and_another_list_gets_its_own_index() -> None:
    entries = [_Entry("a", 1), _Entry("b", 2)]
    assert nameindex.by_name(entries) is nameindex.by_name(entries)
    copy = [_Entry("a", 10), entries[1]]  # an inventory's changed copy: a new list
    assert nameindex.by_name(copy)["a"].value == 10
    assert nameindex.by_name(entries)["a"].value == 1


def test_only_the_last_few_lists_are_kept() -> None:
    lists = [[_Entry(f"w-{i}")] for i in range(20)]
    for entries in lists:
        nameindex.by_name(entries)
    assert len(nameindex._memo) <= nameindex._memo.kept
    assert nameindex._memo.newest() is lists[-1]


def test_a_list_read_again_and_again_stays_while_others_come_and_go() -> None:
    base = [_Entry("base")]
    index = nameindex.by_name(base)
    for i in range(3 * nameindex._memo.kept):  # a drill: each scenario's lists, and the base inventory's again
        nameindex.by_name([_Entry(f"scenario-{i}")])
        assert nameindex.by_name(base) is index
