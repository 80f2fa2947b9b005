"""What a timed plan wants running at a moment (inventory revision 3, "Time"; `status`).

A plan is for a typical week, repeated: the moment's hour of its own week (from Monday 00:00 UTC) falls in
one of the plan's segments. In it, per pool, the GPUs and machines the plan holds (week/usage.py's
figures), and the placements with hours in it: those that run the whole segment, and deferrable ones
with the hours the plan reserves for them there (the queue fits them in at run time).

The moment is the caller's: the core reads no clock. An untimed plan has no week: None.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from hybridctl.core.plan.model import Plan, runs_whole_segment
from hybridctl.core.week.clock import segment_index_at, week_clock, week_start
from hybridctl.core.week.usage import pool_weeks

RUNNING_VERSION = 1  # of status's `now` object: its fields may grow apart from status's format


@dataclass(frozen=True)
class PoolNow:
    site: str
    pool: str
    gpu: str
    committed: bool
    capacity_gpus: int
    gpus: float  # GPUs held on average over the segment
    machines: float  # pay-per-use: machines the node group runs (a deferrable replica's by its share)
    idle_gpu_hours: float  # committed pools: GPU-hours of the segment no workload holds


@dataclass(frozen=True)
class WorkloadNow:
    workload: str
    site: str
    pool: str
    replicas: int
    gpus: int
    hours: float  # each replica's hours in the segment
    whole: bool  # runs the whole segment; otherwise deferrable, `hours` reserved for it


@dataclass(frozen=True)
class RunningNow:
    at: datetime  # UTC
    week: str  # the plan's ISO week (its daylight saving)
    index: int  # the segment, 0-based
    count: int
    start_hour: float
    end_hour: float
    starts_at: datetime  # UTC, in the moment's week
    ends_at: datetime
    pools: tuple[PoolNow, ...]
    workloads: tuple[WorkloadNow, ...]

    @property
    def clock(self) -> str:
        """`Mon 07:00 → Mon 19:00 UTC`: the segment's span in any week."""
        return f"{week_clock(self.start_hour)} → {week_clock(self.end_hour)} UTC"


def running_at(plan: Plan, moment: datetime) -> RunningNow | None:
    """The segment holding `moment` (aware), and what the plan wants running in it; None without a week."""
    if not plan.segments:
        return None
    at = moment.astimezone(UTC)
    monday = week_start(at)
    index = segment_index_at(plan.segments, at)
    segment = plan.segments[index]
    usage = {u.pool: u for u in plan.pools}
    pools = tuple(PoolNow(usage[w.pool].site, w.pool, usage[w.pool].gpu, usage[w.pool].committed,
                          usage[w.pool].capacity_gpus, w.gpus[index], w.machines[index], w.idle_gpu_hours[index])
                  for w in pool_weeks(plan))
    workloads = tuple(
        WorkloadNow(p.workload, p.site, p.pool, p.replicas, p.gpus, p.segment_hours[index],
                    runs_whole_segment(p.segment_hours[index], segment.hours))
        for p in plan.placements if p.segment_hours and p.segment_hours[index] > 0)
    return RunningNow(at, plan.week, index, len(plan.segments), segment.start_hour, segment.end_hour,
                      monday + timedelta(hours=segment.start_hour), monday + timedelta(hours=segment.end_hour),
                      pools, workloads)


def running_document(now: RunningNow) -> dict[str, object]:
    """`status --format json`'s `now`: versioned apart (RUNNING_VERSION)."""
    return {
        "version": RUNNING_VERSION, "at": now.at.isoformat(), "week": now.week,
        "segment": {"index": now.index, "of": now.count, "start_hour": now.start_hour, "end_hour": now.end_hour,
                    "starts_at": now.starts_at.isoformat(), "ends_at": now.ends_at.isoformat(), "clock": now.clock},
        "pools": [{"site": p.site, "pool": p.pool, "gpu": p.gpu, "committed": p.committed,
                   "capacity_gpus": p.capacity_gpus, "gpus": p.gpus, "machines": p.machines,
                   "idle_committed_gpu_hours": p.idle_gpu_hours} for p in now.pools],
        "workloads": [{"workload": w.workload, "site": w.site, "pool": w.pool, "replicas": w.replicas, "gpus": w.gpus,
                       "hours": w.hours, "runs": "whole segment" if w.whole else "deferrable"}
                      for w in now.workloads],
    }
