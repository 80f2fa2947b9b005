"""Every rule of inventory format v1: a failing inventory, its message, its line, its exit code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.examples import BASE, write
from support.inproc import run_cli

WORKLOAD = "  - name: train\n    type: training\n    gpu: {types: [H100], count: 8}\n    hours_per_month: 100\n"


def line_of(text: str, marker: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if marker in line:
            return number
    raise AssertionError(f"marker {marker!r} not in inventory")


def add_workload(body: str) -> str:
    return BASE + body


# (id, inventory text, diagnostic code, marker of the offending line, message fragment, hint fragment)
CASES = [
    ("version", BASE.replace("version: 1", "version: 2"), "unsupported-version", "version: 2",
     "not a supported inventory format version (supported: 1)", "version: 1"),
    ("name-pattern", BASE.replace("name: test", "name: Test_Inv"), "invalid-name", "name: Test_Inv",
     "not a valid name", "lowercase"),
    # a DNS label like every other name: these two once validated, planned and reached apply
    ("name-leading-and-trailing-dash", BASE.replace("name: test", "name: -cloud-burst-"), "invalid-name",
     "name: -cloud-burst-", "not a valid name", "DNS label"),
    ("name-all-dashes", BASE.replace("name: test", "name: '---'"), "invalid-name", "name: '---'",
     "not a valid name", "DNS label"),
    ("unknown-top-level", BASE + "sitez: []\n", "unknown-field", "sitez:", "unknown field 'sitez'",
     "did you mean 'sites'?"),
    ("unknown-pool-field", BASE.replace("usd_per_gpu_hour: 2.0}", "usd_per_gpu_hour: 2.0, interuptions_per_day: 1}"),
     "unknown-field", "interuptions_per_day", "unknown field 'interuptions_per_day'",
     "did you mean 'interruptions_per_day'?"),
    ("missing-kind", BASE.replace("    kind: onprem\n", ""), "missing-field", "  - name: dc-a",
     "required field 'kind' is missing", "add `kind:`"),
    ("bad-kind", BASE.replace("kind: onprem", "kind: datacenter"), "invalid-choice", "kind: datacenter",
     "'datacenter' (text) is not one of 'onprem', 'cloud' or 'edge'", None),
    ("wrong-type", BASE.replace("gpus: 16,", "gpus: '16',"), "wrong-type", "gpus: '16'",
     "expected a whole number, got '16' (text)", "numbers without quotes"),
    ("out-of-range", BASE.replace("gpus: 16,", "gpus: -4,"), "out-of-range", "gpus: -4",
     "-4 is too small: it must be above 0", "documented lower bound"),
    ("cloud-missing-region", BASE.replace("    region: us-east-1\n", ""), "missing-field", "  - name: aws-use1",
     "a cloud site needs `region`", "region: us-east-1"),
    ("cloud-pool-gpus", BASE.replace("instance_type: p5.48xlarge, max_gpus: 64,", "instance_type: p5.48xlarge, gpus: 64,"),
     "onprem-only-field", "gpus: 64, capacity_type: on_demand", "capacity is `max_gpus`", None),
    ("onprem-pool-instance", BASE.replace("gpu: L4, gpus: 8,", "gpu: L4, gpus: 8, instance_type: g6.xlarge,"),
     "cloud-only-field", "instance_type: g6.xlarge", "applies to cloud pools only", None),
    ("onprem-price-required", BASE.replace(", usd_per_gpu_hour: 0.5}", "}"), "missing-field", "name: a-l4",
     "needs `usd_per_gpu_hour`", None),
    ("unknown-gpu", BASE.replace("gpu: L4, gpus: 8", "gpu: L5, gpus: 8"), "unknown-gpu-type", "gpu: L5",
     "GPU type 'L5' is not in the catalog", "did you mean 'L4'?"),
    ("unknown-instance", BASE.replace("instance_type: p5.48xlarge, max_gpus: 64", "instance_type: p9.48xlarge, max_gpus: 64"),
     "unknown-instance-type", "p9.48xlarge", "instance type 'p9.48xlarge' is not in the catalog", "p5.48xlarge"),
    ("instance-gpu-mismatch", BASE.replace("{name: use1-p5, gpu: H100,", "{name: use1-p5, gpu: A100-80GB,"),
     "instance-gpu-mismatch", "name: use1-p5, gpu: A100-80GB", "p5.48xlarge carries H100 GPUs", "gpu: H100"),
    ("host-pool", BASE.replace("pool: a-h100}", "pool: a-h200}"), "unresolved-reference", "pool: a-h200",
     "pool 'a-h200' is not a pool of site dc-a", "did you mean 'a-h100'?"),
    ("dataset-site", BASE.replace("site: dc-a, size_gb", "site: dc-b, size_gb"), "unresolved-reference", "site: dc-b",
     "site 'dc-b' is not defined", "did you mean 'dc-a'?"),
    ("workload-dataset", add_workload("    datasets: [ds-us]\n"), "unresolved-reference", "datasets: [ds-us]",
     "dataset 'ds-us' is not defined", "did you mean 'ds-eu'?"),
    ("latency-region", add_workload("    latency: {region: apac-users, p95_ms: 50}\n"), "unresolved-reference",
     "region: apac-users", "latency region 'apac-users' is not in the top-level `regions`", None),
    ("site-latency-region", BASE.replace("{eu-users: 10, us-users: 90}", "{eu-users: 10, uk-users: 90}"),
     "unresolved-reference", "uk-users: 90", "latency_ms names region 'uk-users'", None),
    ("allow-list", add_workload("    sites: [dc-z]\n"), "unresolved-reference", "sites: [dc-z]",
     "site 'dc-z' in `sites` is not defined", None),
    ("preemptible", add_workload("    preemptible: true\n"), "preemptible-needs-checkpoint", "preemptible: true",
     "preemptible: true needs checkpoint_minutes", "checkpoint_minutes"),
    ("hours-required", BASE.replace("    hours_per_month: 100\n", ""), "missing-field", "  - name: train",
     "hours_per_month is required for training", None),
    ("duplicate-name", BASE + WORKLOAD.replace("name: train", "name: train  # again"), "duplicate-name",
     "# again", "workload 'train' is defined twice (first at", "rename one"),
    ("duplicate-host", BASE.replace("      - {name: a-01, address: 10.0.0.1, pool: a-h100}\n",
                                    "      - {name: a-01, address: 10.0.0.1, pool: a-h100}\n"
                                    "      - {name: a-01, address: 10.0.0.2, pool: a-h100}  # again\n"),
     "duplicate-name", "# again", "host 'a-01' is defined twice (first at", "rename one"),
    ("no-pool-gpu", BASE.replace("gpu: {types: [H100], count: 8}", "gpu: {types: [T4], count: 1}"),
     "no-eligible-pool:gpu-type", "  - name: train", "no pool offers GPU type T4", None),
    ("no-pool-capacity-type", BASE.replace("hours_per_month: 100", "hours_per_month: 100\n    tier: opportunistic\n"
                                           "    sites: [aws-use1]"),
     "no-eligible-pool:capacity-type", "  - name: train", "spot needs preemptible: true", None),
    ("no-pool-sensitivity", BASE.replace("sensitivity: confidential", "sensitivity: restricted")
     + "    datasets: [ds-eu]\n    sites: [aws-use1]\n", "no-eligible-pool:sensitivity", "  - name: train",
     "dataset ds-eu is restricted (onprem or edge only)", None),
    ("no-pool-residency", BASE + "    datasets: [ds-eu]\n    sites: [aws-use1]\n", "no-eligible-pool:residency",
     "  - name: train", "dataset ds-eu must stay in EU", None),
    ("no-pool-latency", BASE + "    latency: {region: eu-users, p95_ms: 5}\n", "no-eligible-pool:latency",
     "  - name: train", "latency to eu-users must be ≤ 5 ms", None),
    ("spread", BASE.replace("hours_per_month: 100", "hours_per_month: 730\n    replicas: 2\n    sites: [dc-a]")
     .replace("name: test\n", "name: test\npolicies: {spread_fixed_across: 2}\n"),
     "spread-unsatisfiable", "  - name: train", "must span 2 failure domains", "spread_fixed_across"),
    ("fallback-larger", BASE + "    fallback: {replicas: 3}\n", "fallback-larger", "fallback: {replicas: 3}",
     "fallback.replicas (3) exceeds replicas (1)", None),
    ("federated-needs-data", BASE.replace("type: training", "type: federated_training"), "federated-needs-datasets",
     "  - name: train", "lists no datasets", None),
]


@pytest.mark.parametrize(("text", "code", "marker", "message", "hint"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_rule_is_reported_with_line_and_exit_code(tmp_path: Path, text: str, code: str, marker: str, message: str,
                                                  hint: str | None) -> None:
    path = write(tmp_path, text)
    result = run_cli("validate", str(path), "--format", "json")
    assert result.code == 1, result.output
    diagnostics = json.loads(result.stdout)["inventories"][0]["diagnostics"]
    found = [d for d in diagnostics if d["code"] == code]
    assert found, f"no {code} in {diagnostics}"
    d = found[0]
    assert message in d["message"]
    assert d["file"] == str(path)
    assert d["line"] == line_of(text, marker)
    if hint is not None:
        assert hint in (d["hint"] or "")


def test_valid_base_inventory(tmp_path: Path) -> None:
    result = run_cli("validate", str(write(tmp_path, BASE)))
    assert result.code == 0, result.output
    assert "valid (2 sites, 4 pools, 1 workloads)" in result.stdout


def test_a_latency_budget_equal_to_the_site_s_latency_is_met(tmp_path: Path) -> None:
    """dc-a is exactly 10 ms from eu-users: a 10 ms budget is inside it (≤), a 9 ms one is not."""
    assert run_cli("validate", str(write(tmp_path, add_workload("    latency: {region: eu-users, p95_ms: 10}\n")))).code == 0
    assert run_cli("validate", str(write(tmp_path, add_workload("    latency: {region: eu-users, p95_ms: 9}\n")))).code == 1


def test_duplicate_across_files_cites_both(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "b.yaml").write_text("version: 1\nname: test\nworkloads:\n" + WORKLOAD, encoding="utf-8")
    result = run_cli("validate", str(tmp_path), "--format", "json")
    assert result.code == 1
    d = json.loads(result.stdout)["inventories"][0]["diagnostics"][0]
    assert d["code"] == "duplicate-name"
    assert d["file"] == str(tmp_path / "b.yaml") and d["line"] == 4
    assert d["related"] == [f"{tmp_path / 'a.yaml'}:{line_of(BASE, '  - name: train')}:5"]


def test_conflicting_top_level_across_files(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(BASE, encoding="utf-8")
    (tmp_path / "b.yaml").write_text("version: 1\nname: other\n", encoding="utf-8")
    result = run_cli("validate", str(tmp_path), "--format", "json")
    assert result.code == 1
    d = json.loads(result.stdout)["inventories"][0]["diagnostics"][0]
    assert d["code"] == "conflicting-top-level" and d["line"] == 2 and d["file"].endswith("b.yaml")


class TestWarnings:
    TEXT = BASE.replace("count: 8}", "count: 8}\n    replicas: 20")  # 160 H100 wanted, 112 exist

    def test_warning_passes_without_strict(self, tmp_path: Path) -> None:
        result = run_cli("validate", str(write(tmp_path, self.TEXT)))
        assert result.code == 0
        assert "demand for H100 (160 GPUs) exceeds the capacity of H100 pools (112 GPUs)" in result.stdout

    def test_warning_fails_with_strict(self, tmp_path: Path) -> None:
        result = run_cli("validate", str(write(tmp_path, self.TEXT)), "--strict")
        assert result.code == 1


class TestFormats:
    TEXT = BASE.replace("gpu: L4, gpus: 8", "gpu: L5, gpus: 8")

    def test_github_annotations(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        result = run_cli("validate", str(path), "--format", "github")
        assert result.code == 1
        line = line_of(self.TEXT, "gpu: L5")
        assert result.stdout.startswith(f"::error file={path},line={line},col=")
        assert "title=hybridctl unknown-gpu-type::" in result.stdout
        assert "%0Ahint: did you mean 'L4'?" in result.stdout

    def test_sarif(self, tmp_path: Path) -> None:
        path = write(tmp_path, self.TEXT)
        result = run_cli("validate", str(path), "--format", "sarif")
        sarif = json.loads(result.stdout)
        assert sarif["version"] == "2.1.0"
        run = sarif["runs"][0]
        assert run["tool"]["driver"]["name"] == "hybridctl"
        assert {r["id"] for r in run["tool"]["driver"]["rules"]} == {"unknown-gpu-type"}
        region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
        assert region["startLine"] == line_of(self.TEXT, "gpu: L5")
        assert run["results"][0]["level"] == "error"

    def test_json_is_versioned(self, tmp_path: Path) -> None:
        result = run_cli("validate", str(write(tmp_path, BASE)), "--format", "json")
        document = json.loads(result.stdout)
        assert document["format_version"] == 1 and document["valid"] is True

    def test_text_has_no_colour_off_a_tty(self, tmp_path: Path) -> None:
        result = run_cli("validate", str(write(tmp_path, self.TEXT)))
        assert "\x1b[" not in result.stdout
        assert "hint: did you mean 'L4'?" in result.stdout


def test_missing_path_is_usage_error(tmp_path: Path) -> None:
    result = run_cli("validate", str(tmp_path / "nope.yaml"))
    assert result.code == 2
    assert "no such file or directory" in result.stdout


def test_no_arguments_is_usage_error() -> None:
    assert run_cli("validate").code == 2
