"""Nothing in a runbook runs against what an event made unreachable (issue 46, item 2): every step aimed at a
lost site, at a cluster whose sites are all lost, or at hosts behind a downed link is deferred, and the
deferral says what the step will do once the site is back. Each site event against each example."""

from __future__ import annotations

from pathlib import Path

import pytest
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.runbook import step_sites
from hybridctl.core.inventory.models import SiteKind
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.operations.failover_compute import steps_builder
from support.examples import EXAMPLE_PATHS
from support.failover_runs import failed_over
from support.plan_week import AT_PLAN_WEEK


def _cases() -> list[tuple[str, str]]:
    cases = []
    for path in EXAMPLE_PATHS:
        inventory = load_inventory(Path(path)).inventory
        for site in inventory.sites:
            cases.append((str(path), f"site-lost {site.name}"))
            if site.kind is not SiteKind.CLOUD and site.hosts:
                cases.append((str(path), f"link-down {site.name}"))
    return cases


_PLANS: dict[str, tuple] = {}


def _planned(path: str):
    if path not in _PLANS:
        inventory = load_inventory(Path(path)).inventory
        _PLANS[path] = (inventory, plan(inventory, options=AT_PLAN_WEEK))
    return _PLANS[path]


def _as_applied(inventory, applied):
    """apply's steps as the command builds them, what is deployed being what applying `applied` deployed (the
    stacks a failover plan no longer has are destroyed, and those steps too must wait for a lost site)."""
    return steps_builder(inventory, None, None, None, applied=applied)


@pytest.mark.parametrize(("path", "event"), _cases(), ids=lambda v: v.rsplit("/", 1)[-1])
def test_no_step_runs_against_an_unreachable_site(path: str, event: str) -> None:
    inventory, applied = _planned(path)
    runbook, _ = failed_over(inventory, applied, parse_events([event]), steps_for=_as_applied(inventory, applied))
    _, target = event.split(" ", 1)
    for step in runbook.steps:
        sites = step_sites(step.step, inventory)
        if step.step.kind in ("runbook-manual", "runbook-confirm"):
            continue
        assert not sites or set(sites) != {target}, f"{step.id} runs against {target}"
    for deferred in runbook.deferred:
        assert deferred.site == target and "once it is back: " in deferred.reason


def test_losing_dc_ashburn_defers_the_queues_of_its_own_cluster() -> None:
    inventory = load_inventory(EXAMPLE_PATHS[0].parent / "cloud-burst.yaml").inventory
    applied = plan(inventory)
    runbook, _ = failed_over(inventory, applied, parse_events(["site-lost dc-ashburn"]),
                             steps_for=_as_applied(inventory, applied))
    assert not [s.id for s in runbook.steps if "ash-k8s" in s.id]
    deferred = {d.step_id: d for d in runbook.deferred}
    assert "destroy/cluster-queues/ash-k8s" in deferred
    assert deferred["destroy/cluster-queues/ash-k8s"].site == "dc-ashburn"


def test_a_price_event_over_the_budget_advises_what_to_pause_with_what_it_saves() -> None:  # issue 46, item 6
    from hybridctl.render.failover import unlisted_text

    inventory = load_inventory(EXAMPLE_PATHS[0].parent / "cloud-burst.yaml").inventory
    applied = plan(inventory)
    runbook, _ = failed_over(inventory, applied, parse_events(["price ash-h100=x3"]),
                             steps_for=_as_applied(inventory, applied))
    over = next(n for n in runbook.notes if n.startswith("over budget: "))
    assert "to come back under it: pause or defer foundation-pretrain (burst) on ash-h100: saves $" in over
    # nothing moved: the money text says the change is the new price of what stays, not work that moved
    assert "work that moved" not in unlisted_text(runbook)
