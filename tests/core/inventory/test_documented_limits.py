"""Every documented limit of the inventory format (docs/inventory-format.md) as a boundary pair: the
value at the limit loads, the value just past it is refused at the field. Planted bugs hid at these
edges (`>` for `>=`, a limit off by one) where a test of a typical value saw nothing (issue 45 item 8)."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from support.examples import BASE

POOL = "{name: a-h100, gpu: H100, gpus: 16, capacity_type: reserved, usd_per_gpu_hour: 2.0}"
SPOT = "{name: use1-p5-spot, gpu: H100, instance_type: p5.48xlarge, max_gpus: 32, capacity_type: spot, usd_per_gpu_hour: 2.5}"
OD = "{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}"
HOST = "{name: a-01, address: 10.0.0.1, pool: a-h100}"
TRAIN = "    hours_per_month: 100\n"


def edit(old: str, new: str) -> str:
    assert BASE.count(old) == 1, old
    return BASE.replace(old, new)


def policy(line: str) -> str:
    return edit("regions: [eu-users, us-users]\n", f"regions: [eu-users, us-users]\npolicies:\n  {line}\n")


def site(line: str) -> str:
    return edit("    egress_usd_per_gb: 0.02\n", f"    egress_usd_per_gb: 0.02\n    {line}\n")


def workload(line: str) -> str:
    return edit(TRAIN, f"{TRAIN}    {line}\n")


def pool(fields: str) -> str:
    return edit(POOL, POOL[:-1] + f", {fields}}}")


# field, text with the value at the limit, text with the value just past it
PAIRS: list[tuple[str, str, str]] = [
    ("failover_max_price_ratio", policy("failover_max_price_ratio: 1"), policy("failover_max_price_ratio: 0.999")),
    ("failover_max_price_ratio", policy("failover_max_price_ratio: 1000"), policy("failover_max_price_ratio: 1000.001")),
    ("monthly_budget_usd", policy("monthly_budget_usd: 0"), policy("monthly_budget_usd: -0.01")),
    ("monthly_budget_usd", policy("monthly_budget_usd: 1e12"), policy("monthly_budget_usd: 1.000001e12")),
    ("spread_fixed_across", policy("spread_fixed_across: 1"), policy("spread_fixed_across: 0")),
    ("spread_fixed_across", policy("spread_fixed_across: 1000"), policy("spread_fixed_across: 1001")),
    ("egress_usd_per_gb", edit("egress_usd_per_gb: 0.02", "egress_usd_per_gb: 0"),
     edit("egress_usd_per_gb: 0.02", "egress_usd_per_gb: -0.001")),
    ("egress_usd_per_gb", edit("egress_usd_per_gb: 0.02", "egress_usd_per_gb: 100"),
     edit("egress_usd_per_gb: 0.02", "egress_usd_per_gb: 100.001")),
    ("latency_ms", edit("{eu-users: 10, us-users: 90}", "{eu-users: 0, us-users: 100000}"),
     edit("{eu-users: 10, us-users: 90}", "{eu-users: 10, us-users: 100000.5}")),
    ("latency_ms", edit("{eu-users: 10, us-users: 90}", "{eu-users: 0, us-users: 90}"),
     edit("{eu-users: 10, us-users: 90}", "{eu-users: -0.5, us-users: 90}")),
    ("uplink_mbps", site("uplink_mbps: 1e7"), site("uplink_mbps: 1.0001e7")),
    ("provision_minutes", site("provision_minutes: 0"), site("provision_minutes: -0.5")),
    ("provision_minutes", site("provision_minutes: 1000000"), site("provision_minutes: 1000000.5")),
    ("teams", site("teams: [" + ", ".join(f"t{i}" for i in range(1000)) + "]"),
     site("teams: [" + ", ".join(f"t{i}" for i in range(1001)) + "]")),
    ("teams", site("teams: [t0]"), site("teams: []")),
    ("port", edit(HOST, HOST[:-1] + ", port: 65535}"), edit(HOST, HOST[:-1] + ", port: 65536}")),
    ("port", edit(HOST, HOST[:-1] + ", port: 1}"), edit(HOST, HOST[:-1] + ", port: 0}")),
    ("user", edit(HOST, HOST[:-1] + ", user: " + "u" * 32 + "}"), edit(HOST, HOST[:-1] + ", user: " + "u" * 33 + "}")),
    ("gpus", edit("gpus: 16,", "gpus: 1000000,"), edit("gpus: 16,", "gpus: 1000001,")),
    ("gpus", edit("gpus: 8,", "gpus: 1,"), edit("gpus: 8,", "gpus: 0,")),
    ("max_gpus", edit("max_gpus: 64,", "max_gpus: 1000000,"), edit("max_gpus: 64,", "max_gpus: 1000001,")),
    ("max_gpus", edit("max_gpus: 64,", "max_gpus: 1,"), edit("max_gpus: 64,", "max_gpus: 0,")),
    ("usd_per_gpu_hour", edit("usd_per_gpu_hour: 2.0", "usd_per_gpu_hour: 10000"),
     edit("usd_per_gpu_hour: 2.0", "usd_per_gpu_hour: 10000.01")),
    ("usd_per_gpu_hour", edit("usd_per_gpu_hour: 2.0", "usd_per_gpu_hour: 0"),
     edit("usd_per_gpu_hour: 2.0", "usd_per_gpu_hour: -0.01")),
    ("usd_per_gpu_hour", edit(OD, OD[:-1] + ", usd_per_gpu_hour: 10000}"),
     edit(OD, OD[:-1] + ", usd_per_gpu_hour: 10000.01}")),
    ("interruptions_per_day", edit(SPOT, SPOT[:-1] + ", interruptions_per_day: 1000}"),
     edit(SPOT, SPOT[:-1] + ", interruptions_per_day: 1000.5}")),
    ("interruptions_per_day", edit(SPOT, SPOT[:-1] + ", interruptions_per_day: 0}"),
     edit(SPOT, SPOT[:-1] + ", interruptions_per_day: -0.5}")),
    ("gpus_per_node", edit("gpus: 16,", "gpus: 64, gpus_per_node: 64,"), edit("gpus: 16,", "gpus: 65, gpus_per_node: 65,")),
    ("gpus_per_node", pool("gpus_per_node: 16"), pool("gpus_per_node: 17")),
    ("gpus_per_node", pool("gpus_per_node: 1"), pool("gpus_per_node: 0")),
    ("size_gb", edit("size_gb: 100,", "size_gb: 1e9,"), edit("size_gb: 100,", "size_gb: 1.000001e9,")),
    ("size_gb", edit("size_gb: 100,", "size_gb: 0,"), edit("size_gb: 100,", "size_gb: -1,")),
    ("replicas", workload("replicas: 100000"), workload("replicas: 100001")),
    ("replicas", workload("replicas: 1"), workload("replicas: 0")),
    ("hours_per_month", edit(TRAIN, "    hours_per_month: 744\n"), edit(TRAIN, "    hours_per_month: 744.01\n")),
    ("hours_per_month", edit(TRAIN, "    hours_per_month: 0.25\n"), edit(TRAIN, "    hours_per_month: 0.24\n")),
    ("data_passes_per_month", workload("data_passes_per_month: 10000"), workload("data_passes_per_month: 10000.5")),
    ("data_passes_per_month", workload("data_passes_per_month: 0"), workload("data_passes_per_month: -0.5")),
    ("p95_ms", workload("latency: {region: eu-users, p95_ms: 100000}"),
     workload("latency: {region: eu-users, p95_ms: 100000.5}")),
    ("p95_ms", workload("latency: {region: eu-users, p95_ms: 0.001}"), workload("latency: {region: eu-users, p95_ms: 0}")),
    ("checkpoint_minutes", workload("checkpoint_minutes: 1000000"), workload("checkpoint_minutes: 1000000.5")),
    ("checkpoint_minutes", workload("checkpoint_minutes: 0.001"), workload("checkpoint_minutes: 0")),
    ("rto_minutes", workload("rto_minutes: 1000000"), workload("rto_minutes: 1000000.5")),
    ("rto_minutes", workload("rto_minutes: 0.001"), workload("rto_minutes: 0")),
    ("max_usd_per_month", workload("max_usd_per_month: 1e12"), workload("max_usd_per_month: 1.000001e12")),
    ("max_usd_per_month", workload("max_usd_per_month: 0"), workload("max_usd_per_month: -0.01")),
    ("model_gb", workload("model_gb: 1000000"), workload("model_gb: 1000000.5")),
    ("model_gb", workload("model_gb: 0"), workload("model_gb: -0.5")),
    ("spread", workload("spread: 1000"), workload("spread: 1001")),
    ("spread", workload("spread: 1"), workload("spread: 0")),
    ("count", edit("count: 8}", "count: 4096}"), edit("count: 8}", "count: 4097}")),
    ("count", edit("count: 8}", "count: 1}"), edit("count: 8}", "count: 0}")),
    ("fallback", workload("fallback: {gpu: {types: [H100], count: 8}, replicas: 1}"),
     workload("fallback: {gpu: {types: [H100], count: 8}, replicas: 2}")),
]
NAMES = {"name": ("name: test\n", "name: {}\n"), "site": ("  - name: dc-a\n", "  - name: {}\n"),
         "pool": ("{name: a-l4,", "{{name: {},"), "dataset": ("{name: ds-eu,", "{{name: {},"),
         "workload": ("  - name: train\n", "  - name: {}\n"), "team": (TRAIN, TRAIN + "    team: {}\n")}
for what, (old, new) in NAMES.items():
    PAIRS.append((what, edit(old, new.format("n" * 63)), edit(old, new.format("n" * 64))))


def problems(text: str) -> list[tuple[str, str]]:
    """(code, message) of every diagnostic loading `text` gives (errors refuse it, and so do the
    warnings a limit needs none of)."""
    try:
        load_sources([Source("inv.yaml", text)])
    except InvalidInventoryError as refused:
        return [(d.code, d.message) for d in refused.diagnostics]
    return []


@pytest.mark.parametrize(("field", "inside", "outside"), PAIRS, ids=[f"{p[0]}-{i}" for i, p in enumerate(PAIRS)])
def test_the_limit_loads_and_one_past_it_is_refused(field: str, inside: str, outside: str) -> None:
    accepted = problems(inside)
    refused = [p for p in problems(outside) if p not in accepted]
    assert refused, f"{field}: a value just past the documented limit loads"
    assert any(field in message or field.replace("_", " ") in message for _, message in refused), refused
    # the value at the limit gives none of the diagnostics the value past it gives
    assert not {code for code, _ in refused} & {code for code, _ in accepted}, accepted
