"""provider-lost PROVIDER (revision 4): every site of a cloud provider lost at once, for `failover` and drills;
`drill --standard` loses each provider in turn when the cloud sites span two or more. Each test fails without
the event."""

from __future__ import annotations

import pytest
from hybridctl.core.checker.check import check_plan
from hybridctl.core.failover.disrupt import disrupt
from hybridctl.core.failover.events import EventSyntaxError, check_events, parse_events
from hybridctl.core.failover.impact import Status, impacts
from hybridctl.core.failover.replan import FailoverOptions, replan
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES

MULTI = EXAMPLES / "multi-cloud-inference.yaml"


@pytest.fixture(scope="module")
def fleet():  # type: ignore[no-untyped-def]
    inventory = load_inventory(MULTI).inventory
    return inventory, plan(inventory)


def test_provider_lost_loses_every_site_of_the_provider(fleet) -> None:
    inventory, base = fleet
    lost = disrupt(inventory, parse_events(["provider-lost", "gcp"]), base)
    assert lost.lost_sites == {"gcp-europe-west4", "gcp-us-central1"}


def test_a_failover_moves_the_lost_providers_serving_to_the_others_within_residency(fleet) -> None:
    inventory, base = fleet
    result = replan(inventory, base, parse_events(["provider-lost azure"]), FailoverOptions())
    assert check_plan(result.disruption.inventory, result.after) == []
    sites = {p.site for p in result.after.placements if p.workload == "assistant-us"}
    assert "azure-eastus" not in sites and sites <= {"aws-us-east-1", "gcp-us-central1"}  # US data stays in the US
    assert all(i.status is not Status.DOWN for i in impacts(inventory, result) if i.tier == "fixed")


def test_an_unknown_provider_is_refused_naming_those_in_use(fleet) -> None:
    inventory, _ = fleet
    with pytest.raises(EventSyntaxError, match="no cloud site of the inventory is on provider 'oci'") as caught:
        check_events(parse_events(["provider-lost oci"]), inventory)
    assert caught.value.hint == "providers in use: aws, azure, gcp"


def test_the_standard_drill_loses_each_provider_in_use_in_turn(fleet) -> None:
    inventory, _ = fleet
    names = [s.name for s in standard_scenarios(inventory)]
    assert [n for n in names if n.startswith("provider-lost")] == ["provider-lost-aws", "provider-lost-azure",
                                                                 "provider-lost-gcp"]


def test_a_one_provider_fleet_drills_no_provider_loss() -> None:
    inventory = load_inventory(EXAMPLES / "cloud-burst.yaml").inventory
    assert not [s for s in standard_scenarios(inventory) if s.name.startswith("provider-lost")]
