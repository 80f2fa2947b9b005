"""The installed console script, run the way users and CI jobs run it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from hybridctl.core.plan.model import FORMAT_VERSION
from support.examples import EXAMPLE_PATHS

BIN = Path(sys.executable).parent
HYBRIDCTL = str(BIN / "hybridctl")


def hybridctl(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([HYBRIDCTL, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300)


def test_console_script_is_installed() -> None:
    assert Path(HYBRIDCTL).is_file(), "pip install . must provide the hybridctl console script"
    result = hybridctl("--version")
    assert result.returncode == 0 and result.stdout.startswith("hybridctl ")


def test_module_entry_point() -> None:
    result = subprocess.run([sys.executable, "-m", "hybridctl", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "validate" in result.stdout


@pytest.mark.parametrize("command", [["--help"], ["validate", str(EXAMPLE_PATHS[0])]])
def test_heavy_libraries_are_not_imported(command: list[str]) -> None:
    probe = ("import sys\nfrom hybridctl.commands.app import run\n"
             f"try:\n    run({command!r})\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('pulumi', 'ansible_runner', 'highspy') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert result.stdout.strip().splitlines()[-1] == "[]", result.stdout + result.stderr


def test_every_example_validates() -> None:
    result = hybridctl("validate", *map(str, EXAMPLE_PATHS))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("✓") == len(EXAMPLE_PATHS)
    assert "\x1b[" not in result.stdout


def test_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 1\nname: x\nsitez: []\n")
    assert hybridctl("validate", str(bad)).returncode == 1
    assert hybridctl("validate", str(tmp_path / "missing.yaml")).returncode == 2
    assert hybridctl("validate", "--format", "xml", str(bad)).returncode == 2
    assert hybridctl("no-such-command").returncode == 2


def test_no_traceback_on_bad_plan_file(tmp_path: Path) -> None:
    plan_file = tmp_path / "plan.json"
    plan_file.write_text("{not json")
    result = hybridctl("show", str(plan_file))
    assert result.returncode == 1
    assert "not valid JSON" in result.stderr and "Traceback" not in result.stderr


def test_schema_is_a_valid_json_schema_that_accepts_the_examples(tmp_path: Path) -> None:
    result = hybridctl("schema")
    schema = json.loads(result.stdout)
    jsonschema.Draft202012Validator.check_schema(schema)
    import yaml

    document = yaml.safe_load((EXAMPLE_PATHS[0]).read_text())
    jsonschema.validate(document, schema)


def test_init_writes_a_valid_starter(tmp_path: Path) -> None:
    target = tmp_path / "acme-ml"
    result = hybridctl("init", str(target), "--pattern", "federated")
    assert result.returncode == 0, result.stderr
    assert hybridctl("validate", str(target / "inventory.yaml")).returncode == 0
    assert "name: acme-ml" in (target / "inventory.yaml").read_text()
    assert hybridctl("init", str(target)).returncode == 2  # refuses to overwrite
    assert hybridctl("init", str(target), "--pattern", "nope").returncode == 2


def test_plan_json_and_plan_file(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    result = hybridctl("plan", str(EXAMPLE_PATHS[0]), "--format", "json", "--out", str(out))
    assert result.returncode == 0, result.stderr
    document = json.loads(result.stdout)
    assert document["format_version"] == FORMAT_VERSION
    assert {"total_usd_per_month", "placements", "unplaced", "solver"} <= set(document)
    assert set(document["placements"][0]) >= {"workload", "tier", "site", "pool", "replicas", "gpus", "usd_per_month"}
    assert set(document["solver"]) >= {"status", "objective", "bound", "gap", "seconds"}
    saved = json.loads(out.read_text())
    assert saved["inventory_digest"].startswith("sha256:") and saved["tool_version"]
    assert hybridctl("show", str(out), "--format", "json").returncode == 0
    changes = hybridctl("plan", str(EXAMPLE_PATHS[0]), "--previous", str(out), "--detailed-exitcode")
    assert changes.returncode == 0, changes.stdout
    assert hybridctl("plan", str(EXAMPLE_PATHS[0]), "--detailed-exitcode").returncode == 2


def test_help_imports_no_model_of_the_core() -> None:
    """`plan` and `cost` are registered at start-up: what they import then must stay light (the inventory
    models, pulled in through pricing's annotations once, doubled `hybridctl --help`'s time)."""
    probe = ("import sys\nfrom hybridctl.commands.app import run\n"
             "try:\n    run(['--help'])\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('hybridctl.core.inventory.models', 'numpy', 'hybridctl.core.placement.planner')"
             " if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
