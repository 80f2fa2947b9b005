"""Malformed and hostile inventories: one clear message, a documented exit code, never a traceback."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.examples import BASE, EXAMPLE_PATHS, write
from support.hostile import tree
from support.inproc import run_cli

BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(9))


def assert_clean_failure(result: Any, code: int, fragment: str, path: Path | None = None) -> None:
    assert result.code == code, result.output
    assert "Traceback" not in result.output
    assert fragment in " ".join(result.output.split())  # rich folds long lines
    if path is not None:
        one_diagnostic(result, path)


DIAGNOSTIC = re.compile(r"^\s+(\d+:\d+|-)\s+error\s", re.MULTILINE)  # `  2:1  error …` / `  -  error …`


def one_diagnostic(result: Any, path: Path) -> None:
    """validate's one message: the file's header (`✗ PATH: 1 error(s)`) and one diagnostic that names it."""
    flat = " ".join(result.output.split())
    assert f"✗ {path}: 1 error(s), 0 warning(s)" in flat, result.output
    assert len(DIAGNOSTIC.findall(result.output)) == 1, result.output
    assert flat.count(f"error {path}") == 1, result.output  # the diagnostic names the file


@pytest.fixture(autouse=True)
def _in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own working directory, so a stray write (a default ./.hybridctl) shows in tmp_path."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HYBRIDCTL_STATE", raising=False)


def validate_writing_nothing(root: Path, *args: str) -> Any:
    """`validate ARGS`, checking that it wrote, changed and deleted nothing under root (the working directory)."""
    before = tree(root)
    result = run_cli("validate", *args)
    assert tree(root) == before, result.output
    return result


@pytest.mark.parametrize(("name", "content", "code", "fragment"), [
    ("alias-bomb", BOMB, 1, "expands to more than 5,000,000 values through aliases"),
    ("deep-nesting", "[" * 100_000 + "]" * 100_000, 1, "nesting deeper than 64 levels"),
    ("empty", "", 1, "is empty"),
    ("only-comments", "# nothing here\n", 1, "is empty"),
    ("top-level-list", "- 1\n- 2\n", 1, "the top level must be a mapping"),
    ("two-documents", "version: 1\n---\nversion: 1\n", 1, "holds more than one YAML document"),
    ("python-tag", "version: !!python/object:os.system ls\n", 1, "explicit YAML tags"),
    ("syntax", "version: 1\nsites: [a, b\nname: x\n", 1, "did not find expected ',' or ']'"),
    ("duplicate-key", "version: 1\nversion: 1\n", 1, "key 'version' appears twice"),
    ("undefined-alias", "version: *nope\n", 1, "alias *nope refers to no anchor"),
    ("scalar-key-mapping", "? [a, b]\n: 1\n", 1, "a mapping key must be a plain scalar"),
])
def test_hostile_yaml(tmp_path: Path, name: str, content: str, code: int, fragment: str) -> None:
    path = write(tmp_path, content, f"{name}.yaml")
    assert_clean_failure(validate_writing_nothing(tmp_path, str(path)), code, fragment, path)


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(os.urandom(512) + b"\x00")
    result = validate_writing_nothing(tmp_path, str(path))
    assert result.code == 2 and "Traceback" not in result.output
    assert "not UTF-8 text" in result.output or "binary data" in result.output
    one_diagnostic(result, path)


def test_nul_in_utf8_text(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\x00\n")
    assert_clean_failure(validate_writing_nothing(tmp_path, str(path)), 1, "binary data (NUL bytes)", path)


def test_huge_file_is_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:  # sparse: costs no disk and no memory
        handle.truncate(65 * 1024 * 1024)
    assert_clean_failure(validate_writing_nothing(tmp_path, str(path)), 2, "larger than the 67,108,864-byte limit",
                         path)


def test_directory_without_yaml(tmp_path: Path) -> None:
    assert_clean_failure(validate_writing_nothing(tmp_path, str(tmp_path)), 2, "holds no *.yaml or *.yml files",
                         tmp_path)


def test_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path, BASE)
    path.chmod(0)
    if os.access(path, os.R_OK):  # root reads anything: use a directory posing as a file instead
        path.unlink()
        path.mkdir()
        (path / "x.txt").write_text("x")
        assert_clean_failure(run_cli("validate", str(path)), 2, "holds no *.yaml")
    else:
        assert_clean_failure(run_cli("validate", str(path)), 2, "cannot read")


def test_norway_stays_a_string(tmp_path: Path) -> None:
    text = BASE.replace("jurisdiction: EU\n    failure_domain: a", "jurisdiction: NO\n    failure_domain: a") \
        .replace("residency: [EU]", "residency: [NO]")
    assert run_cli("validate", str(write(tmp_path, text))).code == 0


# --- property test: mutated examples never crash the tool ---------------------------------

def _load_examples() -> list[dict[str, Any]]:
    documents = []
    for path in EXAMPLE_PATHS:
        files = sorted(path.glob("*.yaml")) if path.is_dir() else [path]
        merged: dict[str, Any] = {}
        for file in files:
            part = yaml.safe_load(file.read_text(encoding="utf-8"))
            for key, value in part.items():
                if isinstance(value, list):
                    merged.setdefault(key, []).extend(value)
                else:
                    merged.setdefault(key, value)
        documents.append(merged)
    return documents


EXAMPLES = _load_examples()
WEIRD_VALUES = [None, -1, 0, 1e308, -1e-9, 10**20, "", "ünïcødé ✓", "😀", "a" * 300, [], {}, True, "NaN",
                float("inf"), [1, [2, [3]]], {"x": {"y": 1}}, "1", "H100", "eu-users"]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _paths(value, (*prefix, i))
    return found


def _mutate(document: dict[str, Any], rng: random.Random, steps: int) -> dict[str, Any]:
    document = json.loads(json.dumps(document))
    for _ in range(steps):
        paths = _paths(document)
        if not paths:
            break
        path = rng.choice(paths)
        parent = document
        for step in path[:-1]:
            parent = parent[step]
        key = path[-1]
        action = rng.choice(["delete", "replace", "duplicate", "rename"])
        if action == "delete":
            del parent[key]
        elif action == "replace":
            parent[key] = rng.choice(WEIRD_VALUES)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(json.loads(json.dumps(parent[key])))
        elif action == "rename" and isinstance(parent, dict):
            parent[f"{key}x"] = parent.pop(key)
    return document


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(example=st.sampled_from(range(len(EXAMPLES))), seed=st.integers(0, 2**32 - 1), steps=st.integers(1, 4))
def test_mutated_examples_never_crash(tmp_path: Path, example: int, seed: int, steps: int) -> None:
    mutated = _mutate(EXAMPLES[example], random.Random(seed), steps)
    path = tmp_path / "mutated.yaml"
    path.write_text(yaml.safe_dump(mutated, allow_unicode=True, sort_keys=False), encoding="utf-8")
    result = validate_writing_nothing(tmp_path, str(path), "--format", "json")
    assert result.code in (0, 1, 2), result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    report = json.loads(result.stdout)["inventories"][0]
    assert report["path"] == str(path)
    if result.code != 0:
        assert report["diagnostics"] and all(d["message"] for d in report["diagnostics"])
        assert all(d["file"] == str(path) for d in report["diagnostics"]), report["diagnostics"]
        assert all(d["line"] for d in report["diagnostics"] if d["code"] not in ("demand-exceeds-capacity",))


# A number too long to read (issue 34, finding 8): Python reads an int of at most 4,300 digits, and a value
# was read before any bound applied, so validate and plan ended with exit 70 and --format json|sarif printed
# nothing. Now it is a YAML error at its line, in every format.
@pytest.mark.parametrize("number", ["9" * 5000, "-" + "9" * 4400, "0x" + "f" * 4000, "0o" + "7" * 5000])
@pytest.mark.parametrize("output_format", ["text", "json", "sarif"])
def test_a_number_too_long_to_read(tmp_path: Path, number: str, output_format: str) -> None:
    path = write(tmp_path, BASE + f"    replicas: {number}\n", "long.yaml")
    line = len(BASE.splitlines()) + 1
    result = validate_writing_nothing(tmp_path, str(path), "--format", output_format)
    assert result.code == 1, result.output
    assert "Traceback" not in result.output and "internal error" not in result.output
    if output_format == "json":
        diagnostics = json.loads(result.stdout)["inventories"][0]["diagnostics"]
        assert len(diagnostics) == 1 and diagnostics[0]["file"] == str(path), diagnostics
        diagnostic = diagnostics[0]
        assert diagnostic["line"] == line and f"a number of {len(number):,} characters" in diagnostic["message"]
    elif output_format == "sarif":
        assert json.loads(result.stdout)["runs"][0]["results"][0]["locations"]
    else:
        assert f"{line}:" in result.output and "a number of" in result.output
        one_diagnostic(result, path)
    assert run_cli("plan", str(path), "--state", str(tmp_path / "s")).code == 1
