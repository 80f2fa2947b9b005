"""core/identitymemo.py: values kept by the identity of their input, the most recently read first."""

from __future__ import annotations

from hybridctl.core.identitymemo import IdentityMemo


def test_a_value_is_worked_out_once_per_object_and_equal_objects_get_their_own() -> None:
    calls: list[list[int]] = []
    memo: IdentityMemo[list[int], int] = IdentityMemo(4)

    def total(values: list[int]) -> int:
        calls.append(values)
        return sum(values)

    one, other = [1, 2], [1, 2]
    assert memo.get(one, total) == 3 and memo.get(one, total) == 3
    assert memo.get(other, total) == 3
    assert [id(c) for c in calls] == [id(one), id(other)]


def test_only_the_last_few_are_kept_and_one_read_again_stays() -> None:
    memo: IdentityMemo[list[int], int] = IdentityMemo(3)
    base = [0]
    memo.get(base, len)
    for i in range(10):  # a drill: each scenario's input, and the base's again
        memo.get([i], len)
        memo.get(base, lambda _: -1)  # never worked out again
        assert memo.get(base, lambda _: -1) == 1
    assert len(memo) == 3 and memo.get(base, lambda _: -1) == 1


def test_a_value_put_replaces_the_one_kept_and_goes_first() -> None:
    memo: IdentityMemo[list[int], int] = IdentityMemo(2)
    one, two = [1], [2]
    memo.get(one, len)
    memo.get(two, len)
    memo.put(one, 10)
    memo.get([3], len)  # one more: the last entry goes
    assert len(memo) == 2 and memo.get(one, lambda _: -1) == 10  # replaced, and first: kept
    assert memo.get(two, lambda _: -1) == -1  # the oldest: left out
