"""What a step read back from a runbook or a state may carry (security audit: an edited runbook ran any playbook).

A step's params said which playbook to run (`playbooks / params["playbook"]`: an absolute path replaced the
playbooks directory), against which hosts (AnsibleInventory.from_params took any host variable) and with which
variables; a cloud step's, which Pulumi project directory runs. Now each is held to what hybridctl makes for the
step's kind, and a step's digest must be that of its kind and params.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hybridctl.core.deploy.ansible_inventory import AnsibleInventory
from hybridctl.core.deploy.stepcheck import check_step_params
from hybridctl.core.deploy.steps import BundleRef, Step, StepKind, apply_steps, make_step, params_digest
from hybridctl.core.placement.planner import plan as make_plan
from hybridctl.drivers.ansible import SshOptions
from hybridctl.errors import HybridctlError
from hybridctl.paths import playbooks_dir
from hybridctl.runners import run_ansible_step, shipped_playbook
from support.apply_inventories import lab_inventory


@pytest.fixture(scope="module")
def steps() -> dict[str, Step]:
    """apply's steps for the lab inventory (cloud, on-prem and edge hosts, a model sync), read back from JSON."""
    inventory = lab_inventory()
    bundle = BundleRef("shop-vision", "/srv/bundles/shop-vision", "shop-vision", "1.2.0+b7", "ab" * 32)
    graph = apply_steps(make_plan(inventory), inventory, bundles={"shop-vision": bundle},
                        bundle_public_key="/etc/hybridctl/model-signing.pub.pem", verify_full=True).graph
    return {s.id: Step(s.id, s.kind, s.title, json.loads(json.dumps(s.params)), s.digest) for s in graph}


def test_every_step_hybridctl_makes_passes_and_keeps_its_digest(steps: dict[str, Step]) -> None:
    assert {s.kind for s in steps.values()} == {StepKind.CLOUD_POOLS, StepKind.CLUSTER_QUEUES, StepKind.PREFLIGHT,
                                                StepKind.NODE_BASELINE, StepKind.MODEL_SYNC}
    for step in steps.values():
        check_step_params(step.kind, step.params)
        assert params_digest(step.kind, step.params) == step.digest, step.id


def test_destroy_and_release_steps_keep_their_digest_too() -> None:
    record = {"project": "aws-gpu-pools", "stack_name": "lab-aws-euc1", "config": {"planDigest": "sha256:x"},
              "site": "aws-euc1", "cluster": None, "sites": []}
    for step in (make_step("destroy/cloud-pools/aws-euc1", StepKind.DESTROY_CLOUD_POOLS, "t", record),
                 make_step("release/dc-fra", StepKind.RELEASE_NODES, "t", {"site": "dc-fra", "steps": ["a"]})):
        check_step_params(step.kind, step.params)
        assert params_digest(step.kind, step.params) == step.digest


def test_an_edited_param_changes_the_digest(steps: dict[str, Step]) -> None:
    pools = steps["cloud-pools/aws-euc1"]
    assert params_digest(StepKind.PREFLIGHT, pools.params) != pools.digest
    assert params_digest(pools.kind, {**pools.params, "stack_name": "lab-other"}) != pools.digest


def edited(step: Step, path: str, value: Any) -> dict[str, Any]:
    params: dict[str, Any] = json.loads(json.dumps(step.params))
    *parents, last = path.split(".")
    target = params
    for part in parents:
        target = target[part] if part != "*" else next(iter(target.values()))
    target[last] = value
    return params


# name: (step, what is changed, its new value, what the message says)
HOSTILE: dict[str, tuple[str, str, Any, str]] = {
    "an absolute playbook": ("preflight/dc-fra", "playbook", "/tmp/evil.yml", "params.playbook: '/tmp/evil.yml'"),
    "a playbook up the tree": ("preflight/dc-fra", "playbook", "../../tmp/evil.yml", "params.playbook"),
    "a playbook in a subdirectory": ("preflight/dc-fra", "playbook", "roles/x/tasks/main.yml", "params.playbook"),
    "another kind's playbook": ("preflight/dc-fra", "playbook", "node.yml", "is not the playbook a preflight step "
                                                                           "runs (preflight.yml)"),
    "a playbook hybridctl ships for no step": ("node-baseline/dc-fra", "playbook", "trust.yml", "params.playbook"),
    "no playbook": ("preflight/dc-fra", "playbook", None, "params.playbook"),
    "a parameter no step has": ("preflight/dc-fra", "limit", "all", "params.limit"),
    "an inventory as text": ("preflight/dc-fra", "inventory", "all", "params.inventory"),
    "a host variable that reaches ssh": ("preflight/dc-fra", "inventory.hostvars.*.ansible_ssh_common_args",
                                         "-oProxyCommand=sh", "ansible_ssh_common_args: not a variable hybridctl "
                                                              "gives a host"),
    "a local connection": ("node-baseline/dc-fra", "inventory.hostvars.*.ansible_connection", "local",
                           "ansible_connection"),
    "a private key": ("preflight/dc-fra", "inventory.hostvars.*.ansible_ssh_private_key_file", "/root/.ssh/id",
                      "ansible_ssh_private_key_file"),
    "an address that is an option": ("preflight/dc-fra", "inventory.hostvars.*.ansible_host", "-oProxyCommand=sh",
                                     "ansible_host: is not a host name or an IP address"),
    "a user with a shell word": ("preflight/dc-fra", "inventory.hostvars.*.ansible_user", "root;id",
                                 "ansible_user: is not a POSIX user name"),
    "a port as text": ("preflight/dc-fra", "inventory.hostvars.*.ansible_port", "22", "ansible_port"),
    "a port out of range": ("preflight/dc-fra", "inventory.hostvars.*.ansible_port", 0, "ansible_port"),
    "a template in a token": ("preflight/dc-fra", "inventory.hostvars.*.hybridctl_gpu", "{{ lookup('pipe','id') }}",
                              "hybridctl_gpu: is not a token"),
    "a group Ansible means by every host": ("preflight/dc-fra", "inventory.groups.all", [], "groups: 'all'"),
    "a group of a host not listed": ("preflight/dc-fra", "inventory.groups.hybridctl", ["elsewhere"],
                                     "'elsewhere' is not one of the inventory's hosts"),
    "a variable a preflight never gets": ("preflight/dc-fra", "extravars.ansible_connection", "local",
                                          "params.extravars.ansible_connection"),
    "a bundle up the tree": ("model-sync/edge-17/shop-vision", "extravars.hybridctl_bundle_dir", "/srv/../etc",
                             "params.extravars.hybridctl_bundle_dir"),
    "a relative key file": ("model-sync/edge-17/shop-vision", "extravars.hybridctl_bundle_public_key_file", "k.pem",
                            "params.extravars.hybridctl_bundle_public_key_file: is not an absolute path"),
    "a version with a slash": ("model-sync/edge-17/shop-vision", "extravars.hybridctl_model_version", "../v1",
                               "params.extravars.hybridctl_model_version"),
    "a digest that is not one": ("model-sync/edge-17/shop-vision", "extravars.hybridctl_bundle_sha256", "x",
                                 "hybridctl_bundle_sha256"),
    "a Pulumi project elsewhere": ("cloud-pools/aws-euc1", "project", "/tmp/evil", "params.project: '/tmp/evil'"),
    "the queues' project for pools": ("cloud-pools/aws-euc1", "project", "k8s-queues", "params.project"),
    "a stack name up the tree": ("cluster-queues/ml-euc1", "stack_name", "../../x", "params.stack_name"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_what_hybridctl_does_not_make_is_refused(steps: dict[str, Step], name: str) -> None:
    step_id, path, value, named = HOSTILE[name]
    step = steps[step_id]
    with pytest.raises(ValueError) as refused:
        check_step_params(step.kind, edited(step, path, value))
    assert named in str(refused.value)


def test_from_params_refuses_a_host_variable_that_reaches_ssh() -> None:
    raw = {"hostvars": {"h1": {"ansible_host": "10.0.0.1", "ansible_ssh_common_args": "-oProxyCommand=sh"}},
           "groups": {"hybridctl": ["h1"]}}
    with pytest.raises(ValueError, match=r"hostvars\['h1'\]\.ansible_ssh_common_args"):
        AnsibleInventory.from_params(raw)


class TestTheRunnerChecksAgain:
    """The last check before Ansible, for a step that did not come through a runbook or a state."""

    def test_the_shipped_playbook_is_a_file_of_the_playbooks_directory(self, steps: dict[str, Step]) -> None:
        for step_id in ("preflight/dc-fra", "node-baseline/dc-fra", "model-sync/edge-17/shop-vision"):
            path = shipped_playbook(steps[step_id], playbooks_dir())
            assert path.parent == playbooks_dir().resolve() and path.is_file()

    @pytest.mark.parametrize("playbook", ["/tmp/evil.yml", "../evil.yml", "trust.yml"])
    def test_any_other_playbook_fails_the_step_and_runs_nothing(self, steps: dict[str, Step], tmp_path: Path,
                                                                  playbook: str) -> None:
        step = steps["preflight/dc-fra"]
        forged = Step(step.id, step.kind, step.title, {**step.params, "playbook": playbook}, step.digest)
        with pytest.raises(HybridctlError, match=r"params\.playbook"):
            run_ansible_step(forged, None, playbooks=playbooks_dir(), ssh=SshOptions(tmp_path / "known_hosts"),
                             work_dir=tmp_path / "ansible")
        assert not (tmp_path / "ansible").exists()  # not even an inventory file was written

    def test_a_playbook_missing_from_the_playbooks_directory_fails_the_step(self, steps: dict[str, Step],
                                                                            tmp_path: Path) -> None:
        with pytest.raises(HybridctlError, match="is not a playbook hybridctl ships"):
            shipped_playbook(steps["preflight/dc-fra"], tmp_path)
