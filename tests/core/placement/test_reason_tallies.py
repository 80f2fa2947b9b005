"""What the reasons count of a timed plan's pools (reason_tallies.py): the busiest segment, never the week's work
summed. The week fleet with the evaluation grown to 6 replicas of 500 hours and the rented quota cut to one machine
read "hold 32 GPUs, of which 44 are taken", and the daytime service's rented replicas "2 of 1 machines in use"."""

from __future__ import annotations

import re

from hybridctl.core.placement.planner import plan
from support.plan_week import AT_PLAN_WEEK
from support.week_fleet import WEEK_FLEET, week_fleet

ONE_MACHINE = WEEK_FLEET.replace("max_gpus: 64", "max_gpus: 8")
TAKEN = re.compile(r"hold (\d+) GPUs, of which (\d+) are taken \(([^)]*)\).*\((\d+) of (\d+) in use\)")


def _reason(text: str, workload: str) -> tuple[int, int, str, int, int]:
    result = plan(week_fleet(text), options=AT_PLAN_WEEK)
    [unplaced] = [u for u in result.unplaced if u.workload == workload]
    found = TAKEN.search(unplaced.reason)
    assert found, unplaced.reason
    capacity, taken, breakdown, machines, quota = found.groups()
    return int(capacity), int(taken), breakdown, int(machines), int(quota)


def test_a_lowest_tier_replica_is_told_what_the_busiest_segments_hold() -> None:
    text = ONE_MACHINE.replace("    hours_per_month: 100", "    hours_per_month: 500\n    replicas: 6")
    capacity, taken, breakdown, machines, quota = _reason(text, "weekly-eval")
    assert (capacity, quota) == (32, 1)
    assert taken <= capacity and machines <= quota
    assert sum(int(n) for n in re.findall(r"(\d+) by", breakdown)) == taken


def test_a_fixed_replica_is_told_the_machines_its_segments_run() -> None:
    # two rented 4-GPU service replicas run every daytime segment whole: they share one p5 machine
    capacity, taken, breakdown, machines, quota = _reason(ONE_MACHINE.replace("    replicas: 3\n", "    replicas: 9\n"),
                                                          "day-service")
    assert (capacity, taken, breakdown, machines, quota) == (32, 32, "32 by fixed-tier workloads", 1, 1)
