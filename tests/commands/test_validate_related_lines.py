"""A finding caused by a pool's capacity names that pool's line too: an author who shrinks a pool changes its
`gpus` line, and the workload that no longer fits may be far away. The JSON `related` list, SARIF's
`relatedLocations` and a second `--format github` annotation carry it."""

from __future__ import annotations

import json
from pathlib import Path

from support.examples import EXAMPLES
from support.inproc import run_cli

BASE = (EXAMPLES / "cloud-burst.yaml").read_text()


def _line_of(text: str, needle: str, after: str) -> int:
    """1-based line of the first `needle` after the first `after`."""
    start = text.index(after)
    return text[:text.index(needle, start)].count("\n") + 1


def _shrunk(tmp_path: Path) -> tuple[Path, str]:
    # every H100 pool to 8 GPUs: long-context-pretrain's 16-GPU replica fits none, and demand exceeds capacity
    text = (BASE.replace("gpus: 32\n", "gpus: 8\n", 1).replace("max_gpus: 128", "max_gpus: 8")
            .replace("max_gpus: 64", "max_gpus: 8"))
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    return path, text


def test_json_names_the_pools_capacity_lines(tmp_path: Path) -> None:
    path, text = _shrunk(tmp_path)
    done = run_cli("validate", str(path), "--format", "json")
    (report,) = json.loads(done.stdout)["inventories"]
    by_code = {d["code"]: d for d in report["diagnostics"]}
    fits = by_code["replica-fits-no-pool"]
    assert fits["line"] == _line_of(text, "count: 16", "long-context-pretrain")
    ash = _line_of(text, "gpus: 8", "name: ash-h100")
    od = _line_of(text, "max_gpus: 8", "name: use1-p5-od")
    spot = _line_of(text, "max_gpus: 8", "name: use1-p5-spot")
    # its eligible pools (a burst tier may not use spot): the lines that decide whether it fits
    assert fits["related"] == [f"{path}:{ash}:15", f"{path}:{od}:19"]
    demand = next(d for d in report["diagnostics"] if d["message"].startswith("demand for H100 ("))
    assert {r.rsplit(":", 2)[1] for r in demand["related"]} == {str(ash), str(od), str(spot)}


def test_github_annotates_the_changed_line_as_well(tmp_path: Path) -> None:
    path, text = _shrunk(tmp_path)
    done = run_cli("validate", str(path), "--format", "github")
    ash = _line_of(text, "gpus: 8", "name: ash-h100")
    workload = _line_of(text, "count: 16", "long-context-pretrain")
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"::error file={path},line={workload},") and "replica-fits-no-pool" in line
               for line in lines)
    related = [line for line in lines if f"line={ash}," in line and "replica-fits-no-pool (related)" in line]
    assert len(related) == 1 and f"reported at {path}:{workload}" in related[0]


def test_sarif_carries_related_locations(tmp_path: Path) -> None:
    path, text = _shrunk(tmp_path)
    done = run_cli("validate", str(path), "--format", "sarif")
    results = json.loads(done.stdout)["runs"][0]["results"]
    fits = next(r for r in results if r["ruleId"] == "replica-fits-no-pool")
    lines = [r["physicalLocation"]["region"]["startLine"] for r in fits["relatedLocations"]]
    assert _line_of(text, "gpus: 8", "name: ash-h100") in lines
    assert [r["id"] for r in fits["relatedLocations"]] == list(range(len(lines)))


def test_a_finding_with_nothing_related_gets_one_annotation(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(BASE.replace("gpu: H100", "gpu: H1OO", 1))
    done = run_cli("validate", str(bad), "--format", "github")
    assert "(related)" not in done.stdout
