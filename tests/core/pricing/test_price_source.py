"""Prices with a source: the catalog records the region and date of each list price, and a pool priced
from another region's list says so in the plan (its `price_source`, the JSON, the summary)."""

from __future__ import annotations

from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.serialize import plan_from_json, plan_to_json_utf8
from hybridctl.core.plan.summary import summarize
from hybridctl.render.plan_summary import summary_rows

# two p5 pools without a price of their own, one in the list's region and one elsewhere, and one
# with its own price; the catalog's p5.48xlarge list price is us-east-1's, read on 2025-06-05
FLEET = """\
version: 1
name: regions
regions: [eu-users]
sites:
  - name: aws-euw1
    kind: cloud
    provider: aws
    region: eu-west-1
    cluster: k-euw1
    jurisdiction: EU
    egress_usd_per_gb: 0.09
    latency_ms: {eu-users: 10}
    pools:
      - {name: euw1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, capacity_type: on_demand}
      - {name: euw1-l4, gpu: L4, instance_type: g6.xlarge, max_gpus: 4, capacity_type: on_demand, usd_per_gpu_hour: 0.9}
  - name: aws-use1
    kind: cloud
    provider: aws
    region: us-east-1
    cluster: k-use1
    jurisdiction: EU
    egress_usd_per_gb: 0.09
    latency_ms: {eu-users: 90}
    pools:
      - {name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, capacity_type: on_demand}
datasets: []
workloads:
  - {name: train, type: training, gpu: {types: [H100], count: 8}, hours_per_month: 100}
  - {name: api, type: realtime_inference, gpu: {types: [L4], count: 1}}
"""


def _planned():
    loaded = load_sources([Source("fleet.yaml", FLEET)])
    return loaded, plan(loaded.inventory)


def test_the_catalog_records_the_region_and_date_of_each_list_price() -> None:
    instances = catalog().instances
    assert instances and all(i.price_region == "us-east-1" for i in instances.values() if i.provider == "aws")
    assert all(p.region and p.read_on for i in instances.values() for p in i.prices)
    assert instances["p5.48xlarge"].price_read_on.isoformat() == "2025-06-05"


def test_a_pool_priced_from_another_regions_list_says_so() -> None:
    _, result = _planned()
    sources = {p.pool: p.price_source for p in result.pools}
    assert sources == {"euw1-p5": "us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for eu-west-1",
                       "euw1-l4": "",  # its own price
                       "use1-p5": "us-east-1 list price of 2025-06-05"}


def test_the_plan_file_keeps_the_source() -> None:
    _, result = _planned()
    again = plan_from_json(plan_to_json_utf8(result).decode())
    assert [p.price_source for p in again.pools] == [p.price_source for p in result.pools]


def test_the_summary_names_the_pools_priced_from_another_region() -> None:
    _, result = _planned()
    rows = summary_rows(result, summarize(result))
    assert ("prices:", "euw1-p5: us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for eu-west-1") in rows
    assert not any("use1-p5" in text for label, text in rows if label == "prices:")


def test_validate_warns_of_the_same_pool() -> None:
    loaded, _ = _planned()
    [warning] = [d for d in loaded.warnings if d.code == "price-from-another-region"]
    assert warning.message == ("pool euw1-p5: priced from the catalog's us-east-1 list price of 2025-06-05 for "
                               "p5.48xlarge, and site aws-euw1 is in eu-west-1")
    assert warning.hint == "set usd_per_gpu_hour to what a GPU-hour costs in eu-west-1"
    assert warning.location is not None and warning.location.line == FLEET.splitlines().index(
        "      - {name: euw1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, capacity_type: on_demand}") + 1


def test_the_summary_names_two_sources_and_counts_the_rest() -> None:
    import dataclasses

    _, result = _planned()
    template = result.pools[0]
    pools = tuple(dataclasses.replace(template, pool=f"p-{region}", price_source=f"us-east-1 list price of "
                                      f"2025-06-05; set usd_per_gpu_hour for {region}")
                  for region in ("ap-south-1", "eu-west-1", "eu-west-1b", "sa-east-1"))
    lines = [text for label, text in summary_rows(dataclasses.replace(result, pools=pools), summarize(result))
             if "list price" in text or "another region" in text]
    assert lines == ["p-ap-south-1: us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for ap-south-1",
                     "p-eu-west-1: us-east-1 list price of 2025-06-05; set usd_per_gpu_hour for eu-west-1",
                     "… and 2 more pool(s) priced from another region's list (price_source)"]
