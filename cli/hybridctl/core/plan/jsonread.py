"""A JSON document read from untrusted text (plan files, runbooks, `runbooks/active.json`), strictly.

What JSON allows but no hybridctl file holds is refused, each with one message naming the file and,
where it is known, the field: a key twice in one object, NaN and Infinity, numbers beyond a float,
lone surrogates, nesting deeper than a reader's stack. Fast where it can be (orjson), strict where it
must be (json, with hooks), and both agree on what they accept.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

import orjson

from hybridctl.errors import HybridctlError

JsonDict = dict[str, Any]


def json_object(text: str, source: str, error: type[HybridctlError], what: str, hint: str) -> JsonDict:
    """A JSON document that must be an object, with the line and column of a syntax error.

    What JSON allows but no hybridctl file holds is refused too, each with one message naming the file
    (and the field, where it is known): a key twice in one object (the last would silently win, and the
    content digest is of what was read), NaN and Infinity, numbers beyond a float (1e400 reads as
    infinity) or of more than 4,300 digits, lone surrogates (text no file can be written back with), and
    nesting deeper than a reader's stack."""
    raw = _fast(text)
    if raw is None:
        raw = _strict(text, source, error, what, hint)
    if not isinstance(raw, dict):
        raise error(f"{source}: not a hybridctl {what}", hint=hint)
    # rare (hybridctl writes no escapes but control characters', and of those only newlines and tabs): a walk
    if _SURROGATE_ESCAPE.search(text) or _CONTROL.search(text):
        where = unrepresentable(raw)
        if where is not None:
            raise error(f"{source}: {where}", hint=hint)
    return raw


def _fast(text: str) -> Any:
    """The document as orjson reads it (a fleet's plan file: a third of json's time), when that is what the
    strict reading gives too: orjson refuses NaN, numbers beyond a float, lone surrogates and deep nesting
    as the strict reading does (which then says where), but keeps the last of a key given twice — so the
    keys are counted, and a document whose text holds more keys than it read is read strictly. An int
    beyond 64 bits reads as the float nearest it (as the state's reader has it; no field of a plan file or
    runbook takes one, and the content digest reads ints as floats). None: read it strictly."""
    if '\\":' in text or _SPACED_KEY.search(text):  # then `":` would not count the keys: read it strictly
        return None
    try:
        document = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    # each key ends with `":` (no string value can hold `":`: its quotes are escaped, and `\":` was ruled out),
    # in the text read and in the document's own compact text
    return document if text.count('":') == orjson.dumps(document).count(b'":') else None


_SPACED_KEY = re.compile(r'"\s+:')


def _strict(text: str, source: str, error: type[HybridctlError], what: str, hint: str) -> Any:
    """The document as json reads it, refusing what no hybridctl file holds, with where it is."""
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_float, parse_int=_int,
                          object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as exc:
        raise error(f"{source}:{exc.lineno}:{exc.colno}: not valid JSON: {exc.msg}", hint=hint) from None
    except _DuplicateKey as exc:
        raise error(f"{source}: key {exc.args[0]!r} appears twice in one object", hint=hint) from None
    except _OutOfRange:  # read again, marking the number (or NaN or Infinity), to say where it is
        marked = json.loads(text, parse_constant=_Constant, parse_float=_Marked, parse_int=_marked_int)
        raise error(f"{source}: {unrepresentable(marked)}", hint=hint) from None
    except RecursionError:
        raise error(f"{source}: nested too deeply to be a hybridctl {what}", hint=hint) from None
    except ValueError as exc:
        raise error(f"{source}: not valid JSON: {exc}", hint=hint) from None


class _DuplicateKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> JsonDict:
    document = dict(pairs)
    if len(document) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return document


# What may stand for a lone surrogate: its escape (json reads "\ud800" as one; no file can hold it).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
# A control character but a newline or a tab, escaped or (DEL and C1) as it is: an escape sequence in a plan's
# reason reached the terminal as `show` printed it (`\u001b[31m`); the walk then says which text holds it
_CONTROL = re.compile(r"\\u00(?:0[0-8bBcCdDeEfF]|1[0-9a-fA-F]|7[fF]|[89][0-9a-fA-F])|\\[bfr]|[\x7f-\x9f]")
_CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def control_character(text: str) -> str | None:
    """The first control character but a newline or a tab in `text`, as `\\u001b`; None if there is none.
    What a plan file, a runbook or a drill report may not hold, and so neither may what they are made from."""
    found = _CONTROL_CHARACTER.search(text)
    return None if found is None else f"\\u{ord(found.group()):04x}"


# Numbers beyond a float: 1e400 reads as infinity; an int of more digits than a float's range is refused
# before it is read (Python reads one of at most 4,300 digits, and printing it would fail as well).
_MAX_INT_DIGITS = 300


class _OutOfRange(ValueError):
    pass


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _OutOfRange(text)
    return value


def _int(text: str) -> int:
    if len(text) > _MAX_INT_DIGITS:
        raise _OutOfRange(text)
    return int(text)


class _Marked(str):
    """A number beyond a float's range, as written (json_object's second reading, to say where it is)."""


class _Constant(str):
    """NaN, Infinity or -Infinity, as written (json_object's second reading, to say where it is)."""


def _marked_int(text: str) -> int | _Marked:
    return _Marked(text) if len(text) > _MAX_INT_DIGITS else int(text)


_FLOAT_MAX = sys.float_info.max


def unrepresentable(document: Any) -> str | None:
    """Where the parsed document holds a number that is not finite, or text with a lone surrogate or a control
    character (but a newline or a tab), and what."""
    stack: list[tuple[str, Any]] = [("", document)]
    while stack:
        path, value = stack.pop()
        if isinstance(value, _Constant):
            return f"{path or 'the document'}: {value} is not a JSON number"
        if isinstance(value, _Marked):  # a number as written (the second reading): out of range, or fine
            if len(value) > _MAX_INT_DIGITS or float(value) in (math.inf, -math.inf):
                shown = value if len(value) <= 40 else f"{value[:20]}…({len(value):,} characters)"
                return f"{path or 'the document'}: a number beyond the range of a float ({shown})"
            continue
        if (isinstance(value, float) and not math.isfinite(value)) or (type(value) is int and abs(value) > _FLOAT_MAX):
            return f"{path or 'the document'}: a number beyond the range of a float"
        if isinstance(value, str) and not encodable(value):
            return f"{path or 'the document'}: text with a lone surrogate ({surrogate(value)})"
        if isinstance(value, str) and (found := _CONTROL_CHARACTER.search(value)):
            return f"{path or 'the document'}: text with a control character (\\u{ord(found.group()):04x})"
        if isinstance(value, dict):
            for key, item in value.items():
                inner = f"{path}.{key}" if path else str(key)
                if not encodable(key):
                    return f"{path or 'the document'}: a key with a lone surrogate ({surrogate(key)})"
                if found := _CONTROL_CHARACTER.search(key):
                    return f"{path or 'the document'}: a key with a control character (\\u{ord(found.group()):04x})"
                stack.append((inner, item))
        elif isinstance(value, list):
            stack.extend((f"{path}[{index}]", item) for index, item in enumerate(value))
    return None


def surrogate(text: str) -> str:
    return next(f"\\u{ord(c):04x}" for c in text if "\ud800" <= c <= "\udfff")


def encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _no_constant(name: str) -> float:
    # NaN and Infinity are Python's extensions to JSON; no hybridctl file holds them (read again to say where)
    raise _OutOfRange(name)
