"""Plan files and their content digest, written by orjson, are byte for byte what json wrote.

The reference is the standard library with the options plan files have always used; a plan file
written before orjson (tests/data/plan-files/digest-before-orjson.json: written by commit
6384326, with floats in exponent form, unicode and a 62-bit serial) must still verify.
"""

from __future__ import annotations

import enum
import hashlib
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.inventory.digest import inventory_digest
from hybridctl.core.jsontext import (
    dumps_canonical_ascii,
    dumps_canonical_numbers_as_floats,
    dumps_canonical_utf8,
    dumps_indented,
    dumps_indented_utf8,
    dumps_indented_with_digest,
)
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.serialize import (
    content_digest,
    plan_to_dict,
    plan_to_json,
    plan_to_json_utf8,
    verify_content_digest,
)
from hybridctl.drivers.inventory_files import load_inventory

ROOT = Path(__file__).resolve().parents[2]
OLD_PLAN_FILE = ROOT / "tests/data/plan-files/digest-before-orjson.json"


def reference_file_text(document: dict[str, Any]) -> str:
    return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)


def _ints_as_floats(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return float(value)
    if kind is dict:
        return {k: _ints_as_floats(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_ints_as_floats(v) for v in value]
    return value


def reference_canonical(document: dict[str, Any]) -> bytes:
    return json.dumps(_ints_as_floats(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


# Every decade a float can have (json and orjson part ways in exponent form), signs, zero and the extremes.
FLOATS = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, -1.7976931348623157e308,
          *(sign * mantissa * 10.0**exponent for exponent in range(-12, 24) for mantissa in (1.0, 1.5, 9.87654321)
            for sign in (1, -1)),
          0.1 + 0.2, 1 / 3, 9999999999999998.0, 1e16, 1e-4, 0.00009999999999999999, 123456.789, 2117.0]
INTS = [0, 1, -1, 2117, 2**31, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1, 2**64, -(2**63) - 1, 10**30, -(10**40)]
TEXT = ("".join(chr(c) for c in range(0x0, 0x800) if not 0xD800 <= c < 0xE000)
        + "\u2028\u2029\ufeff\uffff 東京 😀 \U0010ffff \"q\" \\ /")


class Tier(enum.StrEnum):
    FIXED = "fixed"


class Count(enum.IntEnum):
    THREE = 3


def documents() -> list[dict[str, Any]]:
    return [
        {"floats": FLOATS, "ints": INTS, "text": TEXT, TEXT: 1, "nested": [{"a": [1, 2.5e-7, {"b": (1e-5, 3)}]}, [], {}],
         "flags": [True, False, None], "enums": [Tier.FIXED, Count.THREE], "tuple": (1, 2.0)},
        {"only_safe": [{"x": 1.5, "y": 2, "z": "w"}] * 3, "e": []},
        {"": 1, "é": 2, "e": 3, "😀": 4, "\uffff": 5, "Z": 6, "a\x00": 7},
    ]


@pytest.mark.parametrize("document", documents(), ids=["every-kind", "plain", "key-order"])
def test_the_file_text_and_the_canonical_bytes_are_json_s(document: dict[str, Any]) -> None:
    assert dumps_indented(document) == reference_file_text(document)
    assert dumps_indented_utf8(document) == reference_file_text(document).encode()
    assert dumps_canonical_numbers_as_floats(document) == reference_canonical(document)
    assert dumps_canonical_ascii(document) == reference_ascii(document)
    assert dumps_canonical_utf8(document) == reference_digest_text(document)
    assert dumps_canonical_utf8([document, [document]]) == reference_digest_text([document, [document]])


def reference_ascii(document: dict[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def reference_digest_text(document: Any) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


# each is ASCII but for one thing json writes otherwise than orjson (DEL: json escapes it in ASCII mode)
@pytest.mark.parametrize("document", [{"x": "a\x7fb"}, {"x": 1e-05}, {"x": [1, {"y": -2.5e-07}]}, {"x": 1e16},
                                      {"x": "é"}, {"x": "1e5 is text"}, {"floats": FLOATS, "ints": INTS}],
                         ids=["del", "small", "nested-small", "large", "non-ascii", "exponent-like-text", "numbers"])
def test_the_inventory_digest_bytes_are_json_s_ascii_text(document: dict[str, Any]) -> None:
    assert dumps_canonical_ascii(document) == reference_ascii(document)
    assert dumps_canonical_utf8(document) == reference_digest_text(document)  # what step digests hash


@pytest.mark.parametrize("example", sorted(p.name for p in (ROOT / "inventories").iterdir()
                                                    if p.name != "scenarios"))
def test_an_inventory_digest_is_what_json_gave(example: str) -> None:
    inventory = load_inventory(ROOT / "inventories" / example).inventory
    odd = inventory.model_copy(update={"name": f"{inventory.name}-\x7f", "sites": [
        s.model_copy(update={"egress_usd_per_gb": 1.5e-05}) for s in inventory.sites]})
    for the_inventory in (inventory, odd):
        expected = reference_ascii(the_inventory.model_dump(mode="json"))
        assert inventory_digest(the_inventory) == "sha256:" + hashlib.sha256(expected).hexdigest()


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_and_infinity_come_out_as_json_has_them(value: float) -> None:
    document = {"x": [1.0, value]}
    assert dumps_indented(document) == reference_file_text(document)  # NaN, Infinity: json's own extension
    with pytest.raises(ValueError, match="Out of range float values"):
        dumps_canonical_numbers_as_floats(document)


def _outcome(write: Any, document: dict[str, Any]) -> object:
    try:
        return write(document)
    except (TypeError, ValueError, OverflowError) as exc:  # UnicodeEncodeError is a ValueError
        return type(exc)


class Opaque:
    pass


@pytest.mark.parametrize("document", [{"x": Opaque()}, {"x": {1.5: 1, 2: 2, None: 3}}, {"x": "\ud800"},
                                      {"x": {"b": 1, 2: 2}}, {"x": 10**400}],
                         ids=["object", "number-keys", "lone-surrogate", "mixed-keys", "int-beyond-floats"])
def test_what_orjson_will_not_write_is_json_s_text_or_json_s_error(document: dict[str, Any]) -> None:
    assert _outcome(dumps_indented, document) == _outcome(reference_file_text, document)
    assert _outcome(dumps_indented_utf8, document) == _outcome(lambda d: reference_file_text(d).encode(), document)
    assert _outcome(dumps_canonical_numbers_as_floats, document) == _outcome(reference_canonical, document)
    assert _outcome(dumps_canonical_ascii, document) == _outcome(reference_ascii, document)
    assert _outcome(dumps_canonical_utf8, document) == _outcome(reference_digest_text, document)


@pytest.fixture(scope="module")
def real_plan() -> Any:
    inventory = load_inventory(ROOT / "inventories/cloud-burst.yaml").inventory
    return plan(inventory)


def test_a_real_plan_file_is_what_json_wrote(real_plan: Any) -> None:
    first = real_plan.placements[0]
    odd = replace(real_plan, placements=(replace(first, usd_per_month=1.5e-07, reason="préféré 😀 \u2028 \"q\""),
                                         *real_plan.placements[1:]),
                  solver=replace(real_plan.solver, gap=2.5e-05, objective=1.2345678901234568e16), base_serial=2**62)
    for the_plan in (real_plan, odd):
        document = plan_to_dict(the_plan, plan_file=True)
        body = {k: v for k, v in document.items() if k != "content_digest"}
        assert document["content_digest"] == "sha256:" + hashlib.sha256(reference_canonical(body)).hexdigest()
        assert plan_to_json(the_plan, plan_file=True) == reference_file_text(document) + "\n"
        assert plan_to_json_utf8(the_plan, plan_file=True) == (reference_file_text(document) + "\n").encode()
        assert plan_to_json(the_plan) == reference_file_text(plan_to_dict(the_plan)) + "\n"


def test_a_plan_file_written_before_orjson_still_verifies() -> None:
    text = OLD_PLAN_FILE.read_text()
    raw = json.loads(text)
    verify_content_digest(raw, str(OLD_PLAN_FILE))  # raises when the canonical form moved
    assert content_digest(raw) == raw["content_digest"]
    assert dumps_indented(raw) + "\n" == text  # read back and written again: the same bytes


def _stamped_reference(document: dict[str, Any]) -> bytes:
    """A plan file's text, stamped with the digest of its canonical text, as json writes both."""
    stamp = "sha256:" + hashlib.sha256(reference_canonical(document)).hexdigest()
    return reference_file_text({**document, "content_digest": stamp}).encode()


def _sha256(text: bytes) -> str:
    return "sha256:" + hashlib.sha256(text).hexdigest()


@pytest.mark.parametrize("document", [*documents(), {"x": 10**17, "y": [2**62, {"z": -(10**16)}]}, {"x": [1e-05]},
                                      {"x": {"y": 1.5e300}}, {"x": [1.0, math.nan]}, {"x": Opaque()}, {"x": "\ud800"},
                                      {"x": {1.5: 1}}, {"x": 10**400}],
                         ids=["every-kind", "plain", "key-order", "ints-beyond-fixed", "small-in-a-list", "large",
                              "nan", "object", "lone-surrogate", "number-keys", "int-beyond-floats"])
def test_a_file_stamped_with_its_content_digest_is_what_json_writes_in_two_steps(document: dict[str, Any]) -> None:
    """One walk over the document serves both texts: it must give each text (or the error) json gives."""
    assert _outcome(lambda d: dumps_indented_with_digest(d, "content_digest", _sha256), document) \
        == _outcome(_stamped_reference, document)
