"""stacks/gcp-gpu-pools and stacks/azure-gpu-pools under Pulumi's mocks, configured by the plan through
hybridctl.core.deploy.gke_aks (the synth path), and what they record checked against each provider's
resource schema as the installed SDK ships it: every input a property of the resource's Args class (and of
its nested Args classes), the required ones given, enums within the SDK's enum types."""

from __future__ import annotations

import inspect
import re
from typing import Any

import pulumi_azure_native as azure
import pulumi_gcp as gcp
import pytest
from hybridctl.core.deploy.gke_aks import agent_pool_name, other_cloud_stacks
from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
from hybridctl.core.inventory.catalog import catalog
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.paths import stacks_dir

GROUP = ("/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/ml-eus/providers/"
         "Microsoft.Compute/capacityReservationGroups/nd-a100")
FLEET = f"""\
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
      - {{name: usc1-a3-reserved, gpu: H100, instance_type: a3-highgpu-8g, max_gpus: 8, capacity_type: reserved,
         reservation_id: a3-reserved, failure_domain: us-central1-a, usd_per_gpu_hour: 3.0}}
      - {{name: usc1-l4-spot, gpu: L4, instance_type: g2-standard-4, max_gpus: 8, capacity_type: spot,
         interruptions_per_day: 0.5}}
  - name: az-eus
    kind: cloud
    provider: azure
    region: eastus
    cluster: aks-eus
    jurisdiction: US
    egress_usd_per_gb: 0.087
    latency_ms: {{us-users: 15}}
    pools:
      - {{name: eus-a100-reserved, gpu: A100-80GB, instance_type: Standard_ND96amsr_A100_v4, max_gpus: 8,
         capacity_type: reserved, reservation_id: '{GROUP}', failure_domain: eastus-2, usd_per_gpu_hour: 2.5}}
      - {{name: eus-t4-spot, gpu: T4, instance_type: Standard_NC4as_T4_v3, max_gpus: 4, capacity_type: spot}}
workloads:
  - {{name: api, type: realtime_inference, gpu: {{types: [H100], count: 8}}}}
  - {{name: embed, type: batch_inference, gpu: {{types: [L4], count: 1}}, replicas: 2, hours_per_month: 300,
     preemptible: true, checkpoint_minutes: 10}}
  - {{name: ft, type: fine_tuning, gpu: {{types: [A100-80GB], count: 8}}, hours_per_month: 730}}
  - {{name: ocr, type: batch_inference, gpu: {{types: [T4], count: 1}}, hours_per_month: 200,
     preemptible: true, checkpoint_minutes: 5}}
"""


@pytest.fixture(scope="module")
def runs() -> dict[str, ProgramRun]:
    inventory = load_sources([Source("multi.yaml", FLEET)]).inventory
    the_plan = plan(inventory)
    assert not the_plan.unplaced
    digest = plan_digest(the_plan)
    stacks = other_cloud_stacks(inventory, the_plan, digest, catalog())
    assert [(s.project, s.stack_name) for s in stacks] == [("gcp-gpu-pools", "multi-gcp-usc1"),
                                                            ("azure-gpu-pools", "multi-az-eus")]
    # the EKS stacks take none of them
    assert stack_configs(inventory, the_plan, digest).gpu_pools == ()
    return {s.project: synth_stack(s.project, s.stack_name, s.values(), stacks_dir()) for s in stacks}


def pools_of(run: ProgramRun, type_: str) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in run.of_type(type_)}


GKE_NODE_POOL = "gcp:container/nodePool:NodePool"
AKS_AGENT_POOL = "azure-native:containerservice:AgentPool"


def test_gke_node_pools_carry_accelerators_driver_spot_reservation_zone_taint_labels_and_bounds(runs) -> None:
    pools = pools_of(runs["gcp-gpu-pools"], GKE_NODE_POOL)
    reserved, spot = pools["gcp-usc1-usc1-a3-reserved"], pools["gcp-usc1-usc1-l4-spot"]
    config = reserved["nodeConfig"]
    assert config["machineType"] == "a3-highgpu-8g" and not config["spot"]
    assert config["guestAccelerators"] == [{"type": "nvidia-h100-80gb", "count": 8,
                                            "gpuDriverInstallationConfig": {"gpuDriverVersion": "LATEST"}}]
    assert config["reservationAffinity"] == {"consumeReservationType": "SPECIFIC_RESERVATION",
                                             "key": "compute.googleapis.com/reservation-name",
                                             "values": ["a3-reserved"]}
    assert reserved["nodeLocations"] == ["us-central1-a"]
    # a reserved pool keeps every reserved machine up
    assert reserved["autoscaling"]["totalMinNodeCount"] == reserved["autoscaling"]["totalMaxNodeCount"] == 1
    assert config["taints"] == [{"key": "nvidia.com/gpu", "value": "present", "effect": "NO_SCHEDULE"}]
    assert config["labels"] == {"hybridctl.io/site": "gcp-usc1", "hybridctl.io/pool": "usc1-a3-reserved",
                                "hybridctl.io/gpu": "H100"}
    assert spot["nodeConfig"]["spot"] is True
    assert spot["nodeConfig"]["reservationAffinity"] == {"consumeReservationType": "NO_RESERVATION"}
    assert spot["autoscaling"]["totalMaxNodeCount"] == 8 and "nodeLocations" not in spot


def test_aks_agent_pools_carry_size_spot_eviction_reservation_group_zone_taint_labels_and_bounds(runs) -> None:
    pools = pools_of(runs["azure-gpu-pools"], AKS_AGENT_POOL)
    reserved, spot = pools["az-eus-eus-a100-reserved"], pools["az-eus-eus-t4-spot"]
    assert reserved["vmSize"] == "Standard_ND96amsr_A100_v4" and reserved["scaleSetPriority"] == "Regular"
    assert reserved["capacityReservationGroupID"] == GROUP and reserved["availabilityZones"] == ["2"]
    assert reserved["minCount"] == reserved["maxCount"] == 1 and reserved["enableAutoScaling"] is True
    assert reserved["agentPoolName"] == agent_pool_name("eus-a100-reserved")
    assert re.fullmatch(r"[a-z][a-z0-9]{0,11}", reserved["agentPoolName"])
    assert (spot["scaleSetPriority"], spot["scaleSetEvictionPolicy"], spot["spotMaxPrice"]) == ("Spot", "Delete", -1)
    assert spot["maxCount"] == 4 and spot["mode"] == "User" and spot["osType"] == "Linux"
    assert spot["nodeTaints"] == ["nvidia.com/gpu=present:NoSchedule"]
    assert spot["nodeLabels"]["hybridctl.io/pool"] == "eus-t4-spot"
    assert (spot["resourceGroupName"], spot["resourceName"]) == ("aks-eus", "aks-eus")


def _wire_name(args_class: type, param: str) -> str:
    """The property's name on the wire, as the SDK's @pulumi.getter records it (capacityReservationGroupID)."""
    getter = getattr(args_class, param.rstrip("_"), None) or getattr(args_class, param)
    return str(getter.fget._pulumi_name)


def _properties(args_class: type) -> tuple[set[str], set[str]]:
    """(every property, the required ones) of an SDK Args class, as the engine records them."""
    params = [p for p in inspect.signature(args_class.__init__).parameters.values() if p.name != "__self__"]
    return ({_wire_name(args_class, p.name) for p in params},
            {_wire_name(args_class, p.name) for p in params if p.default is inspect.Parameter.empty})


def _check(inputs: dict[str, Any], args_class: type, where: str, nested: dict[str, type]) -> list[str]:
    known, required = _properties(args_class)
    problems = [f"{where}.{k}: not a property of {args_class.__name__}" for k in inputs if k not in known]
    problems += [f"{where}: missing required {k}" for k in sorted(required - set(inputs))]
    for key, child in nested.items():
        values = inputs.get(key)
        for i, value in enumerate(values if isinstance(values, list) else [values] if values else []):
            problems += _check(value, child, f"{where}.{key}[{i}]", {})
    return problems


def test_what_the_gke_stack_records_fits_pulumi_gcps_schema(runs) -> None:
    c = gcp.container
    problems = []
    for name, inputs in pools_of(runs["gcp-gpu-pools"], GKE_NODE_POOL).items():
        problems += _check(inputs, c.NodePoolArgs, name, {"autoscaling": c.NodePoolAutoscalingArgs,
                                                          "management": c.NodePoolManagementArgs})
        problems += _check(inputs["nodeConfig"], c.NodePoolNodeConfigArgs, f"{name}.nodeConfig", {
            "guestAccelerators": c.NodePoolNodeConfigGuestAcceleratorArgs,
            "reservationAffinity": c.NodePoolNodeConfigReservationAffinityArgs,
            "taints": c.NodePoolNodeConfigTaintArgs})
        # GKE's enums, as the provider documents them in the Args' docstrings
        assert inputs["nodeConfig"]["reservationAffinity"]["consumeReservationType"] in (
            "NO_RESERVATION", "ANY_RESERVATION", "SPECIFIC_RESERVATION")
        assert all(t["effect"] in ("NO_SCHEDULE", "PREFER_NO_SCHEDULE", "NO_EXECUTE")
                   for t in inputs["nodeConfig"]["taints"])
        assert inputs["autoscaling"]["locationPolicy"] in ("BALANCED", "ANY")
    assert problems == []


def test_what_the_aks_stack_records_fits_pulumi_azure_natives_schema(runs) -> None:
    cs = azure.containerservice
    enums = {"scaleSetPriority": cs.ScaleSetPriority, "scaleSetEvictionPolicy": cs.ScaleSetEvictionPolicy,
             "mode": cs.AgentPoolMode, "osType": cs.OSType}
    problems = []
    for name, inputs in pools_of(runs["azure-gpu-pools"], AKS_AGENT_POOL).items():
        problems += _check(inputs, cs.AgentPoolArgs, name, {})
        problems += [f"{name}.{k}: {inputs[k]!r} is not one of {[e.value for e in enum]}"
                     for k, enum in enums.items() if k in inputs and inputs[k] not in {e.value for e in enum}]
    assert problems == []


@pytest.mark.parametrize(("pool", "name"), [("eus-a100-reserved", "eusa100r"), ("9-gpu", "gpu"),
                                            ("a-very-long-pool-name-indeed", "averylon")])
def test_agent_pool_names_fit_aks(pool: str, name: str) -> None:
    derived = agent_pool_name(pool)
    assert derived.startswith(name) and re.fullmatch(r"[a-z][a-z0-9]{0,11}", derived)
