"""Loading a large inventory fast without losing where things were written.

Well-formed YAML is read without positions (load_plain); the locator reads them only when a
diagnostic asks, and anything unusual goes through the located parse, which reports it at its
line. Eligibility is decided with vector rules that must agree with the rule-by-rule ones.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import yaml
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.core.inventory.documents import Source, merge_documents
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.inventory.yamlsource import MAX_DEPTH, load_plain, load_yaml
from hybridctl.core.placement.eligibility import EligibilityIndex, demands
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.errors import Location
from inventory_gen import generate

ROOT = Path(__file__).resolve().parents[3]

MIXED = """\
version: 1
name: mixed
shared: &shape {types: [L4, "A10G"], count: 1}
values: [NO, yes, 0o17, 0x1f, .inf, -.INF, ~, null, '12', 1e3, 7, -3, true, False, "quoted"]
items:
- gpu: *shape
  nested: {deep: [1, [2, [3]]], empty: [], none: {}}
- gpu: *shape
"""


def test_the_fast_path_gives_the_same_values_as_the_located_parse() -> None:
    assert load_plain(MIXED) == load_yaml(MIXED, "mixed.yaml")[0]


@pytest.mark.parametrize("text", [
    "a: 1\na: 2\n",  # duplicate key
    "base: &b {x: 1}\nother:\n  <<: *b\n  y: 2\n",  # merge key
    "a: !!str 1\n",  # explicit tag
    "a: 1\n---\nb: 2\n",  # two documents
    "a: [1, 2\n",  # syntax error
    "a: *nowhere\n",  # unknown alias
    "? [1, 2]\n: x\n",  # non-scalar key
    "a: " + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "\n",  # too deep
    "a: &a [1,1,1,1,1,1,1,1,1,1]\n" + "".join(
        f"{c}: &{c} [{', '.join(['*' + p] * 10)}]\n" for p, c in zip("abcdefg", "bcdefgh", strict=True)),  # bomb
    "", "   \n", "x: \x00",
])
def test_anything_unusual_leaves_the_fast_path_for_the_located_parse(text: str) -> None:
    assert load_plain(text) is None


def test_a_fast_loaded_inventory_still_locates_every_value_at_its_line() -> None:
    text = "version: 1\nname: x\nworkloads:\n- name: a\n  gpu: {types: [L4], count: 1}\n" \
           "- name: b\n  gpu:\n    types: [L4]\n    count: 2\n"
    locator = merge_documents([Source("inv.yaml", text)])
    assert locator.unread  # positions not read yet
    assert locator.location(("workloads", 1, "gpu", "count")) == Location("inv.yaml", 9, 12)
    assert locator.location(("workloads", 0, "name"), key=True) == Location("inv.yaml", 4, 3)
    assert not locator.unread


def test_a_problem_the_fast_path_refuses_is_reported_at_its_line(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("version: 1\nname: x\nname: y\n", encoding="utf-8")
    with pytest.raises(InvalidInventoryError) as caught:
        load_inventory(tmp_path / "a.yaml")
    assert "key 'name' appears twice in one mapping (first at line 2)" in caught.value.message
    assert caught.value.location == Location(str(tmp_path / "a.yaml"), 3, 1)


def _inventories(tmp_path: Path) -> list[Inventory]:
    found = [load_inventory(p).inventory for p in sorted((ROOT / "inventories").glob("*.yaml"))]
    found.append(load_inventory(ROOT / "inventories" / "enterprise").inventory)
    for seed in (1, 2, 3):
        path = tmp_path / f"gen{seed}.yaml"
        path.write_text(yaml.safe_dump(generate(200, 40, seed), sort_keys=False), encoding="utf-8")
        found.append(load_inventory(path).inventory)
    return found


def test_the_vector_eligibility_rules_agree_with_the_rule_by_rule_ones(tmp_path: Path) -> None:
    checked = emptied = 0
    for inventory in _inventories(tmp_path):
        index = EligibilityIndex(inventory)
        for demand in demands(inventory):
            w = demand.workload
            gpu = w.gpu.model_copy(update={"count": 8, "multi_node": True})
            variants = [w, w.model_copy(update={"sites": [inventory.sites[0].name]}),
                        w.model_copy(update={"gpu": gpu}),
                        w.model_copy(update={"gpu": w.gpu.model_copy(update={"count": 3, "multi_node": False})})]
            if w.latency is not None:
                variants.append(w.model_copy(update={"latency": w.latency.model_copy(update={"p95_ms": 5})}))
                variants.append(w.model_copy(update={"latency": w.latency.model_copy(update={"region": "nowhere"})}))
            for variant in variants:
                changed = dataclasses.replace(demand, workload=variant, gpu_count=variant.gpu.count)
                fresh = EligibilityIndex(inventory, index.pools)
                assert fresh.explain(changed) == fresh._compute(changed), (inventory.name, demand.key)
                checked += 1
                emptied += not fresh.explain(changed)[0]
    assert checked > 1000 and emptied > 50  # both outcomes are exercised
