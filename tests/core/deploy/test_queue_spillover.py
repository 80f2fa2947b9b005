"""Queues for ordered spillover: on-prem clusters get queues, MultiKueue lists workers in spill order
with the manager's quota and own share right, always-on GPUs are lent, EFA pools get their plugin."""

from __future__ import annotations

from typing import Any

from hybridctl.core.deploy.stackconfig import dispatch_flavor, stack_configs
from hybridctl.core.deploy.stackplanned import multikueue_groups, spill_order
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.diagnostics import Diagnostic, InvalidInventoryError
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import Inventory
from support.examples import BASE
from test_stackconfig import cloud_site, make_plan, place


def diagnostics(text: str) -> list[Diagnostic]:
    try:
        return list(load_sources([Source("inv.yaml", text)]).warnings)
    except InvalidInventoryError as exc:
        return exc.diagnostics


ONPREM: dict[str, Any] = {
    "name": "dc-ash", "kind": "onprem", "jurisdiction": "US", "egress_usd_per_gb": 0.02, "latency_ms": {"us-users": 10},
    "cluster": "ash-k8s",
    "pools": [{"name": "ash-h100", "gpu": "H100", "gpus": 32, "capacity_type": "reserved", "usd_per_gpu_hour": 1.8}]}


def inventory(*sites: dict[str, Any]) -> Inventory:
    return Inventory.model_validate({"version": 1, "name": "acme", "regions": ["us-users"], "sites": list(sites)})


EXPENSIVE = cloud_site("aws-euw1", "eu-west-1", "ml-euw1", [
    {"name": "euw1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 64, "capacity_type": "on_demand",
     "usd_per_gpu_hour": 9.0}])
CHEAP = cloud_site("aws-use1", "us-east-1", "ml-use1", [
    {"name": "use1-p5-od", "gpu": "H100", "instance_type": "p5.48xlarge", "max_gpus": 128, "capacity_type": "on_demand",
     "usd_per_gpu_hour": 5.0}])


class TestOnPremClusters:
    def test_an_onprem_site_may_name_its_cluster_and_an_edge_site_may_not(self) -> None:
        with_cluster = BASE.replace("    failure_domain: a\n", "    failure_domain: a\n    cluster: dc-a-k8s\n", 1)
        assert with_cluster != BASE
        assert not [d for d in diagnostics(with_cluster) if d.severity == "error"]
        edge = with_cluster.replace("kind: onprem", "kind: edge", 1)
        (found,) = [d for d in diagnostics(edge) if d.code == "cloud-only-field"]
        assert found.message == "site dc-a: `cluster` applies to cloud and onprem sites only"

    def test_an_onprem_cluster_gets_queues_and_no_node_groups(self) -> None:
        inv = inventory(ONPREM, CHEAP)
        configs = stack_configs(inv, make_plan(place("train", "burst", "dc-ash", "ash-h100", 16),
                                               place("serve", "fixed", "aws-use1", "use1-p5-od", 8)))
        assert [c.site for c in configs.gpu_pools] == ["aws-use1"]
        onprem = next(c for c in configs.queues if c.cluster_name == "ash-k8s")
        assert onprem.on_premises and not onprem.provisioning_request
        assert onprem.values()["kubeContext"] == "ash-k8s"
        assert [(f.name, f.cohort_gpus) for f in onprem.flavors] == [("ash-h100", 16)]  # owned, unplanned: lent


class TestSpillOrder:
    def test_onprem_first_then_the_cloud_cheapest_first(self) -> None:
        rank = spill_order(inventory(EXPENSIVE, CHEAP, ONPREM), catalog())
        assert sorted(rank, key=rank.__getitem__) == ["ash-k8s", "ml-use1", "ml-euw1"]

    def test_workers_follow_the_spill_order_and_the_manager_is_none_of_them(self) -> None:
        rank = spill_order(inventory(EXPENSIVE, CHEAP, ONPREM), catalog())
        spread = {"train": {"ash-k8s": 32, "ml-use1": 16, "ml-euw1": 8}}
        managers, mirrored, quota = multikueue_groups({"train"}, {"ash-k8s": 32, "ml-use1": 16, "ml-euw1": 8}, spread, rank)
        assert managers == {"ml-euw1": ("ash-k8s", "ml-use1")}  # fewest GPUs manages; workers in spill order
        assert quota == {"train": 48}  # the workers' GPUs, not the manager's
        assert set(mirrored) == {"ash-k8s", "ml-use1", "ml-euw1"}

    def test_the_managers_dispatching_quota_is_the_workers_and_its_own_share_is_local(self) -> None:
        inv = inventory(ONPREM, CHEAP)
        configs = stack_configs(inv, make_plan(place("train", "burst", "dc-ash", "ash-h100", 32),
                                               place("train", "burst", "aws-use1", "use1-p5-od", 16)))
        manager = next(c for c in configs.queues if c.multikueue_clusters)
        assert (manager.cluster_name, manager.multikueue_clusters) == ("ml-use1", ("ash-k8s",))
        dispatching = next(q for q in manager.cluster_queues if q.dispatched)
        assert [(f.flavor, f.gpus) for f in dispatching.flavors] == [(dispatch_flavor("acme"), 32)]  # was 16: its own
        (train,) = manager.workloads
        local = next(q for q in manager.cluster_queues if q.name == train.local_cluster_queue)
        assert not local.dispatched and [(f.flavor, f.gpus) for f in local.flavors] == [("use1-p5-od", 16)]


class TestAlwaysOnGpus:
    def test_the_always_on_machines_gpus_beyond_fixed_work_are_lent(self) -> None:
        """One p5 kept on for 2 GPUs of fixed work, 4 GPUs of burst work beside them: the burst queue may
        borrow the machine's 2 left from the cohort."""
        configs = stack_configs(inventory(CHEAP), make_plan(place("serve", "fixed", "aws-use1", "use1-p5-od", 2),
                                                            place("train", "burst", "aws-use1", "use1-p5-od", 4)))
        (queues,) = configs.queues
        assert [(f.name, f.cohort_gpus) for f in queues.flavors] == [("use1-p5-od", 2)]
        assert queues.values()["flavors"][0]["cohortGpus"] == 2

    def test_where_no_queue_borrows_they_are_the_fixed_queues_headroom(self) -> None:
        """One p5 kept on for 2 GPUs of fixed work alone (the enterprise example's ml-euc1): its other 6 GPUs
        were in the cohort, where no queue of the cluster could borrow them."""
        configs = stack_configs(inventory(CHEAP), make_plan(place("serve", "fixed", "aws-use1", "use1-p5-od", 2)))
        (queues,) = configs.queues
        assert [(f.name, f.cohort_gpus) for f in queues.flavors] == [("use1-p5-od", 0)]
        assert [(q.tier, q.flavors[0].gpus) for q in queues.cluster_queues] == [("fixed", 8)]


class TestEfa:
    def test_a_cluster_gets_the_efa_plugin_exactly_when_a_pool_gets_efa_interfaces(self) -> None:
        inv = Inventory.model_validate({**inventory(CHEAP).model_dump(exclude_none=True), "workloads": [
            {"name": "pretrain", "type": "pretraining", "gpu": {"types": ["H100"], "count": 16}, "hours_per_month": 100}]})
        configs = stack_configs(inv, make_plan(place("pretrain", "burst", "aws-use1", "use1-p5-od", 16)))
        assert configs.gpu_pools[0].node_pools[0].efa_interfaces > 0
        assert configs.queues[0].efa_device_plugin and configs.queues[0].values()["installEfaDevicePlugin"] is True
        single = stack_configs(inventory(CHEAP), make_plan(place("serve", "fixed", "aws-use1", "use1-p5-od", 8)))
        assert not single.queues[0].efa_device_plugin and "installEfaDevicePlugin" not in single.queues[0].values()
