"""Every regex-checked inventory field given a valid value with one bad character after it (issue 45 item 8):
a planted `.match` where `.fullmatch` was meant (or a `$` that lets a final newline through) passes the
valid prefix and lets the rest through; here each is refused with a diagnostic, never loaded."""

from __future__ import annotations

import json

import pytest
from hybridctl.core.inventory.diagnostics import InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from support.examples import BASE

WINDOW = '    schedule:\n      windows:\n        - {days: mon-fri, from: "20:00", to: "06:00", tz: Europe/Amsterdam}\n'
BASE_WINDOWS = BASE.replace("    hours_per_month: 100\n", WINDOW)
RESERVED = "{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}"
# a zone is checked as one where the pool needs it: a capacity reservation's (elsewhere a failure_domain is a token)
ZONED = ("{{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: reserved, "
         "reservation_id: cr-0123456789abcdef0, failure_domain: {}}}")
ALWAYS_BAD = ["!", "/", "\n", "\x1b", "é", " x", ";", "$", "*"]
NAME_BAD = [*ALWAYS_BAD, "_", ".", "A", "-"]  # a DNS label: no '_', '.', capitals, nor a final '-'
# field: (text in BASE_WINDOWS, the same with {} for the value, the valid value, bad suffixes)
FIELDS: dict[str, tuple[str, str, str, list[str]]] = {
    # a final '-' in the inventory's name is issue 45 item 7's (inventory names become DNS labels), elsewhere
    "inventory name": ("name: test\n", "name: {}\n", "test", NAME_BAD[:-1]),
    "site name": ("  - name: dc-a\n", "  - name: {}\n", "dc-a", NAME_BAD),
    "pool name": ("{name: a-l4,", "{{name: {},", "a-l4", NAME_BAD),
    "dataset name": ("{name: ds-eu,", "{{name: {},", "ds-eu", NAME_BAD),
    "workload name": ("  - name: train\n", "  - name: {}\n", "train", NAME_BAD),
    "team": ("    type: training\n", "    type: training\n    team: {}\n", "ml", NAME_BAD),
    "cluster": ("    cluster: ml\n", "    cluster: {}\n", "ml", NAME_BAD),
    "host name": ("{name: a-01,", "{{name: {},", "a-01", [*ALWAYS_BAD, "_", "-"]),
    "host address": ("address: 10.0.0.1,", "address: {},", "10.0.0.1", [*ALWAYS_BAD, "_", "/24", ":22", "@x"]),
    "host user": ("pool: a-h100}", "pool: a-h100, user: {}}}", "ubuntu", [*ALWAYS_BAD, ".", "A", "@"]),
    "host pool": ("pool: a-h100}", "pool: {}}}", "a-h100", NAME_BAD),
    "jurisdiction": ("    jurisdiction: EU\n", "    jurisdiction: {}\n", "EU", ALWAYS_BAD),
    "failure_domain": ("    failure_domain: a\n", "    failure_domain: {}\n", "a", ALWAYS_BAD),
    "region": ("    region: us-east-1\n", "    region: {}\n", "us-east-1", ALWAYS_BAD),
    "user region": ("regions: [eu-users, us-users]", "regions: [eu-users, {}]", "us-users", ALWAYS_BAD),
    "instance_type": ("max_gpus: 32, capacity_type: spot", "max_gpus: 32, capacity_type: spot", "", []),
    "zone": (RESERVED, ZONED, "us-east-1a", [*ALWAYS_BAD, "1", "b"]),
    "zone id": (RESERVED, ZONED, "use1-az1", [*ALWAYS_BAD, "x", "-"]),
    "gpu type": ("gpu: {types: [H100], count: 8}", "gpu: {{types: [{}], count: 8}}", "H100", [*ALWAYS_BAD, "x", "-"]),
    "workload type": ("    type: training\n", "    type: {}\n", "training", [*ALWAYS_BAD, "s", "_"]),
    "tz": ("tz: Europe/Amsterdam}", "tz: {}}}", "Europe/Amsterdam", [*ALWAYS_BAD, "x", "/", "/.."]),
    "days": ("days: mon-fri,", "days: {},", "mon-fri", [*ALWAYS_BAD, "x", "-", "-sat"]),
    "from": ('from: "20:00"', "from: {}", "20:00", [*ALWAYS_BAD, "0", ":00", "x"]),
    "to": ('to: "06:00"', "to: {}", "06:00", [*ALWAYS_BAD, "0", ":00", "x"]),
    "dataset residency": ("residency: [EU]", "residency: [{}]", "EU", ALWAYS_BAD),
    "workload dataset": ("    type: training\n", "    type: training\n    datasets: [{}]\n", "ds-eu", NAME_BAD),
}
FIELDS.pop("instance_type")
FIELDS["instance_type"] = ("instance_type: p5.48xlarge, max_gpus: 64", "instance_type: {}, max_gpus: 64", "p5.48xlarge",
                           [*ALWAYS_BAD, "x", "-"])
FIELDS["reservation_id"] = (RESERVED, "{{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, "
                            "capacity_type: reserved, failure_domain: us-east-1a, reservation_id: {}}}",
                            "cr-0123456789abcdef0", [*ALWAYS_BAD, "0", "g", "A"])


def text_with(field: str, value: str) -> str:
    old, new, _, _ = FIELDS[field]
    assert BASE_WINDOWS.count(old) == 1, (field, old)
    return BASE_WINDOWS.replace(old, new.format(json.dumps(value)))  # JSON strings are YAML double-quoted scalars


def diagnostics(text: str) -> list[str]:
    try:
        load_sources([Source("inv.yaml", text)])
    except InvalidInventoryError as refused:
        return [f"{d.code}: {d.message}" for d in refused.diagnostics]
    return []


@pytest.mark.parametrize("field", sorted(FIELDS))
def test_the_valid_value_loads(field: str) -> None:
    assert diagnostics(text_with(field, FIELDS[field][2])) == []


CASES = [(field, bad) for field in sorted(FIELDS) for bad in FIELDS[field][3]]


@pytest.mark.parametrize(("field", "bad"), CASES, ids=[f"{f}-{b.encode('unicode_escape').decode()}" for f, b in CASES])
def test_one_bad_character_after_a_valid_prefix_is_refused(field: str, bad: str) -> None:
    assert diagnostics(text_with(field, FIELDS[field][2] + bad)), f"{field} {FIELDS[field][2] + bad!r} loads"
