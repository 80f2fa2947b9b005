"""The Ansible inventory built from an inventory and a plan, and its rendering through the template."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hybridctl.core.deploy.ansible_inventory import (
    AnsibleInventory,
    ansible_value,
    build_ansible_inventory,
    group_name,
    pool_tiers,
)
from hybridctl.core.inventory.models import Policies, Pool
from hybridctl.core.placement.planner import plan as make_plan
from hybridctl.render.apply import render_ansible_inventory
from ruamel.yaml import YAML
from support.apply_inventories import lab_inventory


class TestGroups:
    def test_hosts_are_grouped_by_site_kind_pool_and_tier(self) -> None:
        inventory = lab_inventory()
        plan = make_plan(inventory)
        result = build_ansible_inventory(inventory, plan)
        assert result.group("site_dc_fra") == ("fra-01", "fra-02", "fra-03", "fra-l4-01")
        assert result.group("site_edge_17") == ("edge-17-a",)
        assert result.group("kind_onprem") == ("fra-01", "fra-02", "fra-03", "fra-l4-01")
        assert result.group("kind_edge") == ("edge-17-a",)
        assert result.group("pool_fra_h100") == ("fra-01", "fra-02", "fra-03")
        assert result.group("hybridctl") == result.hosts
        # Tier groups hold the hosts of pools where a workload of that tier is placed.
        host_pools = {h.name: h.pool for s in inventory.sites for h in s.hosts}
        for tier in ("fixed", "burst"):
            pools = {p.pool for p in plan.placements if p.tier == tier}
            assert result.group(f"tier_{tier}") == tuple(sorted(h for h, p in host_pools.items() if p in pools))
        # this plan (cash: owned capacity fills first, so chat runs on fra-h100): the loop above checked something
        assert result.group("tier_fixed") == ("edge-17-a", "fra-01", "fra-02", "fra-03")
        assert all("fra-l4-01" not in m for g, m in result.groups.items() if g.startswith("tier_"))
        assert not any(g.startswith("site_aws") for g in result.groups)  # cloud sites have no hosts

    def test_group_names_are_ansible_identifiers(self) -> None:
        assert group_name("site", "edge-store-17") == "site_edge_store_17"
        for name in build_ansible_inventory(lab_inventory(), make_plan(lab_inventory())).groups:
            assert name.isidentifier()


class TestHostVars:
    def test_connection_and_node_variables(self) -> None:
        inventory = lab_inventory()
        hostvars = build_ansible_inventory(inventory, make_plan(inventory)).hostvars
        fra_02 = hostvars["fra-02"]
        assert (fra_02["ansible_host"], fra_02["ansible_port"], fra_02["ansible_user"]) == ("10.0.0.2", 2222, "ops")
        assert fra_02["hybridctl_site"] == "dc-fra" and fra_02["hybridctl_site_kind"] == "onprem"
        assert fra_02["hybridctl_pool"] == "fra-h100" and fra_02["hybridctl_gpu"] == "H100"
        assert fra_02["hybridctl_failure_domain"] == "fra" and fra_02["hybridctl_jurisdiction"] == "EU"
        assert hostvars["edge-17-a"]["hybridctl_workloads"] == ["shop-vision"]
        assert hostvars["edge-17-a"]["preflight_model_cache_required_gb"] == 2

    def test_a_pools_gpus_are_split_over_its_hosts(self) -> None:
        inventory = lab_inventory()
        hostvars = build_ansible_inventory(inventory, make_plan(inventory)).hostvars
        # 8 GPUs over 3 hosts: 3, 3, 2 in host order.
        assert [hostvars[h]["hybridctl_expected_gpus"] for h in ("fra-01", "fra-02", "fra-03")] == [3, 3, 2]

    @pytest.mark.parametrize(("capacity_type", "allow", "tiers"), [
        ("reserved", False, ("fixed", "burst", "opportunistic")),
        ("on_demand", False, ("fixed", "burst")),
        ("on_demand", True, ("fixed", "burst", "opportunistic")),
        ("spot", False, ("opportunistic",)),
    ])
    def test_pool_tiers_follow_the_capacity_type_table(self, capacity_type: str, allow: bool,
                                                       tiers: tuple[str, ...]) -> None:
        pool = Pool.model_validate({"name": "p", "gpu": "H100", "gpus": 1, "capacity_type": capacity_type})
        assert pool_tiers(pool, Policies(allow_on_demand_for_opportunistic=allow)) == tiers


class TestRestrictAndParams:
    def test_restrict_keeps_only_the_hosts_and_their_groups(self) -> None:
        full = build_ansible_inventory(lab_inventory(), make_plan(lab_inventory()))
        part = full.restrict(["edge-17-a"])
        assert part.hosts == ("edge-17-a",)
        assert "site_dc_fra" not in part.groups and part.group("site_edge_17") == ("edge-17-a",)

    def test_params_round_trip(self) -> None:
        full = build_ansible_inventory(lab_inventory(), make_plan(lab_inventory()))
        assert AnsibleInventory.from_params(full.to_params()) == AnsibleInventory(
            {h: dict(v) for h, v in full.hostvars.items()}, dict(full.groups))


class Unsafe(str):
    """A string the YAML carried with Ansible's !unsafe tag."""


def load_tagged(text: str) -> Any:
    yaml = YAML(typ="safe", pure=True)
    yaml.constructor.add_constructor("!unsafe", lambda loader, node: Unsafe(loader.construct_scalar(node)))
    return yaml.load(text)


def string_leaves(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from string_leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from string_leaves(item)


class TestRendering:
    def test_every_string_value_is_unsafe_for_ansible(self) -> None:
        full = build_ansible_inventory(lab_inventory(), make_plan(lab_inventory()))
        hostvars = load_tagged(render_ansible_inventory(full, "lab"))["all"]["hosts"]
        leaves = list(string_leaves(hostvars))
        assert leaves and all(isinstance(leaf, Unsafe) for leaf in leaves)

    def test_ansible_value_tags_every_string_at_any_depth(self) -> None:
        value = {"a": "{{ lookup('pipe', 'id') }}", "b": [1, 2.5, None, True, ["x", {"y": "z"}]]}
        loaded = load_tagged(ansible_value(value))
        assert loaded == value
        assert all(isinstance(leaf, Unsafe) for leaf in string_leaves(loaded))

    def test_ansible_value_refuses_what_it_cannot_write(self) -> None:
        with pytest.raises(ValueError):
            ansible_value(float("nan"))
        with pytest.raises(TypeError):
            ansible_value(object())

    def test_the_rendered_file_is_the_inventory(self) -> None:
        full = build_ansible_inventory(lab_inventory(), make_plan(lab_inventory()))
        loaded = load_tagged(render_ansible_inventory(full, "lab"))
        assert loaded["all"]["hosts"] == {h: dict(v) for h, v in full.hostvars.items()}
        assert {g: sorted(v["hosts"]) for g, v in loaded["all"]["children"].items()} == \
            {g: list(m) for g, m in full.groups.items()}

    def test_values_cannot_inject_yaml(self) -> None:
        hostile = "10.0.0.1\n    ansible_become_password: x #: [&*"
        inventory = AnsibleInventory({"h": {"ansible_host": hostile, "n": 3, "flag": True, "tiers": ["a"]}},
                                     {"g": ("h",)})
        loaded = load_tagged(render_ansible_inventory(inventory))
        assert loaded["all"]["hosts"]["h"] == {"ansible_host": hostile, "n": 3, "flag": True, "tiers": ["a"]}

    def test_an_empty_inventory_renders(self) -> None:
        loaded = load_tagged(render_ansible_inventory(AnsibleInventory({}, {})))
        assert loaded == {"all": {"hosts": {}}}
