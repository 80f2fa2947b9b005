"""A large inventory file parsed in two parts (core/inventory/yamlsplit.py, drivers/yamlbeside.py) gives exactly
load_plain's value for the whole text, or declines, and then the whole text is parsed: never a
different value, never a document accepted that the whole parse refuses."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml
from hybridctl.core.inventory import yamlsource, yamlsplit
from hybridctl.core.inventory.yamlsource import load_plain
from hybridctl.core.inventory.yamlsplit import join_plain, parse_head, parse_tail, split_plain
from hybridctl.drivers.yamlbeside import load_plain_beside
from inventory_gen import generate, to_yaml


@pytest.fixture(autouse=True)
def split_small_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yamlsplit, "SPLIT_MIN_CHARS", 0)


def in_parts(text: str) -> Any:
    """join_plain's value, or None when it declines; never different from load_plain's."""
    split = split_plain(text)
    if split is None:
        return None
    joined = join_plain(split, parse_head(split), parse_tail(split))
    assert joined is None or joined == load_plain(text)
    return joined


def items(lines: list[str]) -> str:
    return "version: 1\nname: x\nworkloads:\n" + "".join(lines)


FILLER = [f"- name: w{i}\n  gpu: {{types: [L4], count: 1}}\n" for i in range(8)]


class TestSameValues:
    @pytest.mark.parametrize("seed", [1, 2, 3])
    def test_generated_inventories_with_anchors_across_the_cut(self, seed: int) -> None:
        text = to_yaml(generate(300, 40, seed))  # yaml.dump anchors shared objects; aliases cross the cut
        assert "&" in text and "*" in text
        assert in_parts(text) == load_plain(text)
        assert load_plain_beside(text) == load_plain(text)  # in a forked child

    def test_an_alias_keeps_referring_to_the_object_of_the_head(self) -> None:
        text = items(["- &g {types: [L4], count: 1}\n", *FILLER, "- *g\n", "- {gpu: *g}\n"])
        value = in_parts(text)
        assert value is not None
        workloads = value["workloads"]
        assert workloads[-2] is workloads[0] and workloads[-1]["gpu"] is workloads[0]

    def test_an_anchor_defined_again_in_the_tail(self) -> None:
        text = items(["- &g {count: 1}\n", *FILLER, "- *g\n", "- &g {count: 2}\n", "- *g\n"])
        value = in_parts(text)
        assert value is not None and [w.get("count") for w in value["workloads"][-3:]] == [1, 2, 2]


# Texts the parts decline, or that are not plain YAML at all: the whole text decides, as it always has.
DECLINED = {
    "key after the sequence": items(FILLER) + "policies: {}\n",
    "quoted scalar": items(FILLER) + '- name: "w"\n',
    "block scalar": items(FILLER) + "- name: |\n    w\n",
    "anchored sequence": "version: 1\nworkloads: &all\n" + "".join(FILLER) + "- *all\n",
    "anchored document": "--- &all\n" + items([*FILLER, "- *all\n"]),
    "alias as a key": items(["- &k name\n", *FILLER, "- {*k : 1}\n"]),
    "unknown alias": items([*FILLER, "- *nowhere\n"]),
    "tainted anchor aliased": items(["- &g {count: 1}\n", *FILLER, "- &h [*g]\n", "- *h\n"]),
    "document marker": items(FILLER[:4]) + "---\n" + "".join(FILLER[4:]),
    "duplicate key in the tail": items([*FILLER, "- {a: 1, a: 2}\n"]),
    "syntax error in the tail": items([*FILLER, "- {a: 1\n"]),
    "syntax error in the head": items(["- {a: [1\n", *FILLER]),
    "tag": items([*FILLER, "- !t x\n"]),
    "tab": items([*FILLER, "- {a:\t1}\n"]),
    "too deep in the tail": items([*FILLER, "- " + "[" * yamlsource.MAX_DEPTH + "]" * yamlsource.MAX_DEPTH + "\n"]),
}


@pytest.mark.parametrize("name", list(DECLINED))
def test_the_whole_text_decides_when_the_parts_cannot(name: str) -> None:
    text = DECLINED[name]
    assert in_parts(text) is None
    assert load_plain_beside(text) == load_plain(text)


def test_the_depth_limit_counts_the_levels_around_the_tail() -> None:
    for depth in (yamlsource.MAX_DEPTH - 2, yamlsource.MAX_DEPTH - 1):  # the whole parse's limit is at -1
        text = items([*FILLER, "- " + "[" * depth + "]" * depth + "\n"])
        assert (load_plain(text) is None) == (depth == yamlsource.MAX_DEPTH - 1)
        assert in_parts(text) == load_plain(text)


def test_the_alias_bomb_guard_counts_the_head_s_anchors_in_the_tail(monkeypatch: pytest.MonkeyPatch) -> None:
    big = "- &big [" + ", ".join(["1"] * 50) + "]\n"
    text = items([big, *FILLER, *["- *big\n"] * 6])
    whole = yamlsource.parse_plain(text)
    assert whole is not None
    for limit in (whole.expanded, whole.expanded - 1):  # exactly at the limit, and one above it
        monkeypatch.setattr(yamlsource, "MAX_EXPANDED_NODES", limit)
        assert in_parts(text) == load_plain(text)
        assert (load_plain(text) is None) == (limit < whole.expanded)


def test_an_anchor_of_the_tail_that_holds_head_aliases_cannot_hide_an_alias_bomb(
        monkeypatch: pytest.MonkeyPatch) -> None:
    big = "- &big [" + ", ".join(["1"] * 50) + "]\n"
    text = items([big, *FILLER, "- &h [*big, *big, *big]\n", *["- *h\n"] * 6])
    whole = yamlsource.parse_plain(text)
    assert whole is not None
    monkeypatch.setattr(yamlsource, "MAX_EXPANDED_NODES", whole.expanded - 1)
    assert load_plain(text) is None
    assert in_parts(text) is None and load_plain_beside(text) is None


def test_random_documents_with_shared_objects() -> None:
    rng = random.Random(15)
    for _ in range(40):
        shared: list[Any] = [{"types": ["L4"], "count": rng.randint(1, 4)}, ["a", "b"], {"x": {"y": [1, 2]}}]
        workloads = []
        for i in range(rng.randint(4, 30)):
            workload: dict[str, Any] = {"name": f"w{i}"}
            for field in rng.sample(["gpu", "tags", "extra", "n"], k=rng.randint(1, 4)):
                workload[field] = rng.choice(shared) if rng.random() < 0.6 else rng.randint(0, 9)
            workloads.append(workload)
        text = yaml.dump({"version": 1, "shared": shared[0], "workloads": workloads}, sort_keys=False,
                         default_flow_style=rng.choice([None, False]))
        assert load_plain_beside(text) == load_plain(text)
        assert in_parts(text) in (None, load_plain(text))
