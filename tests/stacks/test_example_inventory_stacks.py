"""Each example inventory, planned, mapped to stack configuration, encoded as the driver sends it,
and run through the stack programs under Pulumi's mocks: every stack the plan needs is valid."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import pytest
from hybridctl.core.deploy import stackconfig
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.core.deploy.stackvalues import GpuPoolsStackConfig, QueuesStackConfig, StackConfigs
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.drivers.pulumi import flatten_config
from hybridctl.paths import inventories_dir
from kueue_crd_schema import errors
from pulumi_stack_harness import ProgramRun, import_stack_module, run_program
from support.examples import EXAMPLE_PATHS
from support.plan_week import AT_PLAN_WEEK

gpu_pools = import_stack_module("aws-gpu-pools", "gpu_pools")
queues_config = import_stack_module("k8s-queues", "queues_config")
kueue_queues = import_stack_module("k8s-queues", "kueue_queues")

NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"


def _examples() -> list[str]:
    return [p.name for p in EXAMPLE_PATHS]


@cache
def configs_for(example: str) -> StackConfigs:
    loaded = load_inventory(inventories_dir() / example)
    return stack_configs(loaded.inventory, plan(loaded.inventory, options=AT_PLAN_WEEK))


def stacks_of(configs: StackConfigs) -> dict[str, GpuPoolsStackConfig | QueuesStackConfig]:
    return {**{c.stack_name: c for c in configs.gpu_pools}, **{c.stack_name: c for c in configs.queues}}


def _stacks() -> list[tuple[str, str]]:
    return [(example, name) for example in _examples() for name in stacks_of(configs_for(example))]


def as_engine_config(values: Mapping[str, Any]) -> dict[str, str]:
    """The config exactly as the driver sets it with `pulumi config set-all`."""
    return {key: value for key, (value, _secret) in flatten_config(values).items()}


def run_gpu_pools(config: GpuPoolsStackConfig) -> ProgramRun:
    return run_program(lambda: gpu_pools.program(gpu_pools.load_config()), as_engine_config(config.values()))


def run_queues(config: QueuesStackConfig) -> ProgramRun:
    return run_program(lambda: kueue_queues.program(queues_config.load_config()), as_engine_config(config.values()))


def test_some_examples_need_cloud_stacks() -> None:
    # Guards the parametrization below against silently running nothing.
    assert {example for example, _ in _stacks()} >= {"cloud-burst.yaml", "enterprise"}


def test_the_mapping_and_the_programs_share_their_label_keys() -> None:
    assert (stackconfig.LABEL_SITE, stackconfig.LABEL_POOL) == (gpu_pools.LABEL_SITE, gpu_pools.LABEL_POOL)


@pytest.mark.parametrize(("example", "stack"), _stacks())
def test_each_planned_stack_runs_and_matches_its_configuration(example: str, stack: str) -> None:
    config = stacks_of(configs_for(example))[stack]
    if isinstance(config, GpuPoolsStackConfig):
        run_ = run_gpu_pools(config)
        groups = {g.name: g.inputs for g in run_.of_type(NODE_GROUP)}
        assert set(groups) == {p.name for p in config.node_pools}
        for pool in config.node_pools:
            assert groups[pool.name]["scalingConfig"] == {
                "minSize": pool.min_size, "desiredSize": pool.desired_size, "maxSize": pool.max_size}
            assert groups[pool.name]["instanceTypes"] == list(pool.types)
            assert groups[pool.name]["tags"]["hybridctl:plan-digest"] == config.plan_digest
    else:
        run_ = run_queues(config)
        kueue = [r.inputs for r in run_.resources if r.type.startswith("kubernetes:kueue.x-k8s.io/")]
        assert kueue
        assert {f"{o['kind']}/{o['metadata']['name']}": errors(o) for o in kueue if errors(o)} == {}
        local_queues = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in kueue if o["kind"] == "LocalQueue"}
        # its own, the namespace's default (jobs without the queue-name label), a manager's own share
        assert local_queues == {(w.name, q) for w in config.workloads
                                for q in (w.name, "default", *((f"{w.name}-local",) if w.local_cluster_queue else ()))}


@pytest.mark.parametrize("example", sorted({example for example, _ in _stacks()}))
def test_every_flavor_selects_nodes_its_pools_node_group_labels(example: str) -> None:
    configs = configs_for(example)
    node_labels: dict[str, dict[str, str]] = {}
    for site_config in configs.gpu_pools:
        for group in run_gpu_pools(site_config).of_type(NODE_GROUP):
            node_labels[group.name] = group.inputs["labels"]
    # on-prem nodes: the labels node.yml gives kubelet (playbooks/roles/node_baseline/tasks/main.yml)
    inventory = load_inventory(inventories_dir() / example).inventory
    for site in inventory.sites:
        if site.kind.value == "onprem" and site.cluster:
            for p in site.pools:
                node_labels[p.name] = {"hybridctl.io/site": site.name, "hybridctl.io/pool": p.name, "hybridctl.io/gpu": p.gpu}
    for cluster_config in configs.queues:
        for flavor in run_queues(cluster_config).of_type("kubernetes:kueue.x-k8s.io/v1beta2:ResourceFlavor"):
            selector = flavor.inputs["spec"]["nodeLabels"]
            if "hybridctl.io/dispatched" in selector:
                continue  # a MultiKueue manager's dispatching quota: it selects no node, by design
            pool = selector["hybridctl.io/pool"]
            assert selector.items() <= node_labels[pool].items(), f"flavor {pool} selects no node of its pool"
