"""Words that are true in a failover: an unplaced reason counts the GPUs the work kept in place holds
(the replan's planner sees only what is left), and a runbook's duration is its steps'."""

from __future__ import annotations

from pathlib import Path

from failover_helpers import cloud, cloud_pool, inventory, onprem, pool, workload
from hybridctl.core.failover.events import parse_events
from hybridctl.core.failover.replan import replan
from hybridctl.core.placement.planner import plan
from hybridctl.drivers.inventory_files import load_inventory
from support.examples import EXAMPLES
from support.failover_runs import failed_over
from test_failover_runbook import steps_for


def test_an_unplaced_reason_counts_the_gpus_held_by_work_kept_in_place() -> None:
    # spot reclaimed: research-sweeps (opportunistic) may use only ash-h100 on premises, which the
    # burst-tier pretraining keeps; the planner saw 0 GPUs left there, the pool holds 32
    fleet = load_inventory(EXAMPLES / "cloud-burst.yaml").inventory
    result = replan(fleet, plan(fleet), parse_events(["spot-reclaim use1-p5-spot"]))
    [unplaced] = [u for u in result.after.unplaced if u.workload == "research-sweeps"]
    ash = next(p for p in result.after.pools if p.pool == "ash-h100")
    assert ash.capacity_gpus == ash.used_gpus == 32  # the plan the words are held against
    assert unplaced.reason.startswith(
        f"needs 4 × 8 H100 in US; its 1 eligible H100 pool (ash-h100) holds {ash.capacity_gpus} GPUs, of which "
        f"{ash.used_gpus} are taken ({ash.used_gpus} by work kept where it runs)")


def test_the_runbook_duration_comes_from_its_steps() -> None:
    # coder moves onto the cloud machine api already runs, which has room: no node to provision, no
    # step that takes time, so the runbook's duration is not the cloud site's 12 provisioning minutes
    fleet = inventory([onprem("dc-a", [pool("a-l40s", "L40S", 2, 1.0)], provision=30),
                       cloud("aws", [cloud_pool("aws-l40s", "L40S", "g6e.12xlarge", 8, 2.0, "on_demand")],
                             provision_minutes=12)],
                      [workload("api", "realtime_inference", ["L40S"], sites=["aws"]),
                       workload("coder", "realtime_inference", ["L40S"], sites=["dc-a", "aws"])], cost_model="cash")
    runbook, _ = failed_over(fleet, plan(fleet), parse_events(["site-lost dc-a"]), steps_for=steps_for(fleet))
    finish: dict[str, float] = {}
    for s in runbook.steps:
        finish[s.id] = max((finish[d] for d in s.step.depends_on if d in finish), default=0.0) + s.estimated_minutes
    assert [s.estimated_minutes for s in runbook.steps] == [0.0] * len(runbook.steps)
    assert runbook.estimated_minutes == max(finish.values()) == 0.0


def test_a_runbook_that_provisions_takes_the_provisioning_minutes() -> None:
    hospital = load_inventory(Path(__file__).resolve().parents[2] / "data" / "showback" / "hospital.yaml").inventory
    runbook, _ = failed_over(hospital, plan(hospital), parse_events(["site-lost dc-main"]),
                               steps_for=steps_for(hospital))
    assert {s.id: s.estimated_minutes for s in runbook.steps}["cloud-pools/aws-use1"] == 12.0
    assert runbook.estimated_minutes == 12.0
