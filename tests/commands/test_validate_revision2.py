"""The rules of inventory revision 2 at authoring time: each failing inventory, its message, its line,
its exit code; the two warnings; huge numbers; and plan's exit codes for unplaced work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.examples import BASE, write
from support.inproc import run_cli
from test_validate_rules import line_of

CLOUD_SITE = "    cluster: ml\n"
H100_WORKLOAD = "  - name: train\n    type: training\n    gpu: {types: [H100], count: 8}\n    hours_per_month: 100\n"


def with_workload(body: str) -> str:
    return BASE.replace(H100_WORKLOAD, body)


# (id, inventory text, diagnostic code, marker of the offending line, message fragment)
ERRORS = [
    ("cloud-max-sensitivity", BASE.replace(CLOUD_SITE, CLOUD_SITE + "    max_sensitivity: restricted\n"),
     "cloud-sensitivity", "max_sensitivity: restricted", "may process at most confidential"),
    ("restricted-in-the-cloud", BASE.replace(
        "datasets:\n", "datasets:\n  - {name: r, site: aws-use1, size_gb: 1, sensitivity: restricted}\n"),
     "restricted-storage", "name: r,", "restricted data is stored only at onprem or edge sites"),
    ("copy-outside-residency", BASE.replace("residency: [EU]}", "residency: [EU], copies: [aws-use1]}"),
     "storage-residency", "copies: [aws-use1]", "stored at aws-use1 in US, outside its residency EU"),
    ("copy-unknown-site", BASE.replace("residency: [EU]}", "residency: [EU], copies: [nowhere]}"),
     "unresolved-reference", "copies: [nowhere]", "copy site 'nowhere' is not defined"),
    ("copy-of-the-primary", BASE.replace("residency: [EU]}", "residency: [EU], copies: [dc-a]}"),
     "duplicate-copy", "copies: [dc-a]", "it is the primary site"),
    ("reservation-on-demand", BASE.replace("max_gpus: 64, capacity_type: on_demand}",
                                           "max_gpus: 64, capacity_type: on_demand, reservation_id: cr-0123456789abcdef0}"),
     "reservation-not-reserved", "reservation_id: cr-", "reserved cloud pools only"),
    # issue 33: a capacity reservation lives in one zone; the pool must name it (by name or zone ID)
    ("reservation-without-its-zone", BASE.replace("max_gpus: 64, capacity_type: on_demand}",
                                                  "max_gpus: 64, capacity_type: reserved, reservation_id: cr-0123456789abcdef0}"),
     "reservation-zone", "reservation_id: cr-", "lives in one availability zone"),
    ("reservation-in-another-regions-zone", BASE.replace(
        "max_gpus: 64, capacity_type: on_demand}",
        "max_gpus: 64, capacity_type: reserved, reservation_id: cr-0123456789abcdef0, failure_domain: euc1-az1}"),
     "reservation-zone", "reservation_id: cr-", "names none of us-east-1's"),
    ("gpus-per-node-in-the-cloud", BASE.replace("max_gpus: 64, capacity_type: on_demand}",
                                                "max_gpus: 64, capacity_type: on_demand, gpus_per_node: 4}"),
     "onprem-only-field", "gpus_per_node: 4", "GPUs per node come from its instance type"),
    ("node-larger-than-pool", BASE.replace("gpus: 8, capacity_type: reserved", "gpus: 8, gpus_per_node: 16, "
                                           "capacity_type: reserved"),
     "node-larger-than-pool", "gpus_per_node: 16", "gpus_per_node 16 exceeds the pool's 8 GPUs"),
    ("node-shape", with_workload("  - name: serve\n    type: batch_inference\n    gpu: {types: [H100], count: 16}\n"
                                 "    hours_per_month: 100\n"),
     "no-eligible-pool:node-shape", "  - name: serve", "node shape: a replica needs 16 GPUs"),
    ("replica-fits-no-pool", with_workload("  - name: train\n    type: training\n    gpu: {types: [H100], count: 128}\n"
                                           "    hours_per_month: 100\n"),
     "replica-fits-no-pool", "count: 128", "a replica needs 128 GPUs, and no eligible pool holds one"),
    ("ceiling-below-cost", with_workload(H100_WORKLOAD + "    max_usd_per_month: 100\n"),
     "ceiling-below-cost", "max_usd_per_month: 100", "below its cheapest possible cost, $1,600.00"),
    ("budget-below-committed", BASE.replace("regions: [eu-users, us-users]\n",
                                            "regions: [eu-users, us-users]\npolicies: {monthly_budget_usd: 1000}\n"),
     "budget-below-committed", "monthly_budget_usd: 1000", "below the committed pools' cost, $26,280.00"),
    ("spread-any-tier", with_workload(H100_WORKLOAD + "    replicas: 2\n    spread: 2\n    sites: [dc-a]\n"),
     "spread-unsatisfiable", "  - name: train", "burst tier with 2 replicas must span 2 failure domains"),
    # issue 33: what a reservation is, said without a reservation
    ("reservation-type-without-id", BASE.replace("max_gpus: 64, capacity_type: on_demand}",
                                                 "max_gpus: 64, capacity_type: on_demand, reservation_type: capacity_block}"),
     "reservation-type-without-id", "reservation_type: capacity_block", "and it has none"),
    ("huge-replicas", with_workload(H100_WORKLOAD + "    replicas: 1000000000000000000000000000000\n"),
     "out-of-range", "replicas: 1000", "is above the upper bound of 100000"),
    ("huge-price", BASE.replace("usd_per_gpu_hour: 0.5}", "usd_per_gpu_hour: 1e308}"),
     "out-of-range", "usd_per_gpu_hour: 1e308", "is above the upper bound of 10000"),
]


@pytest.mark.parametrize(("text", "code", "marker", "message"), [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_error_with_line_and_exit_code(tmp_path: Path, text: str, code: str, marker: str, message: str) -> None:
    path = write(tmp_path, text)
    result = run_cli("validate", str(path), "--format", "json")
    assert result.code == 1, result.output
    diagnostics = json.loads(result.stdout)["inventories"][0]["diagnostics"]
    found = [d for d in diagnostics if d["code"] == code and d["severity"] == "error"]
    assert found, f"no {code} in {diagnostics}"
    assert message in found[0]["message"]
    assert found[0]["line"] == line_of(text, marker)
    assert found[0]["hint"]


WARNINGS = [
    ("fixed-preemptible", with_workload("  - name: api\n    type: batch_inference\n    gpu: {types: [L4], count: 1}\n"
                                        "    hours_per_month: 100\n    tier: fixed\n    preemptible: true\n"
                                        "    checkpoint_minutes: 10\n"), "preemptible: true"),
    ("realtime-part-time", with_workload("  - name: api\n    type: realtime_inference\n"
                                         "    gpu: {types: [L4], count: 1}\n    hours_per_month: 200\n"),
     "hours_per_month: 200"),
    # the catalog's list prices are us-east-1's: a pool in eu-west-1 without its own price is priced from them
    ("price-from-another-region", BASE.replace("region: us-east-1", "region: eu-west-1"), "{name: use1-p5, gpu"),
]


@pytest.mark.parametrize(("text", "marker"), [w[1:] for w in WARNINGS], ids=[w[0] for w in WARNINGS])
def test_warning_fails_only_under_strict(tmp_path: Path, text: str, marker: str) -> None:
    code = next(w[0] for w in WARNINGS if w[1] == text)
    path = write(tmp_path, text)
    result = run_cli("validate", str(path), "--format", "json")
    assert result.code == 0, result.output
    found = [d for d in json.loads(result.stdout)["inventories"][0]["diagnostics"] if d["code"] == code]
    assert found and found[0]["severity"] == "warning" and found[0]["line"] == line_of(text, marker)
    assert run_cli("validate", str(path), "--strict").code == 1


def test_the_revision2_examples_validate_cleanly() -> None:
    from support.examples import EXAMPLE_PATHS

    result = run_cli("validate", *map(str, EXAMPLE_PATHS), "--strict")
    assert result.code == 0, result.output


UNPLACED = """\
version: 1
name: u
sites:
  - {name: dc, kind: onprem, jurisdiction: EU, egress_usd_per_gb: 0, latency_ms: {},
     pools: [{name: l4, gpu: L4, gpus: 2, capacity_type: reserved, usd_per_gpu_hour: 1}]}
workloads:
  - {name: api, type: realtime_inference, gpu: {types: [L4], count: 1}, replicas: REPLICAS}
  - {name: batch, type: batch_inference, gpu: {types: [L4], count: 1}, hours_per_month: 10, replicas: 1}
"""


class TestUnplacedExitCodes:
    def test_fixed_tier_unplaced_fails_and_no_plan_file_is_written(self, tmp_path: Path) -> None:
        """As Terraform's plan does when it errors: apply would refuse the file for the same reason (issue 34)."""
        path = write(tmp_path, UNPLACED.replace("REPLICAS", "3"))
        out = tmp_path / "plan.json"
        result = run_cli("plan", str(path), "--out", str(out), "--state", str(tmp_path / "s"))
        assert result.code == 1
        assert "1 fixed-tier workload(s) left with 1 replica(s) unplaced: api" in result.stderr
        assert f"no plan file written to {out}" in " ".join(result.stderr.split()) and not out.exists()
        assert run_cli("plan", str(path), "--allow-unplaced", "--out", str(out), "--state", str(tmp_path / "s")).code == 0
        assert json.loads(out.read_text())["unplaced"][0]["workload"] == "api"

    def test_other_tiers_fail_only_with_fail_on_unplaced(self, tmp_path: Path) -> None:
        path = write(tmp_path, UNPLACED.replace("REPLICAS", "2"))  # api takes both GPUs, batch waits
        assert run_cli("plan", str(path)).code == 0
        strict = run_cli("plan", str(path), "--fail-on-unplaced")
        assert strict.code == 1 and "1 workload(s) left with 1 replica(s) unplaced: batch" in strict.stderr

    def test_the_two_options_contradict(self, tmp_path: Path) -> None:
        path = write(tmp_path, UNPLACED.replace("REPLICAS", "2"))
        assert run_cli("plan", str(path), "--allow-unplaced", "--fail-on-unplaced").code == 2
