"""Scheduled scaling in the aws-gpu-pools program (issue 31 item 5): the stack config's weekly resizes of a
pay-per-use pool become `aws.autoscaling.Schedule` resources on its node group's Auto Scaling group, each a
valid PutScheduledUpdateGroupAction (botocore's model) inside the node group's scaling; a hostile
`schedule` is refused before anything is declared."""

from __future__ import annotations

from typing import Any

import pytest
from eks_model import EksRejects, check_scaling, check_scheduled
from hybridctl.core.deploy.stackconfig import stack_configs
from hybridctl.drivers.synth import ProgramRun, synth_stack
from hybridctl.paths import stacks_dir
from pulumi_stack_harness import config_values, import_stack_module, run_program
from support.clock import clock, planned
from test_synth_contracts import validate

gpu_pools = import_stack_module("aws-gpu-pools", "gpu_pools")
SCHEDULE, NODE_GROUP = "aws:autoscaling/schedule:Schedule", "aws:eks/nodeGroup:NodeGroup"

SPOT: dict[str, Any] = {
    "name": "p5-spot", "instanceTypes": ["p5.48xlarge"], "capacityType": "spot", "gpuType": "H100",
    "gpusPerNode": 8, "minSize": 0, "desiredSize": 1, "maxSize": 4,
    "schedule": [{"recurrence": "30 21 * * 1", "timeZone": "Europe/Dublin", "minSize": 1, "maxSize": 4},
                 {"recurrence": "0 2 * * 2", "timeZone": "Europe/Dublin", "minSize": 0, "maxSize": 4}],
}


def run(pools: list[dict[str, Any]]) -> ProgramRun:
    config = config_values("hybridctl", {"aws:region": "us-east-1", "site": "aws", "clusterName": "ml",
                                         "inventoryName": "clock", "planDigest": "sha256:t", "nodePools": pools})
    return run_program(lambda: gpu_pools.program(gpu_pools.load_config()), config)


def put_scheduled_update_group_action(schedule: Any) -> dict[str, Any]:
    """What pulumi-aws sends for it: a desired capacity of -1 is no DesiredCapacity (the group's stays)."""
    i = schedule.inputs
    request = {"AutoScalingGroupName": i["autoscalingGroupName"], "ScheduledActionName": i["scheduledActionName"],
               "Recurrence": i["recurrence"], "TimeZone": i["timeZone"], "MinSize": i["minSize"], "MaxSize": i["maxSize"]}
    return request if i["desiredCapacity"] == -1 else {**request, "DesiredCapacity": i["desiredCapacity"]}


def checked(run_: ProgramRun) -> list[tuple[str, str, int, int, int]]:
    """Every scheduled action of the run, each checked as AWS would check it."""
    out = []
    for s in run_.of_type(SCHEDULE):
        request = put_scheduled_update_group_action(s)
        assert validate("autoscaling", "PutScheduledUpdateGroupAction", request) == [], s.name
        pool = s.name.rsplit("-", 2)[0]
        scaling = run_.one(NODE_GROUP, pool).inputs["scalingConfig"]
        check_scaling(scaling["minSize"], scaling["desiredSize"], scaling["maxSize"])
        # never a forced size: lowering min lets Cluster Autoscaler drain idle nodes, raising it raises desired
        assert "DesiredCapacity" not in request, s.name
        check_scheduled(request["MinSize"], None, request["MaxSize"], scaling["minSize"], scaling["maxSize"])
        assert request["AutoScalingGroupName"] == f"<unknown: ASG of NodeGroup {pool}>"
        assert request["ScheduledActionName"] == s.name
        out.append((s.name, request["Recurrence"], request["TimeZone"], request["MinSize"], request["MaxSize"]))
    return sorted(out)


def test_each_resize_is_a_scheduled_action_on_the_node_groups_asg() -> None:
    assert checked(run([SPOT])) == [("p5-spot-mon-2130", "30 21 * * 1", "Europe/Dublin", 1, 4),
                                    ("p5-spot-tue-0200", "0 2 * * 2", "Europe/Dublin", 0, 4)]


def test_a_pool_without_schedule_gets_no_scheduled_action() -> None:
    assert run([{k: v for k, v in SPOT.items() if k != "schedule"}]).of_type(SCHEDULE) == []


def test_the_hand_worked_fleet_synthesizes_its_schedule_as_valid_aws_requests() -> None:
    (config,) = stack_configs(clock(), planned("2026-W44"), "sha256:test").gpu_pools
    synthesized = synth_stack(config.project, config.stack_name, config.values(), stacks_dir())
    actions = checked(synthesized)
    assert len(actions) == 10 + 12 + 10 + 10  # rent, rent-spot, rent-a100, rent-l4
    assert ("rent-mon-0830", "30 8 * * 1", "Europe/Amsterdam", 2, 8) in actions
    assert ("rent-spot-sun-2330", "30 23 * * 0", "Etc/UTC", 1, 4) in actions  # the lead across Monday 00:00
    assert {r for _, r, *_ in actions} == {a.recurrence for p in config.node_pools for a in p.schedule}


def test_the_aws_check_catches_a_desired_outside_min_and_max() -> None:
    with pytest.raises(EksRejects, match="must be between"):
        check_scheduled(2, 1, 4, 0, 4)
    with pytest.raises(EksRejects, match="undoes them"):
        check_scheduled(0, 1, 9, 0, 4)


def action(**change: Any) -> dict[str, Any]:
    return {"recurrence": "30 21 * * 1", "timeZone": "Europe/Dublin", "minSize": 1, "maxSize": 4, **change}


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ("30 21 * * 1", "non-empty list"),
        ([], "non-empty list"),
        ([action(recurrence="60 21 * * 1")], "recurrence: expected a weekly cron"),
        ([action(recurrence="0 24 * * 1")], "recurrence"),
        ([action(recurrence="0 1 * * 7")], "recurrence"),
        ([action(recurrence="*/5 * * * *")], "recurrence"),
        ([action(recurrence="0 1 1 * 1")], "recurrence"),
        ([action(recurrence="0 1 * * 1\n")], "recurrence"),
        ([action(recurrence=5)], "expected str"),
        ([action(minSize=True)], "expected int"),
        ([action(maxSize=5)], "maxSize 4 of the pool"),
        ([action(minSize=-1)], "sizes must satisfy"),
        ([action(minSize=3, maxSize=2)], "sizes must satisfy"),
        ([action(desiredSize=1)], "exactly maxSize, minSize, recurrence, timeZone"),
        ([action(timeZone="Europe/Dublin; rm -rf /")], "timeZone: expected an IANA time zone"),
        ([action(timeZone=5)], "expected str"),
        ([action(), action(recurrence="0 2 * * 2", timeZone="America/New_York")], "one time zone"),
        (["30 21 * * 1"], "expected an object"),
        ([action(), action(recurrence="30 21 * * 1", minSize=0)], "same time: mon-2130"),
        ([action(recurrence=f"{m} {h} * * {d}") for d in range(7) for h in range(10) for m in (0, 30)][:126],
         "126 scheduled sizes, AWS allows 125"),
    ],
)
def test_a_hostile_schedule_is_refused_with_its_key(schedule: Any, message: str) -> None:
    with pytest.raises(gpu_pools.ConfigError, match=message) as err:
        gpu_pools.parse_node_pool({**SPOT, "schedule": schedule}, "hybridctl:nodePools[0]")
    assert "hybridctl:nodePools[0].schedule" in str(err.value)


def test_a_reserved_pool_keeps_its_size() -> None:
    reserved = {**SPOT, "capacityType": "reserved", "minSize": 4, "desiredSize": 4,
                "schedule": [action(minSize=4)]}
    with pytest.raises(gpu_pools.ConfigError, match="reserved pool keeps its size"):
        gpu_pools.parse_node_pool(reserved, "hybridctl:nodePools[0]")


def test_a_bad_schedule_fails_before_anything_is_declared() -> None:
    with pytest.raises(gpu_pools.ConfigError, match="recurrence"):
        run([{**SPOT, "schedule": [action(recurrence="0 0 * * 9")]}])


def scheduled_actions(week: str) -> list[tuple[str, str, str, int, int]]:
    """The Auto Scaling scheduled actions synth writes for train-onprem-serve-cloud planned for `week`."""
    from hybridctl.core.placement.planner import PlanOptions, plan
    from hybridctl.core.week.segments import parse_iso_week
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.paths import inventories_dir

    inventory = load_inventory(inventories_dir() / "train-onprem-serve-cloud.yaml").inventory
    configs = stack_configs(inventory, plan(inventory, options=PlanOptions(week=parse_iso_week(week))), "sha256:test")
    return sorted(a for c in configs.gpu_pools for a in checked(synth_stack(c.project, c.stack_name, c.values(), stacks_dir())))


def test_a_winter_and_a_summer_week_of_train_onprem_serve_cloud_write_the_same_scheduled_actions() -> None:
    """US serving scales up for 08:00-20:00 America/New_York. Before: fixed UTC times of the plan's week, so a
    winter plan left in place after the March change brought the daytime service up late in its window."""
    winter, summer = scheduled_actions("2026-W48"), scheduled_actions("2027-W26")
    assert winter and winter == summer
    assert {zone for _, _, zone, _, _ in winter} == {"America/New_York"}


def test_a_deployment_mid_day_keeps_the_minimum_the_schedule_set() -> None:
    """The morning's action raised the live group's min to 1 (its floor is 0); the autoscaler runs 3. Before:
    `pulumi up` sent the floor, and EKS set the group's min back to 0 under running work."""
    live = {"p5-spot-ab12": {
        "labels": {"hybridctl.io/site": "aws", "hybridctl.io/pool": "p5-spot"},
        "scalingConfigs": [{"minSize": 0, "desiredSize": 1, "maxSize": 4}],
        "resources": [{"autoscalingGroups": [{"name": "eks-p5-spot-ab12"}]}],
        "asg": {"minSize": 1, "desiredCapacity": 3, "maxSize": 4}}}
    config = config_values("hybridctl", {"aws:region": "us-east-1", "site": "aws", "clusterName": "ml",
                                         "inventoryName": "clock", "planDigest": "sha256:t", "nodePools": [SPOT]})
    run_ = run_program(lambda: gpu_pools.program(gpu_pools.load_config()), config, node_groups=live)
    scaling = run_.one(NODE_GROUP, "p5-spot").inputs["scalingConfig"]
    assert (scaling["minSize"], scaling["desiredSize"], scaling["maxSize"]) == (1, 3, 4)
    assert "aws:autoscaling/getGroup:getGroup" in [i.token for i in run_.invokes]


def _schedule_of(count: int) -> list[dict[str, Any]]:
    times = [f"{m} {h} * * {d}" for d in range(7) for h in range(24) for m in (0, 30)][:count]
    return [{"recurrence": t, "timeZone": "UTC", "minSize": i % 2, "maxSize": 4} for i, t in enumerate(times)]


def test_the_stack_takes_125_scheduled_sizes_and_refuses_126() -> None:
    """AWS's limit as a boundary pair (issue 45 item 8): the pair to the planner's in
    tests/core/deploy/test_scaling_action_limit.py."""
    pool = {**SPOT, "desiredSize": 1}
    assert len(gpu_pools.parse_node_pool({**pool, "schedule": _schedule_of(125)}, "hybridctl:nodePools[0]").schedule) == 125
    with pytest.raises(gpu_pools.ConfigError, match="126 scheduled sizes, AWS allows 125"):
        gpu_pools.parse_node_pool({**pool, "schedule": _schedule_of(126)}, "hybridctl:nodePools[0]")
