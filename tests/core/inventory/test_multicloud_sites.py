"""Revision 4: sites on Google Cloud and Azure, the catalog's machine types with list prices per region, and
every mistake about them at its line with a hint. Each test fails on the AWS-only format and catalog."""

from __future__ import annotations

import pytest
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import plan

AZURE_GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ml-weu/providers/"
               "Microsoft.Compute/capacityReservationGroups/nd-h100")


def fleet(gcp_pool: str = "{name: usc1-a3, gpu: H100, instance_type: a3-highgpu-8g, max_gpus: 16, "
                          "capacity_type: on_demand}",
          azure_pool: str = "{name: eus-nc, gpu: A100-80GB, instance_type: Standard_NC24ads_A100_v4, "
                            "max_gpus: 4, capacity_type: spot}",
          azure_region: str = "eastus") -> str:
    return f"""\
version: 1
name: multi
regions: [us-users]
sites:
  - name: gcp-usc1
    kind: cloud
    provider: gcp
    region: us-central1
    cluster: gke-usc1
    jurisdiction: US
    egress_usd_per_gb: 0.12
    latency_ms: {{us-users: 20}}
    pools:
      - {gcp_pool}
  - name: az-eus
    kind: cloud
    provider: azure
    region: {azure_region}
    cluster: aks-eus
    jurisdiction: US
    egress_usd_per_gb: 0.087
    latency_ms: {{us-users: 15}}
    pools:
      - {azure_pool}
workloads:
  - {{name: api, type: realtime_inference, gpu: {{types: [H100], count: 8}}}}
  - {{name: small, type: batch_inference, gpu: {{types: [A100-80GB], count: 1}}, hours_per_month: 100,
     preemptible: true, checkpoint_minutes: 10}}
"""


def load(text: str):  # type: ignore[no-untyped-def]
    return load_sources([Source("multi.yaml", text)])


def errors(text: str, code: str) -> list[Diagnostic]:
    try:
        load(text)
    except InvalidInventoryError as exc:
        return [d for d in exc.diagnostics if d.code == code]
    return []


def line_of(text: str, marker: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if marker in line)


def test_the_catalog_knows_the_specs_gcp_and_azure_types_with_prices_per_region() -> None:
    instances = catalog().instances
    expected = {"a3-highgpu-8g": ("gcp", "H100", 8), "a3-highgpu-1g": ("gcp", "H100", 1),
                "a3-megagpu-8g": ("gcp", "H100", 8), "a2-ultragpu-8g": ("gcp", "A100-80GB", 8),
                "a2-highgpu-1g": ("gcp", "A100-40GB", 1), "g2-standard-4": ("gcp", "L4", 1),
                "g2-standard-48": ("gcp", "L4", 4),
                "Standard_ND96isr_H100_v5": ("azure", "H100", 8), "Standard_NC40ads_H100_v5": ("azure", "H100", 1),
                "Standard_ND96amsr_A100_v4": ("azure", "A100-80GB", 8),
                "Standard_NC24ads_A100_v4": ("azure", "A100-80GB", 1), "Standard_NC4as_T4_v3": ("azure", "T4", 1)}
    for name, (provider, gpu, per_node) in expected.items():
        instance = instances[name]
        assert (instance.provider, instance.gpu, instance.gpus_per_node) == (provider, gpu, per_node), name
        assert len(instance.prices) >= 2 and all(p.read_on.isoformat() == "2026-12-02" for p in instance.prices)
    assert instances["a3-highgpu-8g"].price_in("europe-west4").usd_per_hour == 111.81719


def test_aws_types_have_the_users_regions_where_the_public_list_had_them() -> None:
    g4dn = catalog().instances["g4dn.xlarge"]
    assert g4dn.regions == ("us-east-1", "us-west-2", "eu-west-1", "eu-central-1")
    assert g4dn.price_in("eu-central-1").usd_per_hour == 0.658


@pytest.mark.parametrize(("name", "region", "used"), [
    ("g4dn.xlarge", "eu-west-2", "eu-west-1"),  # same part of the world, the most alike name
    ("g4dn.xlarge", "ap-south-1", "us-east-1"),  # none near: the home price
    ("g2-standard-4", "europe-west3", "europe-west4"),
    ("Standard_NC4as_T4_v3", "eastus", "eastus"),
])
def test_a_region_without_a_price_takes_the_nearest_listed_one(name: str, region: str, used: str) -> None:
    assert catalog().instances[name].price_in(region).region == used


def test_a_three_provider_inventory_validates_and_plans_at_the_regions_prices() -> None:
    loaded = load(fleet())
    assert not loaded.warnings
    result = plan(loaded.inventory)
    prices = {p.pool: p.usd_per_gpu_hour for p in result.pools}
    assert prices["usc1-a3"] == round(43.06615 / 8, 4) and prices["eus-nc"] == 3.673
    assert not result.unplaced


def test_a_pool_in_a_region_the_catalog_has_no_price_for_is_warned_of_naming_the_price_used() -> None:
    # westus3 is listed for this size: no warning there; westeurope takes the home (eastus) price
    assert not [d for d in load(fleet(azure_region="westus3")).warnings if d.code == "price-from-another-region"]
    text = fleet(azure_region="westeurope")
    [warning] = [d for d in load(text).warnings if d.code == "price-from-another-region"]
    assert warning.message == ("pool eus-nc: priced from the catalog's eastus list price of 2026-12-02 for "
                               "Standard_NC24ads_A100_v4, and site az-eus is in westeurope")
    assert warning.location is not None and warning.location.line == line_of(text, "{name: eus-nc")


def test_an_aws_instance_type_on_a_gcp_site_is_an_error_naming_the_providers_types() -> None:
    text = fleet(gcp_pool="{name: usc1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, "
                          "capacity_type: on_demand}")
    [error] = errors(text, "instance-provider-mismatch")
    assert error.message == ("pool usc1-p5: p5.48xlarge is an AWS instance type, and site gcp-usc1 is on "
                             "Google Cloud (provider: gcp)")
    assert error.hint == "use a Google Cloud machine type with H100 GPUs: a3-highgpu-1g, a3-highgpu-8g, a3-megagpu-8g"
    assert error.location is not None and error.location.line == line_of(text, "{name: usc1-p5")


def test_an_unknown_machine_type_names_the_nearest_of_its_provider() -> None:
    text = fleet(azure_pool="{name: eus-nc, gpu: A100-80GB, instance_type: Standard_NC24ads_A100_v5, "
                            "max_gpus: 4, capacity_type: spot}")
    [error] = errors(text, "unknown-instance-type")
    assert error.hint is not None and error.hint.startswith("did you mean 'Standard_NC24ads_A100_v4'")
    assert "p4de" not in error.hint


def test_a_zone_of_another_region_is_an_error_at_its_line() -> None:
    text = fleet(gcp_pool="{name: usc1-a3, gpu: H100, instance_type: a3-highgpu-8g, max_gpus: 16, "
                          "capacity_type: on_demand, failure_domain: europe-west4-b}")
    [error] = errors(text, "zone-not-in-region")
    assert error.message == ("pool usc1-a3: failure_domain europe-west4-b is a zone of europe-west4, and site "
                             "gcp-usc1 is in us-central1")
    assert error.hint == "name a zone of us-central1 (e.g. us-central1-a), or move the pool to a site in europe-west4"
    assert error.location is not None and error.location.line == line_of(text, "failure_domain: europe-west4-b")


def test_reservations_take_each_providers_form() -> None:
    ok = fleet(azure_pool=f"{{name: eus-nc, gpu: A100-80GB, instance_type: Standard_NC24ads_A100_v4, max_gpus: 4, "
                          f"capacity_type: reserved, reservation_id: '{AZURE_GROUP}'}}",
               gcp_pool="{name: usc1-a3, gpu: H100, instance_type: a3-highgpu-8g, max_gpus: 16, capacity_type: "
                        "reserved, reservation_id: a3-reserved, failure_domain: us-central1-a}")
    load(ok)  # no error
    wrong = fleet(azure_pool="{name: eus-nc, gpu: A100-80GB, instance_type: Standard_NC24ads_A100_v4, max_gpus: 4, "
                             "capacity_type: reserved, reservation_id: cr-0123456789abcdef0}")
    [error] = errors(wrong, "reservation-id-form")
    assert error.hint is not None and "capacityReservationGroups" in error.hint


def test_a_gcp_reservation_needs_its_zone() -> None:
    text = fleet(gcp_pool="{name: usc1-a3, gpu: H100, instance_type: a3-highgpu-8g, max_gpus: 16, capacity_type: "
                          "reserved, reservation_id: a3-reserved}")
    [error] = errors(text, "reservation-zone")
    assert error.hint is not None and "us-central1-a" in error.hint



def test_the_idle_machine_hint_names_smaller_shapes_of_the_pools_own_provider() -> None:
    from hybridctl.render.plan_summary import shape_hint_lines

    text = fleet().replace("  - {name: small, type: batch_inference", "  - {name: one, type: realtime_inference, "
                           "gpu: {types: [H100], count: 1}, sites: [gcp-usc1]}\n  - {name: small, type: batch_inference")
    [hint] = shape_hint_lines(plan(load(text).inventory))
    assert hint.startswith("usc1-a3: ") and "a3-highgpu-1g" in hint
    assert "p5" not in hint and "Standard_" not in hint
