"""Steps read back bound to the inventory and the plan they claim to come from (issue 45, item 1; Medium: an Ansible
step's inventory took any address the host rules allow, with any key file and bundle directory, `/root/.ssh`).
check_step_params held a step to its kind; check_derived holds it to the very step apply makes of the plan and the
inventory, with the bundles and key the run was given, and check_teardown a stack taken down to the inventory's.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from hybridctl.core.deploy.stepbind import (
    StepBindingError,
    check_bound,
    check_derived,
    check_teardown,
    stack_owners,
)
from hybridctl.core.deploy.steps import (
    BundleRef,
    Step,
    StepGraph,
    StepKind,
    apply_steps,
    make_step,
    params_digest,
)
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan as make_plan
from support.apply_inventories import lab_inventory

KEY = "/etc/hybridctl/model-signing.pub.pem"


@pytest.fixture(scope="module")
def lab() -> tuple[Inventory, StepGraph, dict[str, Step]]:
    """The lab inventory, apply's steps for its plan, and those steps read back from JSON (as a runbook's are)."""
    inventory = lab_inventory()
    bundle = BundleRef("shop-vision", "/srv/bundles/shop-vision", "shop-vision", "1.2.0+b7", "ab" * 32)
    graph = apply_steps(make_plan(inventory), inventory, bundles={"shop-vision": bundle}, bundle_public_key=KEY).graph
    read = {s.id: Step(s.id, s.kind, s.title, json.loads(json.dumps(s.params)), s.digest) for s in graph}
    return inventory, graph, read


def forged(step: Step, change: Callable[[dict[str, Any]], None]) -> Step:
    """The step changed, its digest worked out again (as a forger does)."""
    params = copy.deepcopy(dict(step.params))
    change(params)
    return Step(step.id, step.kind, step.title, params, params_digest(step.kind, params))


def test_every_step_apply_makes_is_bound(lab: tuple[Inventory, StepGraph, dict[str, Step]]) -> None:
    inventory, graph, read = lab
    check_bound(read.values(), graph, inventory, "the plan")


def _model_sync(read: dict[str, Step]) -> Step:
    return next(s for s in read.values() if s.kind == StepKind.MODEL_SYNC)


def _one_host(params: dict[str, Any]) -> dict[str, Any]:
    hostvars: dict[str, Any] = params["inventory"]["hostvars"]
    return hostvars[sorted(hostvars)[0]]


@pytest.mark.parametrize(("name", "change", "said"), [
    ("a host of no inventory", lambda p: _one_host(p).update(ansible_host="203.0.113.9"),
     ".ansible_host: \"203.0.113.9\", the plan makes"),
    ("another user", lambda p: _one_host(p).update(ansible_user="mallory"), ".ansible_user: \"mallory\""),
    ("the bundle from /root/.ssh", lambda p: p["extravars"].update(hybridctl_bundle_dir="/root/.ssh"),
     "params.extravars.hybridctl_bundle_dir: \"/root/.ssh\", the plan makes \"/srv/bundles/shop-vision\""),
    ("an attacker's key", lambda p: p["extravars"].update(hybridctl_bundle_public_key_file="/tmp/k.pem"),
     "params.extravars.hybridctl_bundle_public_key_file"),
    ("a host more", lambda p: p["inventory"]["hostvars"].update(extra=dict(_one_host(p))),
     "params.inventory.hostvars.extra: "),
])
def test_an_ansible_step_takes_only_the_inventorys_hosts_and_the_runs_paths(
        lab: tuple[Inventory, StepGraph, dict[str, Step]], name: str, change: Callable[[dict[str, Any]], None],
        said: str) -> None:
    inventory, graph, read = lab
    step = forged(_model_sync(read), change)
    with pytest.raises(StepBindingError, match="step model-sync/") as caught:
        check_bound([step], graph, inventory, "the plan")
    assert said in str(caught.value)


def test_a_cloud_step_is_bound_in_its_whole_configuration(lab: tuple[Inventory, StepGraph, dict[str, Step]]) -> None:
    _, graph, read = lab
    pools = next(s for s in read.values() if s.kind == StepKind.CLOUD_POOLS)

    def hundred(params: dict[str, Any]) -> None:
        params["config"]["nodePools"][0].update(desiredSize=100, maxSize=100, instanceTypes=["p5.48xlarge"])

    with pytest.raises(StepBindingError, match=r"params\.config\.nodePools\[0\]\.desiredSize: 100, the plan makes"):
        check_derived(forged(pools, hundred), graph, "the plan")
    # the playbooks' digest names no host, path or value: an upgraded hybridctl ships others
    preflight = next(s for s in read.values() if s.kind == StepKind.PREFLIGHT)
    check_derived(forged(preflight, lambda p: p.update(playbook_digest="sha256:other")), graph, "the plan")


def test_the_same_number_in_json_is_the_same(lab: tuple[Inventory, StepGraph, dict[str, Step]]) -> None:
    """A JSON round trip turns tuples into lists: equal; but 2 is not "2"."""
    _, graph, read = lab
    pools = next(s for s in read.values() if s.kind == StepKind.CLOUD_POOLS)
    check_derived(pools, graph, "the plan")
    with pytest.raises(StepBindingError):
        check_derived(forged(pools, lambda p: p["config"]["nodePools"][0].update(
            desiredSize=str(p["config"]["nodePools"][0]["desiredSize"]))), graph, "the plan")


def _teardown(inventory: Inventory, stack_name: str, site: str) -> Step:
    record = {"project": "aws-gpu-pools", "stack_name": stack_name, "site": site, "cluster": None, "sites": [],
              "config": {"inventoryName": inventory.name, "site": site}}
    return make_step(f"destroy/cloud-pools/{site}", StepKind.DESTROY_CLOUD_POOLS, "t", record)


def test_a_stack_taken_down_is_the_inventorys(lab: tuple[Inventory, StepGraph, dict[str, Step]]) -> None:
    inventory = lab[0]
    site = next(name for name, (kind, _) in stack_owners(inventory).items() if kind == StepKind.CLOUD_POOLS)
    label = stack_owners(inventory)[site][1]
    check_teardown(_teardown(inventory, site, label), inventory)
    for name, where in ((f"other-{label}", label), (f"{inventory.name}-eu-{label}", f"eu-{label}"),
                        # a valid prefix with one bad character after it (a `.match` for a `.fullmatch`)
                        (f"{site}x", label), (f"{site}-", label)):
        with pytest.raises(StepBindingError, match="is not the stack of a cloud site of inventory"):
            check_teardown(_teardown(inventory, name, where), inventory)
    with pytest.raises(StepBindingError, match=r"params\.site"):
        check_teardown(_teardown(inventory, site, f"{label}x"), inventory)
    renamed = _teardown(inventory, site, label)
    renamed = make_step(renamed.id, renamed.kind, "t", {**renamed.params, "config": {"inventoryName": "other"}})
    with pytest.raises(StepBindingError, match=r"params\.config\.inventoryName"):
        check_teardown(renamed, inventory)
    # a queues stack's name is not a pools stack's
    queues = next(name for name, (kind, _) in stack_owners(inventory).items() if kind == StepKind.CLUSTER_QUEUES)
    with pytest.raises(StepBindingError, match="cloud site"):
        check_teardown(_teardown(inventory, queues, label), inventory)
