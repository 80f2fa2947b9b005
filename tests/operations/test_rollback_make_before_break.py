"""Make before break in a rollback (issue 46, item 7): cloud capacity a fixed service still uses is released
only after the on-prem queues that take the service back have admitted it."""

from __future__ import annotations

from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.plan_steps import steps_once
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.operations.failover_compute import steps_builder
from support.examples import EXAMPLES
from support.failover_runs import failed_over, rollback_of


def _waits_for(runbook, step_id: str) -> set[str]:  # type: ignore[no-untyped-def]
    by_id = {s.id: s.step for s in runbook.steps}
    seen: set[str] = set()
    todo = list(by_id[step_id].depends_on)
    while todo:
        dep = todo.pop()
        if dep not in seen:
            seen.add(dep)
            todo += by_id[dep].depends_on
    return seen


def test_the_cloud_pools_shrink_after_the_on_prem_queues_take_the_work_back() -> None:
    inventory = load_inventory(EXAMPLES / "cloud-burst.yaml").inventory
    base = plan(inventory)
    steps_for = steps_once(steps_builder(inventory, None, None, None, applied=base))
    runbook, _ = failed_over(inventory, base, parse_events(["site-lost dc-ashburn"]), steps_for=steps_for)
    back = rollback_of(inventory, runbook, runbook.after, steps_for=steps_for, returning_sites=["dc-ashburn"])
    shrink = next(s for s in back.steps if s.id == "cloud-pools/aws-us-east-1")
    assert shrink.group == "release"
    assert "cluster-queues/ash-k8s" in _waits_for(back, shrink.id)
