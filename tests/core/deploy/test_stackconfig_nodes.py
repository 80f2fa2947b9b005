"""What a plan's node groups are made of, and which of their changes roll or replace nodes (issue 33):
zones by name or ID, reservations in their zone, reserved pools kept up, spot across same-shape
types, a modest root volume beside the local NVMe, and rolls listed as destructive."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.deploy.stackdiff import diff_stack_configs
from hybridctl.core.deploy.stackvalues import NodePoolConfig, StackConfigs
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.models import Dataset, Inventory, Workload
from hybridctl.core.inventory.zones import region_code, zone_of
from hybridctl.core.plan.model import Placement, Plan, SolverReport

POOLS: list[dict[str, Any]] = [
    {"name": "use1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 128, "capacity_type": "on_demand"},
    {"name": "use1-g6-spot", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 16, "capacity_type": "spot",
     "usd_per_gpu_hour": 0.3},
    {"name": "use1-p5-res", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 16, "capacity_type": "reserved",
     "usd_per_gpu_hour": 3.9, "reservation_id": "cr-0a1b2c3d4e5f60718", "failure_domain": "use1-az4"},
    {"name": "use1b-g6-od", "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 8, "capacity_type": "on_demand",
     "failure_domain": "use1-az2"},
]


def inventory(pools: list[dict[str, Any]] = POOLS, **extra: Any) -> Inventory:
    return Inventory.model_validate({
        "version": 1, "name": "acme", "regions": ["us-users"],
        "sites": [{"name": "aws-use1", "kind": "cloud", "provider": "aws", "region": "us-east-1", "cluster": "ml-use1",
                   "jurisdiction": "US", "egress_usd_per_gb": 0.09, "latency_ms": {"us-users": 15}, "pools": pools}],
        **extra,
    })


def place(workload: str, tier: str, pool: str, gpus: int) -> Placement:
    return Placement(workload=workload, tier=tier, site="aws-use1", pool=pool, replicas=1, gpus=gpus, usd_per_month=0.0)


PLAN = Plan(inventory_name="acme", inventory_digest="sha256:inv", data_movements=(), pools=(), unplaced=(),
            placements=(place("train", "burst", "use1-p5-od", 16), place("sweep", "opportunistic", "use1-g6-spot", 2),
                        place("tune", "fixed", "use1-p5-res", 8), place("serve", "fixed", "use1b-g6-od", 2)),
            solver=SolverReport("optimal", 0.0, 0.0, 0.0, 0.0), compute_usd_per_month=0.0, data_usd_per_month=0.0,
            tiers={"train": "burst", "sweep": "opportunistic", "tune": "fixed", "serve": "fixed"})

WORK = {
    "datasets": [{"name": "corpus", "site": "aws-use1", "size_gb": 60_000, "sensitivity": "internal"}],
    "workloads": [{"name": "train", "type": "pretraining", "gpu": {"types": ["H100"], "count": 16},
                   "hours_per_month": 100, "model_gb": 300, "datasets": ["corpus"]}],
}


def pools(inv: Inventory, plan: Plan = PLAN) -> dict[str, NodePoolConfig]:
    (site,) = stack_configs(inv, plan, "d").gpu_pools
    return {p.name: p for p in site.node_pools}


class TestZones:
    @pytest.mark.parametrize(("region", "code"), [("us-east-1", "use1"), ("eu-central-1", "euc1"),
                                                  ("ap-northeast-1", "apne1"), ("ap-southeast-2", "apse2"),
                                                  ("sa-east-1", "sae1"), ("us-gov-west-1", None)])
    def test_region_codes_of_zone_ids(self, region: str, code: str | None) -> None:
        assert region_code(region) == code

    @pytest.mark.parametrize(("domain", "zone"), [("use1-az1", "use1-az1"), ("us-east-1b", "us-east-1b"),
                                                  ("euc1-az1", None), ("us-west-2a", None), ("rack-7", None)])
    def test_a_zone_of_the_region_by_name_or_id(self, domain: str, zone: str | None) -> None:
        assert zone_of("us-east-1", domain) == zone

    def test_a_zone_id_pins_the_node_group_to_its_zone(self) -> None:
        assert pools(inventory())["use1b-g6-od"].availability_zone == "use1-az2"

    def test_a_reservation_is_pinned_to_its_zone(self) -> None:
        p = pools(inventory())["use1-p5-res"]
        assert (p.reservation_id, p.availability_zone) == ("cr-0a1b2c3d4e5f60718", "use1-az4")


class TestSizes:
    def test_a_reserved_pool_keeps_every_reserved_machine_up(self) -> None:
        # 16 reserved GPUs = 2 p5 machines, paid whether they run or not; the plan uses one.
        p = pools(inventory())["use1-p5-res"]
        assert (p.min_size, p.desired_size, p.max_size) == (2, 2, 2)

    def test_spot_diversifies_over_the_catalogs_same_shape_types(self) -> None:
        types = pools(inventory())["use1-g6-spot"].types
        assert types[0] == "g6.xlarge" and len(types) > 1
        cat = catalog().instances
        assert {(cat[t].gpu, cat[t].gpus_per_node) for t in types} == {("L4", 1)}
        assert pools(inventory())["use1-p5-od"].types == ("p5.48xlarge",)  # on demand: its own type only


class TestStorage:
    def test_datasets_are_never_sized_onto_the_root_volume(self) -> None:
        p5 = pools(inventory(**WORK))["use1-p5-od"]
        # 60 TB of corpus and a 300 GB model: the root holds the OS; the 8 local NVMe drives hold images and caches.
        assert (p5.disk_gib, p5.local_nvme) == (100, True)
        assert catalog().instances["p5.48xlarge"].local_nvme_gb == 8 * 3840

    def test_every_catalog_gpu_type_has_local_nvme(self) -> None:
        # AWS instance stores back the node groups' launch templates; a GCP a2-highgpu or g2 machine has no bundled local SSD
        assert [name for name, i in catalog().instances.items() if i.provider == "aws" and not i.local_nvme_gb] == []

    def test_the_root_volume_moves_with_no_workload(self) -> None:
        assert pools(inventory(**WORK))["use1-p5-od"].disk_gib == pools(inventory())["use1-p5-od"].disk_gib


def configs_with(change: dict[str, Any]) -> tuple[StackConfigs, StackConfigs]:
    before = stack_configs(inventory(), PLAN, "d")
    (site,) = before.gpu_pools
    changed = tuple(replace(p, **change) if p.name == "use1-p5-od" else p for p in site.node_pools)
    return before, StackConfigs((replace(site, node_pools=changed),), before.queues)


class TestRolls:
    """EKS rolls a node group on a new launch template version (tests/stacks/eks_model.py): `plan` lists it
    as destructive, and apply asks for the approval machine removal needs."""

    @pytest.mark.parametrize("change", [{"disk_gib": 200}, {"efa_interfaces": 32}, {"local_nvme": False},
                                        {"reservation_id": "cr-0123456789abcdef0"}])
    def test_a_launch_template_change_rolls_every_node(self, change: dict[str, Any]) -> None:
        (found,) = diff_stack_configs(*configs_with(change))
        assert (found.kind, found.name, found.action) == ("node-group", "use1-p5-od", "roll")
        assert found.destructive and found.removes_machines
        assert "EKS replaces every node, one at a time" in found.detail

    def test_another_zone_replaces_the_node_group(self) -> None:
        (found,) = diff_stack_configs(*configs_with({"availability_zone": "use1-az1"}))
        assert (found.action, found.detail, found.removes_machines) == ("replace", "zone any→use1-az1", True)

    def test_on_demand_to_reserved_rolls_nothing(self) -> None:
        (found,) = diff_stack_configs(*configs_with({"capacity_type": "reserved"}))
        assert (found.action, found.destructive) == ("update", False)

    def test_a_resize_rolls_nothing(self) -> None:
        (found,) = diff_stack_configs(*configs_with({"min_size": 1, "max_size": 20}))
        assert (found.action, found.destructive) == ("resize", False)

    def test_a_new_workload_on_the_pool_rolls_nothing(self) -> None:
        more = replace(PLAN, placements=(*PLAN.placements, place("eval", "burst", "use1-p5-od", 8)))
        inv = inventory(workloads=[*WORK["workloads"], Workload.model_validate({
            "name": "eval", "type": "evaluation", "gpu": {"types": ["H100"], "count": 8}, "hours_per_month": 10,
            "model_gb": 900})], datasets=[Dataset.model_validate(d) for d in WORK["datasets"]])
        base = inventory(**WORK)
        assert [c.action for c in diff_stack_configs(stack_configs(base, PLAN, "a"), stack_configs(inv, more, "b"))
                if c.kind == "node-group"] == ["resize"]
