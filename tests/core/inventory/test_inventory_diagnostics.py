"""Inventory diagnostics in full: code, severity, message, line and column, hint.

The command-level tests (tests/commands/test_validate_*.py) check each rule's code, line and a
fragment of its message; mutation testing showed that a diagnostic could point at the wrong
column (the key instead of the value, the enclosing mapping instead of the field), lose its
hint, or change its code, and pass. These cases pin the whole diagnostic, through the loader
and checks directly (no CLI), so they are fast.
"""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from support.examples import BASE

H100_TRAIN = "    gpu: {types: [H100], count: 8}\n"


def diagnostics(text: str) -> list[Diagnostic]:
    """Every finding on the inventory: the errors that stop it, or the warnings it loads with."""
    try:
        return list(load_sources([Source("inv.yaml", text)]).warnings)
    except InvalidInventoryError as exc:
        return exc.diagnostics


def at(text: str, line_marker: str, column_marker: str) -> str:
    """file:line:column of `column_marker` on the first line holding `line_marker`."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line_marker in line:
            return f"inv.yaml:{number}:{line.index(column_marker) + 1}"
    raise AssertionError(f"marker {line_marker!r} not in the inventory")


def case(name: str, text: str, code: str, message: str, where: tuple[str, str], hint: str | None,
         severity: str = "error") -> tuple[str, str, str, str, str, str | None, str]:
    return name, text, code, message, at(text, *where), hint, severity


RESTRICTED = BASE.replace("workloads:\n", "  - {name: ds-r, site: aws-use1, size_gb: 1, sensitivity: restricted}\n"
                                          "workloads:\n")
CLOUD_HOSTS = BASE.replace("    cluster: ml\n", "    cluster: ml\n    hosts:  # on the cloud site\n"
                                                "      - {name: c-01, address: 10.1.0.1, pool: use1-p5}\n")
POOLLESS_SITE = BASE.replace("datasets:\n", "  - name: edge-empty\n    kind: edge\n    jurisdiction: EU\n"
                                             "    egress_usd_per_gb: 0.0\n    latency_ms: {}\n    pools: []\ndatasets:\n")
REALTIME = BASE.replace("type: training", "type: realtime_inference")
ONE_L4_POOL = BASE.replace("gpu: L4, gpus: 8,", "gpu: L4, gpus: 4, gpus_per_node: 4,")

CASES = [
    case("restricted-storage-at-the-site-value", RESTRICTED, "restricted-storage",
         "dataset ds-r: restricted data is stored only at onprem or edge sites, and aws-use1 is a cloud site",
         ("name: ds-r", "aws-use1"), "keep restricted data on premises, or lower its sensitivity if that is right"),
    case("copy-at-the-primary", BASE.replace("residency: [EU]}", "residency: [EU], copies: [dc-a]}"),
         "duplicate-copy", "dataset ds-eu: site 'dc-a' holds the data already (it is the primary site)",
         ("copies: [dc-a]", "dc-a]"), "list each other site once in `copies`"),
    case("copy-listed-twice", BASE.replace("residency: [EU]}", "copies: [aws-use1, aws-use1]}"),
         "duplicate-copy", "dataset ds-eu: site 'aws-use1' holds the data already",
         ("copies: [aws-use1, aws-use1]", "aws-use1]"), "list each other site once in `copies`"),
    case("pool-gpu-with-nothing-close", BASE.replace("gpu: L4, gpus: 8", "gpu: QQQ9, gpus: 8"), "unknown-gpu-type",
         "pool a-l4: GPU type 'QQQ9' is not in the catalog", ("gpu: QQQ9", "QQQ9"),
         "defined GPU types: A100-40GB, A100-80GB, A10G, H100, H200, L4, L40S, T4"),
    case("cloud-field-on-an-onprem-site-at-its-key",
         BASE.replace("    failure_domain: a\n", "    failure_domain: a\n    region: eu-west-1\n"), "cloud-only-field",
         "site dc-a: `region` applies to cloud sites only", ("region: eu-west-1", "region"),
         "remove `region`, or set `kind: cloud`"),
    case("hosts-on-a-cloud-site-at-its-key", CLOUD_HOSTS, "onprem-only-field",
         "site aws-use1: `hosts` applies to onprem and edge sites only", ("# on the cloud site", "hosts"),
         "remove `hosts`: cloud nodes come from node groups"),
    case("duplicate-region", BASE.replace("regions: [eu-users, us-users]", "regions: [eu-users, us-users, eu-users]"),
         "duplicate-name", "region 'eu-users' is defined twice (first at inv.yaml:3:11)",
         ("regions:", "eu-users]"), "rename one of the two regions"),
    case("fallback-gpu-type-at-its-value", BASE + "    fallback: {gpu: {types: [L5], count: 1}}\n", "unknown-gpu-type",
         "workload train: GPU type 'L5' is not in the catalog", ("fallback:", "L5"), "did you mean 'L4'?"),
    case("federated-without-datasets", BASE.replace("type: training", "type: federated_training"),
         "federated-needs-datasets", "workload train: federated_training places a trainer at each of its datasets' "
         "sites, and it lists no datasets", ("  - name: train", "name"), "add `datasets:`"),
    case("jurisdiction-close-to-one", BASE.replace("residency: [EU]}", "residency: [EU, EX]}"), "unknown-jurisdiction",
         "dataset ds-eu: no site is in jurisdiction 'EX'", ("residency: [EU, EX]", "EX"), "did you mean 'EU'?",
         "warning"),
    case("jurisdiction-close-to-none", BASE.replace("residency: [EU]}", "residency: [EU, ZZ]}"),
         "unknown-jurisdiction", "dataset ds-eu: no site is in jurisdiction 'ZZ'", ("residency: [EU, ZZ]", "ZZ"),
         "check the spelling against the sites' jurisdiction", "warning"),
    case("demand-over-capacity-at-the-workloads", BASE.replace(H100_TRAIN, "    gpu: {types: [L4], count: 3}\n"
                                                               "    replicas: 3\n"),
         "demand-exceeds-capacity", "demand for L4 (9 GPUs) exceeds the capacity of L4 pools (8 GPUs); some "
         "workloads will stay unplaced", ("  - name: train", "-"),
         "add capacity, or accept that the plan lists them as unplaced", "warning"),
    case("replica-larger-than-every-pool-at-its-count",
         ONE_L4_POOL.replace(H100_TRAIN, "    gpu: {types: [L4], count: 8, multi_node: true}\n    sites: [dc-a]\n"),
         "replica-fits-no-pool", "workload train: a replica needs 8 GPUs, and no eligible pool holds one (the "
         "largest, a-l4, holds 4 GPUs)", ("count: 8, multi_node", "8"),
         "lower gpu.count, or raise the capacity (gpus / max_gpus) of an eligible pool"),
    case("no-pool-in-the-residency", BASE + "    datasets: [ds-eu]\n    sites: [aws-use1]\n",
         "no-eligible-pool:residency", "workload train: no pool is eligible: dataset ds-eu must stay in EU but the "
         "remaining pools are in US", ("  - name: train", "name"),
         "add a pool in an allowed jurisdiction, or widen the dataset's residency"),
    case("no-pool-near-enough", BASE + "    latency: {region: eu-users, p95_ms: 5}\n", "no-eligible-pool:latency",
         "workload train: no pool is eligible: latency to eu-users must be ≤ 5 ms; the nearest remaining site is "
         "10 ms away", ("  - name: train", "name"), "relax latency.p95_ms, or add a pool closer to that region"),
    case("no-pool-in-the-allow-list", POOLLESS_SITE.replace("    hours_per_month: 100\n",
                                                            "    hours_per_month: 100\n    sites: [edge-empty]\n"),
         "no-eligible-pool:sites", "workload train: no pool is eligible: no pool at the allowed sites "
         "(sites: ['edge-empty'])", ("  - name: train", "name"), "widen the workload's `sites` allow-list"),
    case("onprem-pool-without-a-price", BASE.replace(", usd_per_gpu_hour: 0.5}", "}"), "missing-field",
         "pool a-l4: an onprem pool needs `usd_per_gpu_hour` (the amortized cost of owned hardware)",
         ("name: a-l4", "{"), "add `usd_per_gpu_hour:`; only cloud pools default to a catalog price"),
    case("unknown-field-at-its-key",
         BASE.replace("usd_per_gpu_hour: 2.0}", "usd_per_gpu_hour: 2.0, interuptions_per_day: 1}"), "unknown-field",
         "sites[0].pools[0].interuptions_per_day: unknown field 'interuptions_per_day'",
         ("interuptions_per_day", "interuptions_per_day"), "did you mean 'interruptions_per_day'?"),
    # the models' own validators: the value described, at the value, with the validator's hint
    case("host-name", BASE.replace("{name: a-01, address", "{name: a_01!, address"), "invalid-value",
         "sites[0].hosts[0].name: 'a_01!' (text) is not a host name", ("a_01!", "a_01!"),
         "use letters, digits, '-' and '.', as in a DNS name (fra-gpu-01 or fra-gpu-01.example.internal)"),
    case("host-address-that-looks-like-a-bad-ip", BASE.replace("address: 10.0.0.1,", "address: 10.0.0.300,"),
         "invalid-value", "sites[0].hosts[0].address: '10.0.0.300' (text) is not a host name or an IP address",
         ("10.0.0.300", "10.0.0.300"), "write the DNS name or the IP address that ssh connects to (10.0.0.11, "
         "2001:db8::11, gpu-01.example.internal); no spaces, quotes, '$', ';', braces or a leading '-'"),
    case("host-user", BASE.replace("pool: a-h100}", "pool: a-h100, user: Root}"), "invalid-value",
         "sites[0].hosts[0].user: 'Root' (text) is not a POSIX user name", ("user: Root", "Root"),
         "use a POSIX user name: a lowercase letter or '_', then lowercase letters, digits, '_' or '-' "
         "(at most 32 characters)"),
    # pydantic's own errors, in the loader's words
    case("number-given-as-text", BASE.replace("usd_per_gpu_hour: 0.5}", "usd_per_gpu_hour: cheap}"), "wrong-type",
         "sites[0].pools[1].usd_per_gpu_hour: expected a number, got 'cheap' (text)", ("cheap", "cheap"),
         "write numbers without quotes or units: `8`, `2.5`"),
    case("mapping-given-as-a-number", BASE.replace("name: test\n", "name: test\npolicies: 5\n"), "wrong-type",
         "policies: expected a mapping, got 5", ("policies: 5", "5"),
         "write a mapping: `policies:` then its fields indented below it, or `policies: {field: value}`"),
    case("below-the-lower-bound", BASE.replace("gpus: 16,", "gpus: 0,"), "out-of-range",
         "sites[0].pools[0].gpus: 0 is too small: it must be above 0", ("gpus: 0,", "0, capacity"),
         "every number has a documented lower bound (docs/inventory-format.md); check the units and the value"),
    case("choice-that-is-not-the-version", BASE.replace("provider: aws", "provider: oci"), "invalid-choice",
         "sites[1].provider: 'oci' (text) is not one of 'aws', 'gcp' or 'azure'", ("provider: oci", "oci"),
         "use one of the listed values, spelled exactly"),
    case("realtime-part-time", REALTIME.replace("hours_per_month: 100", "hours_per_month: 729"), "realtime-part-time",
         "workload train: realtime_inference with hours_per_month 729 (below 730): it is planned and costed as if it "
         "ran only that long", ("hours_per_month: 729", "729"),
         "remove hours_per_month (always on), or use batch_inference for part-time work", "warning"),
    case("partial-node-quota", BASE.replace("max_gpus: 64,", "max_gpus: 60,"), "partial-node-quota",
         "pool use1-p5: max_gpus 60 is not a multiple of 8 GPUs per p5.48xlarge node", ("max_gpus: 60", "60"),
         "the node group can only use whole nodes", "warning"),
    case("duplicate-pool-at-the-second", BASE.replace("{name: use1-p5-spot,", "{name: a-l4,"), "duplicate-name",
         "pool 'a-l4' is defined twice (first at inv.yaml:15:9)", ("{name: a-l4, gpu: H100", "{"),
         "rename one of the two pools"),
    case("yaml-syntax", BASE.replace("regions: [eu-users, us-users]", "regions: [eu-users, us-users"), "yaml-syntax",
         "inv.yaml: did not find expected ',' or ']'", ("sites:", ":"),
         "fix the YAML syntax at this position (indentation, quotes, colons)"),
    case("token", BASE.replace("jurisdiction: EU", "jurisdiction: E U"), "invalid-value",
         "sites[0].jurisdiction: 'E U' (text) is not a token", ("jurisdiction: E U", "E U"),
         "use one word of letters, digits, '.', '_' and '-' (at most 64 characters), such as EU, us-east-1, "
         "A100-80GB or fra-row-a"),
    case("above-the-upper-bound", BASE.replace("gpus: 16,", "gpus: 2000000,"), "out-of-range",
         "sites[0].pools[0].gpus: 2000000 is above the upper bound of 1000000", ("gpus: 2000000", "2000000"),
         "every number has a documented upper bound (docs/inventory-format.md); check the units and the value"),
    case("list-given-as-text", BASE.replace("regions: [eu-users, us-users]", "regions: eu-users"), "wrong-type",
         "regions: expected a list, got 'eu-users' (text)", ("regions: eu-users", "eu-users"),
         "write a list: `regions: [a, b]`, or one item a line, each starting with '- '"),
    case("text-given-as-a-number", BASE.replace("jurisdiction: EU", "jurisdiction: 1.0"), "wrong-type",
         "sites[0].jurisdiction: expected text, got 1.0", ("jurisdiction: 1.0", "1.0"),
         "quote text that YAML would read as a number, a boolean or a date: `'1.0'`, `'yes'`"),
    case("boolean-given-as-text", BASE.replace("hours_per_month: 100", "hours_per_month: 100\n    preemptible: maybe"),
         "wrong-type", "workloads[0].preemptible: expected true or false, got 'maybe' (text)", ("maybe", "maybe"),
         "write true or false, without quotes"),
    case("hours-below-a-quarter-hour", BASE.replace("hours_per_month: 100", "hours_per_month: 1e-9"), "out-of-range",
         "workloads[0].hours_per_month: 1e-09 is too small: it must be at least 0.25", ("hours_per_month: 1e-9", "1e-9"),
         "every number has a documented lower bound (docs/inventory-format.md); check the units and the value"),
    case("top-level-not-a-mapping", "- 1\n", "not-a-mapping",
         "inv.yaml: the top level must be a mapping of keys (version, name, sites, ...)", ("- 1", "-"),
         "start the file with `version: 1`"),
]


@pytest.mark.parametrize(("text", "code", "message", "where", "hint", "severity"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_the_whole_diagnostic(text: str, code: str, message: str, where: str, hint: str | None,
                              severity: str) -> None:
    found = [d for d in diagnostics(text) if d.code == code]
    assert found, f"no {code} in {diagnostics(text)}"
    d = found[0]
    assert (d.message, str(d.location), d.hint, d.severity.value) == (message, where, hint, severity)


class TestBoundaries:
    def test_a_replica_as_large_as_a_committed_pool_fits_it(self) -> None:
        # a-l4 holds 8 GPUs in machines of 8: an 8-GPU replica fits exactly
        text = BASE.replace(H100_TRAIN, "    gpu: {types: [L4], count: 8}\n    sites: [dc-a]\n")
        assert diagnostics(text) == []

    def test_demand_equal_to_the_capacity_of_its_types_is_no_warning(self) -> None:
        # 2 replicas × 4 L4 = the 8 GPUs of a-l4, the only L4 pool
        text = BASE.replace(H100_TRAIN, "    gpu: {types: [L4], count: 4}\n    replicas: 2\n")
        assert diagnostics(text) == []

    def test_realtime_work_declared_at_the_full_730_hours_is_no_warning(self) -> None:
        assert diagnostics(REALTIME.replace("hours_per_month: 100", "hours_per_month: 730")) == []
