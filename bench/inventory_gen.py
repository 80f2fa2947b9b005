"""A seeded generator of realistic inventories (format revision 2), for benchmarks and property tests.

Shape: on-prem data centres with several reserved pools of 8-GPU (or 4-GPU) machines, cloud
regions with on-demand and spot pools of real instance types (1-GPU and 4-GPU machines, so that
node shape and whole-machine rounding matter) at list-like prices, a capacity reservation per
region, the smaller on-demand pools split into two availability-zone node groups, and many small
edge sites; datasets, some copied to a second site; workloads drawn from realistic archetypes
(always-on inference with latency budgets, some 4 GPUs wide, some spread across zones; training
that reads large datasets; preemptible sweeps; batch jobs), each with a team, many of them
near-copies of one another as in real fleets. The cost model is cash: committed on-prem capacity
fills first.
"""

from __future__ import annotations

import random
from typing import Any

import yaml

JURISDICTIONS = ["EU", "US", "UK", "APAC"]
REGION_OF = {"EU": "eu-users", "US": "us-users", "UK": "uk-users", "APAC": "apac-users"}
CLOUD_POOLS = [  # gpu, instance type, usd/GPU-h on demand, spot usd/GPU-h
    ("H100", "p5.48xlarge", 6.88, 2.45), ("A100-80GB", "p4de.24xlarge", 3.43, 1.40),
    ("A100-40GB", "p4d.24xlarge", 2.75, 1.10), ("L40S", "g6e.xlarge", 1.86, 0.70),
    ("L40S", "g6e.12xlarge", 2.62, 0.95), ("L4", "g6.xlarge", 0.81, 0.32), ("L4", "g6.12xlarge", 1.15, 0.42),
    ("A10G", "g5.xlarge", 1.01, 0.40), ("T4", "g4dn.xlarge", 0.53, 0.20),
]
PER_NODE = {"p5.48xlarge": 8, "p4de.24xlarge": 8, "p4d.24xlarge": 8, "g6e.12xlarge": 4, "g6.12xlarge": 4,
            "a3-highgpu-8g": 8, "a2-ultragpu-8g": 8, "a2-highgpu-8g": 8, "g2-standard-48": 4,
            "Standard_ND96isr_H100_v5": 8, "Standard_ND96amsr_A100_v4": 8}
# A cloud region on Google Cloud or Azure (inventory revision 4) offers the catalog's types of that provider in
# place of the AWS ones; a shape it has none of is left out of the region.
PROVIDER_TYPES = {"gcp": {"p5.48xlarge": "a3-highgpu-8g", "p4de.24xlarge": "a2-ultragpu-8g",
                          "p4d.24xlarge": "a2-highgpu-8g", "g6.xlarge": "g2-standard-4", "g6.12xlarge": "g2-standard-48"},
                  "azure": {"p5.48xlarge": "Standard_ND96isr_H100_v5", "p4de.24xlarge": "Standard_ND96amsr_A100_v4",
                            "g4dn.xlarge": "Standard_NC4as_T4_v3"}}
_AZURE_GROUP = ("/subscriptions/00000000-0000-0000-0000-{i:012d}/resourceGroups/bench/providers/"
                "Microsoft.Compute/capacityReservationGroups/h100-{i}")
ONPREM_POOLS = [("H100", 1.9), ("A100-80GB", 1.1), ("L40S", 0.75), ("L4", 0.5), ("H200", 2.4)]
TEAMS = ["search", "ads", "support-ai", "fraud-ml", "recommendations", "research", "vision", "platform"]
ARCHETYPES = [  # type, gpu types, count, replicas range, hours choices, weight
    ("realtime_inference", ["L4", "A10G", "L40S"], 1, (2, 6), [730], 30),
    ("realtime_inference", ["L40S", "H100"], 1, (2, 4), [730], 8),
    ("realtime_inference", ["L40S"], 4, (1, 2), [730], 3),  # a 4-GPU model server: node shape matters
    ("training", ["H100", "A100-80GB"], 8, (1, 2), [100, 200, 300], 8),
    ("fine_tuning", ["H100", "A100-80GB", "L40S"], 4, (1, 2), [50, 100], 10),
    ("pretraining", ["H100", "H200"], 8, (1, 3), [400, 600], 2),
    ("evaluation", ["L40S", "A100-80GB", "A100-40GB"], 1, (1, 4), [40, 60], 10),
    ("batch_inference", ["L4", "A10G", "T4"], 1, (1, 6), [100, 200, 300], 12),
    ("embedding", ["L4", "T4", "A10G"], 1, (1, 4), [100, 150], 10),
    ("experiment", ["H100", "A100-80GB", "A100-40GB"], 1, (1, 8), [100, 200], 10),
]


# Windows of scheduled fleets (inventory revision 3), all in UTC so that a fleet's week has few segments
# (about 22: five days' and five nights' edges, and the weekend's): daytime serving, nightly and weekend
# batch. A scheduled batch asks for 80 % of its windows' hours, so the planner chooses them.
DAYTIME = [{"days": "mon-fri", "from": "07:00", "to": "19:00"}]
NIGHTLY = [{"days": "mon-fri", "from": "20:00", "to": "06:00"}]
WEEKEND = [{"days": ["sat", "sun"], "from": "00:00", "to": "24:00"}]
DEFERRED_SHARE = 0.8


def generate(workloads: int, pools: int, seed: int = 1, scheduled: float = 0.0,
             providers: tuple[str, ...] = ("aws",)) -> dict[str, Any]:
    """A fleet; with `scheduled` > 0, that share of its services and jobs (by template: twins stay twins)
    get windows, the jobs with deferrable hours inside them. Cloud region i is on providers[i % len]."""
    rng = random.Random(seed)
    sites: list[dict[str, Any]] = []
    pool_count = 0
    n_onprem = max(1, pools // 30)
    n_cloud = max(1, pools // 25)
    for i in range(n_onprem):
        j = JURISDICTIONS[i % len(JURISDICTIONS)]
        site_pools = []
        for gpu, price in rng.sample(ONPREM_POOLS, k=rng.randint(2, 4)):
            site_pools.append({"name": f"op{i}-{gpu.lower()}", "gpu": gpu, "gpus": rng.choice([16, 32, 64, 128]),
                               "capacity_type": "reserved", "usd_per_gpu_hour": round(price * rng.uniform(0.9, 1.1), 2),
                               "gpus_per_node": 4 if gpu in ("L4", "L40S") and rng.random() < 0.5 else 8})
        sites.append({"name": f"dc-{i}", "kind": "onprem", "jurisdiction": j, "failure_domain": f"dc-{i}",
                      "egress_usd_per_gb": 0.02, "latency_ms": _latencies(rng, j, 10), "uplink_mbps": 10000,
                      "pools": site_pools})
        pool_count += len(site_pools)
    for i in range(n_cloud):
        j = JURISDICTIONS[i % len(JURISDICTIONS)]
        provider = providers[i % len(providers)]
        region = {"gcp": f"gcp-region{i}", "azure": f"azureregion{i}"}.get(provider, f"region-{i}")
        uplift = rng.uniform(1.0, 1.2)
        site_pools = []
        for gpu, aws_instance, od, spot in CLOUD_POOLS:
            instance = PROVIDER_TYPES[provider].get(aws_instance, "") if provider != "aws" else aws_instance
            if not instance:
                continue
            short = aws_instance.replace(".", "-").replace("xlarge", "xl")
            od_pool = {"name": f"c{i}-{short}-od", "gpu": gpu, "instance_type": instance,
                       "max_gpus": rng.choice([64, 128, 256]), "capacity_type": "on_demand",
                       "usd_per_gpu_hour": round(od * uplift, 3)}
            if PER_NODE.get(instance, 1) == 1 and rng.random() < 0.5:
                # one node group per availability zone, for serving that spreads across zones
                for zone in ("a", "b"):
                    site_pools.append({**od_pool, "name": f"c{i}{zone}-{short}-od", "max_gpus": od_pool["max_gpus"] // 2,
                                       "failure_domain": f"cloud-{i}-az-{zone}"})
            else:
                site_pools.append(od_pool)
            if rng.random() < 0.6:
                site_pools.append({"name": f"c{i}-{short}-spot", "gpu": gpu, "instance_type": instance,
                                   "max_gpus": rng.choice([32, 64, 128]), "capacity_type": "spot",
                                   "usd_per_gpu_hour": round(spot * uplift * rng.uniform(0.8, 1.2), 3),
                                   "interruptions_per_day": round(rng.uniform(0.1, 1.0), 2)})
        reserved = {"name": f"c{i}-p5-reserved", "gpu": "H100",
                    "instance_type": "p5.48xlarge" if provider == "aws" else PROVIDER_TYPES[provider]["p5.48xlarge"],
                    "max_gpus": 16, "capacity_type": "reserved", "usd_per_gpu_hour": round(3.9 * uplift, 3),
                    "reservation_id": f"cr-{rng.getrandbits(68):017x}"}
        if provider == "gcp":  # a Compute Engine reservation, zonal
            reserved.update(reservation_id=f"h100-{i}", failure_domain=f"{region}-a")
        elif provider == "azure":
            reserved["reservation_id"] = _AZURE_GROUP.format(i=i)
        site_pools.append(reserved)
        sites.append({"name": f"cloud-{i}", "kind": "cloud", "provider": provider, "region": region,
                      "cluster": f"k8s-{i}", "jurisdiction": j, "egress_usd_per_gb": 0.09,
                      "latency_ms": _latencies(rng, j, 15), "pools": site_pools})
        pool_count += len(site_pools)
    i = 0
    while pool_count < pools:
        j = JURISDICTIONS[i % len(JURISDICTIONS)]
        gpu = rng.choice(["L4", "T4", "L40S"])
        sites.append({"name": f"edge-{i}", "kind": "edge", "jurisdiction": j, "egress_usd_per_gb": 0.05,
                      "max_sensitivity": "confidential",
                      "latency_ms": _latencies(rng, j, 5), "uplink_mbps": rng.choice([200, 500, 1000]),
                      "pools": [{"name": f"edge-{i}-{gpu.lower()}", "gpu": gpu, "gpus": rng.choice([2, 4, 8]),
                                 "capacity_type": "reserved", "usd_per_gpu_hour": 0.6}]})
        pool_count += 1
        i += 1
    datasets = []
    for d in range(max(10, workloads // 50)):
        site = rng.choice(sites)
        sensitivity = rng.choices(["public", "internal", "confidential", "restricted"], [3, 4, 2, 1])[0]
        if sensitivity == "restricted" and site["kind"] == "cloud":
            sensitivity = "confidential"
        dataset = {"name": f"ds-{d}", "site": site["name"], "size_gb": rng.choice([50, 500, 2000, 10000, 40000]),
                   "sensitivity": sensitivity}
        if sensitivity in ("confidential", "restricted"):
            dataset["residency"] = [site["jurisdiction"]]
        if sensitivity == "restricted" and site["kind"] == "edge":
            site["max_sensitivity"] = "restricted"  # a site trusted with the data it holds
        stores = [s["name"] for s in sites if s is not site and s["jurisdiction"] == site["jurisdiction"]
                  and (sensitivity != "restricted" or s["kind"] != "cloud") and s["kind"] != "edge"]
        if stores and rng.random() < 0.3:
            dataset["copies"] = [rng.choice(stores)]
        datasets.append(dataset)
    weights = [a[5] for a in ARCHETYPES]
    items = []
    variants = max(20, workloads // 25)  # fleets hold many near-copies of a few hundred services
    templates = [_workload_template(rng, rng.choices(ARCHETYPES, weights)[0], datasets) for _ in range(variants * 2)]
    templates = _placeable(templates, sites, datasets)[:variants]
    if scheduled > 0:
        timing = random.Random(seed * 7919 + 1)  # apart from the fleet's draws: the same fleet, windows added
        templates = [_scheduled(t, timing) if timing.random() < scheduled else t for t in templates]
    for w in range(workloads):
        template = dict(rng.choice(templates))
        template["name"] = f"w-{w}"
        items.append(template)
    _scale_capacity(sites, items, utilisation=0.55)
    return {"version": 1, "name": f"synthetic-{workloads}-{pools}", "regions": sorted(REGION_OF.values()),
            "policies": {"spread_fixed_across": 2, "cost_model": "cash"}, "sites": sites, "datasets": datasets,
            "workloads": items}


def _base(sites: list[dict[str, Any]], datasets: list[dict[str, Any]], workloads: list[dict[str, Any]]) -> Any:
    from hybridctl.core.inventory.models import Inventory

    return Inventory.model_validate({"version": 1, "name": "probe", "regions": sorted(REGION_OF.values()),
                                     "policies": {"spread_fixed_across": 2}, "sites": sites, "datasets": datasets,
                                     "workloads": workloads})


def _placeable(templates: list[dict[str, Any]], sites: list[dict[str, Any]],
               datasets: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Keep the templates that validation accepts: an eligible pool a replica fits, enough failure
    domains for its spread, a cost ceiling above its cheapest cost."""
    from hybridctl.core.inventory.feasibility import cheapest_parts, replica_fits
    from hybridctl.core.placement.eligibility import EligibilityIndex, demands

    named = [dict(t, name=f"t-{i}") for i, t in enumerate(templates)]
    inventory = _base(sites, datasets, named)
    index = EligibilityIndex(inventory)
    egress = {s["name"]: s["egress_usd_per_gb"] for s in sites}

    keep: list[dict[str, Any]] = []
    for demand, template in zip(demands(inventory), templates, strict=True):
        fitting = [index.pools[p] for p in index.eligible(demand) if replica_fits(demand, index.pools[p])]
        domains = {index.pools[p].domain for p in index.eligible(demand)}
        ceiling = demand.workload.max_usd_per_month
        if fitting and not (demand.replicas >= 2 and min(demand.spread, demand.replicas) > len(domains)) \
                and not (ceiling is not None and _cheapest_usd(demand, cheapest_parts(demand, fitting, index, egress)) > ceiling):
            keep.append(template)
    return keep


def _cheapest_usd(demand: Any, parts: tuple[float, float]) -> float:
    """A lower bound of the whole workload's cost as ceilings count it: its replicas at the cheapest one's
    amortized compute, and the least data movement (feasibility.cheapest_parts)."""
    per_replica, least_data = parts
    return float(demand.replicas * per_replica + least_data)


def _scale_capacity(sites: list[dict[str, Any]], workloads: list[dict[str, Any]], utilisation: float) -> None:
    """Grow pools so that each GPU type's share of demand is about `utilisation` of its capacity."""
    # latency-bound work needs capacity in its own jurisdiction; the rest can go anywhere
    home = {region: j for j, region in REGION_OF.items()}
    demand: dict[tuple[str, str], float] = {}
    for w in workloads:
        gpus = w["gpu"]["count"] * w["replicas"]
        zones = [home[w["latency"]["region"]]] if "latency" in w else JURISDICTIONS
        for t in w["gpu"]["types"]:
            for j in zones:
                key = (t, j)
                demand[key] = demand.get(key, 0.0) + gpus / len(w["gpu"]["types"]) / len(zones)
    capacity: dict[tuple[str, str], int] = {}
    for site in sites:
        for pool in site["pools"]:
            key = (pool["gpu"], site["jurisdiction"])
            # a part-time 1-GPU replica takes a whole 4-GPU machine: count such pools at a quarter
            per_node = PER_NODE.get(pool.get("instance_type", ""), 1) if pool["capacity_type"] != "reserved" else 1
            capacity[key] = capacity.get(key, 0) + pool.get("gpus", pool.get("max_gpus", 0)) // per_node
    for site in sites:
        for pool in site["pools"]:
            key = (pool["gpu"], site["jurisdiction"])
            factor = demand.get(key, 0.0) / utilisation / max(capacity[key], 1)
            if factor > 1 and not (pool["capacity_type"] == "reserved" and "max_gpus" in pool):  # reservations stay
                key = "gpus" if "gpus" in pool else "max_gpus"
                unit = 8  # whole machines
                pool[key] = int(-(-pool[key] * factor // unit) * unit)


def _latencies(rng: random.Random, home: str, near_ms: int) -> dict[str, int]:
    return {REGION_OF[j]: (near_ms + rng.randint(0, 8)) if j == home else rng.randint(70, 180) for j in JURISDICTIONS}


def _workload_template(rng: random.Random, archetype: tuple[Any, ...], datasets: list[dict[str, Any]]) -> dict[str, Any]:
    kind, types, count, (lo, hi), hours, _ = archetype
    workload: dict[str, Any] = {"name": "", "type": kind, "gpu": {"types": rng.sample(types, k=rng.randint(1, len(types))),
                                                                  "count": count},
                                "replicas": rng.randint(lo, hi)}
    if kind != "realtime_inference":
        workload["hours_per_month"] = rng.choice(hours)
    if kind == "realtime_inference":
        workload["latency"] = {"region": rng.choice(sorted(REGION_OF.values())), "p95_ms": rng.choice([40, 60, 100, 200])}
        workload["model_gb"] = rng.choice([2, 8, 16, 40])
        workload["rto_minutes"] = rng.choice([15, 30, 60])
    if kind == "experiment" or (kind in ("batch_inference", "embedding") and rng.random() < 0.8):
        workload["preemptible"] = True
        workload["checkpoint_minutes"] = rng.choice([10, 20, 30])
    if kind in ("training", "fine_tuning", "pretraining", "evaluation", "batch_inference", "embedding") \
            and rng.random() < 0.6:
        workload["datasets"] = [rng.choice(datasets)["name"]]
        workload["data_passes_per_month"] = rng.choice([0.25, 0.5, 1])
    if rng.random() < 0.05:
        workload["max_usd_per_month"] = rng.choice([5000, 20000, 80000])
    if kind == "realtime_inference" and workload["replicas"] >= 2 and rng.random() < 0.2:
        workload["spread"] = 2  # across zones (or sites)
    workload["team"] = rng.choice(TEAMS)
    return workload


def _scheduled(template: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """The template with windows: serving by day (its whole windows), jobs at night or at the weekend, for
    80 % of the windows' hours (or their own hours, when fewer)."""
    workload = dict(template)
    if workload["type"] == "realtime_inference":
        workload["schedule"] = {"windows": DAYTIME}
        return workload
    windows = rng.choice([NIGHTLY, WEEKEND])
    weekly = 50.0 if windows is NIGHTLY else 48.0
    ceiling = weekly * 730 / 168 * DEFERRED_SHARE
    workload["schedule"] = {"windows": windows}
    workload["hours_per_month"] = round(min(float(workload.get("hours_per_month", ceiling)), ceiling), 2)
    return workload


def to_yaml(inventory: dict[str, Any]) -> str:
    return yaml.dump(inventory, Dumper=yaml.CSafeDumper, sort_keys=False, default_flow_style=None, width=200)


if __name__ == "__main__":
    import sys

    print(to_yaml(generate(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 1,
                           float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)))
