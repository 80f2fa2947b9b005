"""The examples exercise what matters on a real cluster (issue 33): between them, `synth` of the shipped
inventories declares MultiKueue with an on-prem worker, an EFA pool in a cluster placement group in its zone,
and a capacity reservation pinned to its zone. A change to an example that loses one fails here, not in a
review of a variant nobody ships."""

from __future__ import annotations

from hybridctl.core.inventory.models import SiteKind
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from test_synth_validators import EXAMPLES, synthesized

MULTIKUEUE_CLUSTER = "kubernetes:kueue.x-k8s.io/v1beta2:MultiKueueCluster"
LAUNCH_TEMPLATE, NODE_GROUP = "aws:ec2/launchTemplate:LaunchTemplate", "aws:eks/nodeGroup:NodeGroup"
PLACEMENT_GROUP = "aws:ec2/placementGroup:PlacementGroup"
IN_ZONE = "<unknown: the cluster's subnets in "  # the mock's name for subnets filtered to one zone


def onprem_workers(example: str) -> set[str]:
    """The MultiKueue worker clusters of `example` that are on-prem sites' clusters."""
    onprem = {s.cluster for s in load_inventory(inventories_dir() / example).inventory.sites
              if s.kind is SiteKind.ONPREM and s.cluster}
    return {r.inputs["metadata"]["name"] for run in synthesized(example) for r in run.of_type(MULTIKUEUE_CLUSTER)} & onprem


def efa_pools_in_a_placement_group(example: str) -> set[str]:
    found = set()
    for run in synthesized(example):
        groups = {r.name for r in run.of_type(PLACEMENT_GROUP)}
        for template in run.of_type(LAUNCH_TEMPLATE):
            pool = template.name.removesuffix("-lt")
            inputs = template.inputs
            if (inputs.get("networkInterfaces") and f"{pool}-pg" in groups
                    and all(s.startswith(IN_ZONE) for s in run.one(NODE_GROUP, pool).inputs["subnetIds"])):
                found.add(pool)
    return found


def reservations_in_their_zone(example: str) -> set[str]:
    found = set()
    for run in synthesized(example):
        for template in run.of_type(LAUNCH_TEMPLATE):
            pool = template.name.removesuffix("-lt")
            target = (template.inputs.get("capacityReservationSpecification") or {}).get("capacityReservationTarget")
            if target and all(s.startswith(IN_ZONE) for s in run.one(NODE_GROUP, pool).inputs["subnetIds"]):
                found.add(f"{pool}:{target['capacityReservationId']}")
    return found


def test_the_examples_synthesize_multikueue_efa_and_a_pinned_reservation() -> None:
    covered = {example: (onprem_workers(example), efa_pools_in_a_placement_group(example),
                         reservations_in_their_zone(example)) for example in EXAMPLES}
    assert covered["cloud-burst.yaml"][0] == {"ash-k8s"}  # Ashburn's cluster takes spilled burst work first
    assert covered["cloud-burst.yaml"][1] == {"use1-p5-od"}  # long-context-pretrain's two-node gangs
    assert covered["enterprise"][2] == {"use1-p5-reserved:cr-0a1b2c3d4e5f60718"}
