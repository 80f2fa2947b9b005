"""The one reader of plan files and runbooks (serialize.json_object, issue 34 findings 8 and 11): what JSON
allows but no hybridctl file holds is refused with the file and, where there is one, the field — a key
twice in one object however it is spaced or escaped, NaN, numbers beyond a float, lone surrogates, deep
nesting — and everything else reads exactly as json.loads reads it (orjson reads it when it can: the
keys are counted so that a key given twice is never lost; an int beyond 64 bits reads as the nearest float)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hybridctl.core.plan.jsonread import json_object
from hybridctl.errors import HybridctlError
from hypothesis import given, settings
from hypothesis import strategies as st
from support.plan_week import AT_PLAN_WEEK


def read(text: str) -> object:
    return json_object(text, "f.json", HybridctlError, "plan", "hint")


@pytest.mark.parametrize(("text", "message"), [
    ('{"a": 1, "a": 2}', "f.json: key 'a' appears twice in one object"),
    ('{"a" : 1, "a": 2}', "key 'a' appears twice"),
    ('{"a":\n1,\n"a"\n:\n2}', "key 'a' appears twice"),
    ('{"a\\\\": 1, "a\\\\": 2, "b": 3}', "key 'a\\\\' appears twice"),
    ('{"x": "\\":", "a": 1, "a": 2}', "key 'a' appears twice"),
    ('{"x": [{"b": 1, "c": 2, "b": 3}]}', "key 'b' appears twice"),
    ('{"a": NaN}', "NaN is not a JSON number"),
    ('{"a": -Infinity}', "-Infinity is not a JSON number"),
    ('{"a": [1, {"b": 1e400}]}', "f.json: a[1].b: a number beyond the range of a float (1e400)"),
    ('{"a": -1.5E+999}', "a: a number beyond the range of a float"),
    ('{"a": ' + "9" * 400 + "}", "a: a number beyond the range of a float (99999999999999999999…(400 characters))"),
    ('{"a": ' + "9" * 5000 + "}", "(5,000 characters)"),
    ('{"base_serial": ' + "9" * 25 + "}", None),  # beyond 64 bits: the float nearest it (no field takes one)
    ('{"a": "\\ud800"}', "f.json: a: text with a lone surrogate (\\ud800)"),
    ('{"a": {"\\udfff": 1}}', "a: a key with a lone surrogate (\\udfff)"),
    # an escape sequence in a reason reached the terminal as `show` printed it; raw C1 (CSI) and DEL too
    ('{"p": [{"reason": "\\u001b[31mred"}]}', "f.json: p[0].reason: text with a control character (\\u001b)"),
    ('{"a": "x\\ry"}', "a: text with a control character (\\u000d)"),
    ('{"a": "\u009b31m"}', "a: text with a control character (\\u009b)"),
    ('{"\\u0007": 1}', "the document: a key with a control character (\\u0007)"),
    ("[" * 100_000 + "]" * 100_000, "nested too deeply to be a hybridctl plan"),
    ('{"a": 1', "f.json:1:8: not valid JSON"),
    ("[]", "f.json: not a hybridctl plan"),
])
def test_refused(text: str, message: str | None) -> None:
    if message is None:
        assert read(text) == {key: float(value) for key, value in json.loads(text).items()}
        return
    with pytest.raises(HybridctlError) as refused:
        read(text)
    assert message in refused.value.message


@pytest.mark.parametrize("text", ['{"a": "8e271", "b": "sha256:8e2710"}', '{"a": 1.5e-05, "b": 1e300}',
                                  '{"a": "\\ud83d\\ude00"}', '{"x\\":": 1, "y": "\\":"}', '{"a": 123456789012345678}'])
def test_read_as_json_reads_it(text: str) -> None:
    assert read(text) == json.loads(text)


def test_plan_files_read_as_json_reads_them(tmp_path: Path) -> None:
    from hybridctl.core.placement.planner import plan
    from hybridctl.core.plan.serialize import plan_to_json_utf8
    from hybridctl.drivers.inventory_files import load_inventory
    from support.examples import EXAMPLES

    for name in ("enterprise", "federated.yaml"):
        text = plan_to_json_utf8(plan(load_inventory(EXAMPLES / name).inventory, options=AT_PLAN_WEEK),
                                 plan_file=True).decode()
        assert read(text) == json.loads(text)
        assert read(json.dumps(json.loads(text))) == json.loads(text)  # respaced


_KEYS = st.text(alphabet='ab"\\: \n', max_size=4)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**63, 2**64 - 1) | st.floats(allow_nan=False,
                       allow_infinity=False) | st.text(alphabet='ab"\\: \n{}', max_size=5),
                       lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(_KEYS, inner), max_size=4),
                       max_leaves=10)


def _dumps(value: object, separator: str) -> str:
    """JSON text of `value`, where a list of pairs is an object that may give a key twice."""
    if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
        return "{" + ", ".join(f"{json.dumps(k)}{separator}{_dumps(v, separator)}" for k, v in value) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_dumps(v, separator) for v in value) + "]"
    return json.dumps(value)


@pytest.mark.timeout(120)
@settings(max_examples=300, deadline=None)
@given(pairs=st.lists(st.tuples(_KEYS, _VALUES), max_size=5), separator=st.sampled_from([": ", ":", " : ", "\n:"]))
def test_fuzz_a_key_given_twice_is_never_lost(pairs: list[tuple[str, object]], separator: str) -> None:
    text = _dumps(pairs, separator) if pairs else "{}"

    def duplicated(value: object) -> bool:
        if isinstance(value, list) and value and all(isinstance(v, tuple) for v in value):
            keys = [k for k, _ in value]
            return len(set(keys)) != len(keys) or any(duplicated(v) for _, v in value)
        return isinstance(value, list) and any(duplicated(v) for v in value)

    if duplicated(pairs):
        with pytest.raises(HybridctlError, match="appears twice in one object"):
            read(text)
    else:
        assert read(text) == json.loads(text)


def test_newlines_tabs_and_escaped_backslashes_read_as_they_are() -> None:
    # the control-character check looks at what the text holds, not at a backslash followed by b
    assert read('{"a": "line\\nnext\\ttab \\\\b"}') == {"a": "line\nnext\ttab \\b"}
