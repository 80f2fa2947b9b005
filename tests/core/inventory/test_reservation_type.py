"""A reserved cloud pool says what its `reservation_id` names (issue 33, finding 3): an EC2 On-Demand
Capacity Reservation (the default) or a Capacity Block for ML, which EC2 launches into only with the
`capacity-block` market type and EKS only as a CAPACITY_BLOCK node group. Before, the inventory could
not say it, and a Capacity Block was targeted as an ordinary reservation.

Every diagnostic is pinned whole: code, message, file:line:column, hint."""

from __future__ import annotations

import pytest
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.deploy.stackdiff import diff_stack_configs
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory, Pool, ReservationType
from hybridctl.core.placement.planner import plan
from support.examples import BASE
from test_inventory_diagnostics import at, diagnostics

ON_DEMAND = "{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 64, capacity_type: on_demand}"
RESERVED = ("{name: use1-p5, gpu: H100, instance_type: p5.48xlarge, max_gpus: 16, capacity_type: reserved, "
            "usd_per_gpu_hour: 3.1, reservation_id: cr-0fedcba9876543210, failure_domain: use1-az4")


def with_pool(pool: str) -> str:
    assert ON_DEMAND in BASE
    return BASE.replace(ON_DEMAND, pool)


def in_the_cloud(text: str) -> str:
    """The inventory with its training workload allowed only in the cloud site: on the reserved pool."""
    assert text.endswith("    hours_per_month: 100\n")
    return text + "    sites: [aws-use1]\n"


def loaded(text: str) -> Inventory:
    return load_sources([Source("inv.yaml", text)]).inventory


def pool(inventory: Inventory, name: str = "use1-p5") -> Pool:
    return next(p for s in inventory.sites for p in s.pools if p.name == name)


class TestTheField:
    @pytest.mark.parametrize(("written", "meant"), [
        ("", ReservationType.CAPACITY_RESERVATION),
        (", reservation_type: capacity_reservation", ReservationType.CAPACITY_RESERVATION),
        (", reservation_type: capacity_block", ReservationType.CAPACITY_BLOCK),
    ])
    def test_a_reserved_cloud_pool_says_what_its_reservation_is(self, written: str, meant: ReservationType) -> None:
        text = with_pool(RESERVED + written + "}")
        assert diagnostics(text) == []
        assert pool(loaded(text)).reservation_type_effective is meant

    def test_the_schema_lists_both_kinds(self) -> None:
        field = Inventory.model_json_schema()["$defs"]["Pool"]["properties"]["reservation_type"]
        assert "capacity_block" in str(field) and "capacity_reservation" in str(field)


class TestItsRules:
    def test_without_reservation_id(self) -> None:
        text = with_pool(ON_DEMAND.removesuffix("}") + ", reservation_type: capacity_block}")
        (d,) = diagnostics(text)
        assert (d.code, d.message, str(d.location), d.hint) == (
            "reservation-type-without-id",
            "pool use1-p5: `reservation_type` says what the pool's `reservation_id` names, and it has none",
            at(text, "reservation_type: capacity_block", "reservation_type"),
            "add `reservation_id:` (the reservation's cr-… id) on a reserved cloud pool, or remove "
            "`reservation_type`")

    def test_on_an_onprem_pool(self) -> None:
        text = BASE.replace("gpus: 16, capacity_type: reserved", "gpus: 16, reservation_type: capacity_block, "
                            "capacity_type: reserved")
        assert "reservation_type: capacity_block" in text
        (d,) = diagnostics(text)
        assert (d.code, str(d.location)) == ("reservation-type-without-id",
                                             at(text, "reservation_type: capacity_block", "reservation_type"))

    def test_aws_spelling_is_refused_with_the_choices(self) -> None:
        text = with_pool(RESERVED + ", reservation_type: capacity-block}")
        (d,) = diagnostics(text)
        assert (d.code, d.message, str(d.location)) == (
            "invalid-choice",
            "sites[1].pools[0].reservation_type: 'capacity-block' (text) is not one of 'capacity_reservation' or "
            "'capacity_block'",
            at(text, "reservation_type: capacity-block", "capacity-block"))


class TestTheStackConfiguration:
    def test_a_capacity_block_pool_is_marked_for_the_stack(self) -> None:
        inventory = loaded(in_the_cloud(with_pool(RESERVED + ", reservation_type: capacity_block}")))
        (site,) = stack_configs(inventory, plan(inventory), "sha256:test").gpu_pools
        (values,) = site.values()["nodePools"]
        assert values["reservationId"] == "cr-0fedcba9876543210"
        assert values["capacityBlock"] is True

    def test_an_ordinary_reservation_is_not(self) -> None:
        inventory = loaded(in_the_cloud(with_pool(RESERVED + "}")))
        (site,) = stack_configs(inventory, plan(inventory), "sha256:test").gpu_pools
        (values,) = site.values()["nodePools"]
        assert values["reservationId"] == "cr-0fedcba9876543210"
        assert "capacityBlock" not in values

    def test_marking_a_reservation_a_capacity_block_replaces_its_node_group(self) -> None:
        """EKS cannot change a node group's capacity type in place (ON_DEMAND → CAPACITY_BLOCK): `plan`
        lists the change as a replacement, which removes machines and needs approval."""
        before = loaded(in_the_cloud(with_pool(RESERVED + "}")))
        after = loaded(in_the_cloud(with_pool(RESERVED + ", reservation_type: capacity_block}")))
        old, new = (stack_configs(i, plan(i), "sha256:test") for i in (before, after))
        (found,) = diff_stack_configs(old, new)
        assert (found.kind, found.name, found.action, found.removes_machines) == (
            "node-group", "use1-p5", "replace", True)
        assert found.detail == "p5.48xlarge reserved→p5.48xlarge reserved (capacity block)"
