"""JSON text byte for byte as the standard library writes it, written by orjson.

Plan files are `json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)` and their
content digest hashes `json.dumps(..., sort_keys=True, separators=(",", ":"), ensure_ascii=False,
allow_nan=False)`: old plan files must keep verifying, so those bytes are the format. With an
indent, the standard library falls back to its pure-Python encoder, and a 100,000-workload plan
took 4 s to write and 3.5 s to digest; orjson writes the same bytes in a tenth of a second.

orjson and json agree on everything a plan holds (strings and their escapes, key order, ints,
true/false/null, the indent) except how some floats are spelled: both write the shortest text
that reads back as the same float, but in exponent form (below 1e-4 or from 1e16 on) they differ
(`1e-05` against `0.00001`, `1.5e-07` against `1.5e-7`). Those floats, rare in a plan, are
handed to orjson as a Fragment of json's own spelling. Whatever orjson would write otherwise or
refuses (NaN, a float subclass, an int beyond 64 bits, a lone surrogate, a key that is no
string) goes to json itself, so the text, or the error, is json's. tests/core/test_jsontext.py
compares the two on real plans and on every kind of value.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from typing import Any

import orjson

# Floats json spells in fixed-point notation: orjson spells them the same (shortest round trip).
_FIXED_LOW, _FIXED_HIGH = 1e-4, 1e16
_INDENTED = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS


class _NotExact(Exception):
    """A value orjson would not write as json does: json writes the whole document."""


def _float_form(value: float) -> float | orjson.Fragment:
    if value == 0.0 or _FIXED_LOW <= abs(value) < _FIXED_HIGH:
        return value
    if not math.isfinite(value):
        raise _NotExact  # NaN and the infinities: json's spelling, or json's refusal
    return orjson.Fragment(float.__repr__(value).encode())


def _exact(value: Any, ints_as_floats: bool, respelled: list[float] | None = None) -> Any:
    """`value`, or a copy in which each float orjson spells otherwise is json's spelling (and, with
    `ints_as_floats`, each int the float it equals). Containers without such values are not copied.
    `respelled` collects the floats (not ints) given json's spelling."""
    kind = type(value)
    if kind is dict:
        return _exact_dict(value, ints_as_floats, respelled)
    if kind is list or kind is tuple:
        items = [_exact_dict(item, ints_as_floats, respelled) if type(item) is dict
                 else _exact(item, ints_as_floats, respelled) for item in value]
        return value if all(new is old for new, old in zip(items, value, strict=True)) else items
    if kind is float:
        form = _float_form(value)
        if form is not value and respelled is not None:
            respelled.append(value)
        return form
    if kind is int:
        return _float_form(float(value)) if ints_as_floats else value
    if value is None or isinstance(value, (str, int)):
        return value  # a bool, or a str or int subclass (an enum): both write its value
    raise _NotExact


def _exact_dict(value: dict[Any, Any], ints_as_floats: bool, respelled: list[float] | None = None) -> dict[Any, Any]:
    """_exact of a dict, its scalars looked at in line: a plan is some 150,000 flat records."""
    copy: dict[Any, Any] | None = None
    for key, item in value.items():
        kind = type(item)
        if kind is str or item is None or kind is bool or (kind is int and not ints_as_floats):
            continue
        if kind is float:
            if _FIXED_LOW <= item < _FIXED_HIGH or -_FIXED_HIGH < item <= -_FIXED_LOW or item == 0.0:
                continue
            new: Any = _float_form(item)
            if respelled is not None:
                respelled.append(item)
        elif kind is int:
            new = float(item)
            if not (_FIXED_LOW <= new < _FIXED_HIGH or -_FIXED_HIGH < new <= -_FIXED_LOW or new == 0.0):
                new = _float_form(new)
        else:
            new = _exact(item, ints_as_floats, respelled)
            if new is item:
                continue
        if copy is None:
            copy = dict(value)
        copy[key] = new
    return value if copy is None else copy


def dumps_indented(document: dict[str, Any]) -> str:
    """`json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)`, the same text."""
    try:
        return _orjson_indented(document).decode()
    except (_NotExact, orjson.JSONEncodeError):
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False)


def dumps_indented_utf8(document: dict[str, Any]) -> bytes:
    """dumps_indented's text in UTF-8, without a round trip through str (a large plan file: 70 MB)."""
    try:
        return _orjson_indented(document)
    except (_NotExact, orjson.JSONEncodeError):
        return json.dumps(document, indent=2, sort_keys=True, ensure_ascii=False).encode()


def _orjson_indented(document: dict[str, Any]) -> bytes:
    return orjson.dumps(_exact(document, False), option=_INDENTED)


def dumps_canonical_utf8(document: Any) -> bytes:
    """The UTF-8 of `json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`: what
    step, runbook and incident digests hash (a fleet's queue stacks and placements are megabytes of it)."""
    try:
        return orjson.dumps(_exact(document, False), option=orjson.OPT_SORT_KEYS)
    except (_NotExact, orjson.JSONEncodeError):
        return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def dumps_canonical_numbers_as_floats(document: dict[str, Any]) -> bytes:
    """The UTF-8 of `json.dumps(document with every int a float, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False, allow_nan=False)`: 2117 and 2117.0 are one amount."""
    try:
        return orjson.dumps(_exact(document, True), option=orjson.OPT_SORT_KEYS)
    except (_NotExact, orjson.JSONEncodeError):
        pass
    return json.dumps(_ints_as_floats(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False).encode()


def dumps_indented_with_digest(document: dict[str, Any], key: str, digest: Callable[[bytes], str]) -> bytes:
    """dumps_indented_utf8 of `document` with `key` set to `digest` of dumps_canonical_numbers_as_floats(document):
    a plan file, stamped with its content digest. The document is walked once for the floats orjson spells
    otherwise, not once per text: when the walk finds none (ints aside), orjson's indented text is json's."""
    respelled: list[float] = []
    try:
        body = orjson.dumps(_exact(document, True, respelled), option=orjson.OPT_SORT_KEYS)
    except (_NotExact, orjson.JSONEncodeError):
        return dumps_indented_utf8({**document, key: digest(dumps_canonical_numbers_as_floats(document))})
    stamped = {**document, key: digest(body)}
    if not respelled:
        try:
            return orjson.dumps(stamped, option=_INDENTED)
        except orjson.JSONEncodeError:
            pass
    return dumps_indented_utf8(stamped)


# A number orjson may spell otherwise than json: in exponent form, or below 1e-4 (json's exponent form,
# orjson's 0.0000…). In compact JSON a number follows ":", "," or "["; text in a string that looks
# alike matches too, and then json writes the document.
_NOT_JSONS_FLOAT = re.compile(rb"[:,\[]-?(?:[0-9][0-9.]*[eE]|0\.0000)")


def dumps_canonical_ascii(document: dict[str, Any]) -> bytes:
    """`json.dumps(document, sort_keys=True, separators=(",", ":"))` in bytes: ASCII, anything else escaped.

    An inventory (its digest) is some 100,000 records of strings, ints and plain floats: walking it
    for the rare float to respell (as the other writers here do) costs more than json itself. So
    orjson writes it as it is, and its text is taken only where it cannot differ from json's: all
    ASCII without DEL (json escapes both), and no float json spells in exponent form. Otherwise json writes it.
    The document must hold no NaN or infinity (orjson writes null): an inventory's floats are finite
    by validation.
    """
    try:
        text = orjson.dumps(document, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:
        pass
    else:
        if text.isascii() and b"\x7f" not in text and _NOT_JSONS_FLOAT.search(text) is None:
            return text
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def _ints_as_floats(value: Any) -> Any:
    """Exact types, not isinstance: a plan document holds only JSON's own (bool is no int here)."""
    kind = type(value)
    if kind is int:
        return float(value)
    if kind is dict:
        return {k: _ints_as_floats(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_ints_as_floats(v) for v in value]
    return value
