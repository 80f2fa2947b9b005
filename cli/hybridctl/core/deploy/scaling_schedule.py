"""Scheduled scaling of pay-per-use node groups over the plan's week (inventory revision 3, "Time").

Pure: a timed plan and its inventory in, per cloud pool the weekly actions that resize its node group's
Auto Scaling group (stacks/aws-gpu-pools declares one `aws.autoscaling.Schedule` per action).

What a pool needs in each segment of the week (its machines by core/week/machines.py's rule):
- min: the shared machines of the replicas that run the whole segment: the plan pays for them every hour of
  the segment, so they stay up;
- desired: min plus the own machines of every deferrable replica that has hours in the segment: the queue
  (Kueue) chooses which hours it runs, so its machines are there for the whole segment and Cluster
  Autoscaler may remove them while idle.
Both are clamped to the node group's max (its quota in machines).

A segment's need starts `provision_minutes` (the site's, rounded up to the minute) before the segment
opens, so its machines are in service when it opens, and ends when it closes: at minute t of the week the
group holds the largest need of the segment at t and of every segment opening in (t, t + lead]. An action
is set where that changes, so actions at the same minute are one and a need that does not change sets
nothing.

An action sets the group's min (and max), never its desired size: raising min raises desired with it, and
lowering min lets Cluster Autoscaler remove nodes as they go idle, draining them, rather than terminating
busy ones (a forced desired would evict running pods, fixed-tier ones included). The min of a segment
counts the replicas running the whole of it, the always-on fixed tier's among them, so no action goes
below what they need.

Daylight saving: the segments are in UTC, cut at the plan's week, but the windows are wall-clock times of
their own zones. Each action recurs in the IANA zone of the pool's windows (AWS's `TimeZone`), at the
wall-clock time the plan's week gives it there, so a plan made in winter still scales at the windows'
edges in summer. A pool whose work has windows in several zones recurs in the zone with the most window
hours on the pool: the other zones' edges move with it, right whenever their offset from it is the plan
week's (Europe and the US all year but the two or three weeks between their clock changes, which
`status` reports); a pool without windows recurs in UTC.

Committed pools (reserved cloud capacity) keep their fixed size: no schedule. An untimed plan: none.
"""

from __future__ import annotations

import math
import zoneinfo
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hybridctl.core.deploy.stackvalues import UTC_ZONE, NodePoolConfig, ScalingAction
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.inventory.schedule import MINUTES_PER_WEEK
from hybridctl.core.plan.model import Plan
from hybridctl.core.week.machines import segment_machines
from hybridctl.core.week.segments import parse_iso_week

PoolKey = tuple[str, str]  # (site, pool): the node groups' key; a pool's machines are keyed by its name alone
# (unique in an inventory), as machines.py keys them
# AWS allows 125 scheduled actions per Auto Scaling group (stacks/aws-gpu-pools refuses more): a week
# that needs more is coarsened, holding the larger size through the shortest stretches (_within).
MAX_ACTIONS = 125


Need = tuple[int, int]  # (min, desired) machines


def segment_needs(plan: Plan) -> dict[str, tuple[Need, ...]]:
    """Pool name -> (min, desired) machines in each segment of the plan's week, for its pay-per-use pools
    with placements: min the shared machines, desired those and the own machines running (machines.py)."""
    tallies = segment_machines(plan.placements, [s.hours for s in plan.segments],
                               {u.pool: u.gpus_per_node for u in plan.pools if not u.committed})
    return {pool: tuple((m, m + own) for m, own in zip(t.shared, t.own_running, strict=True))
            for pool, t in tallies.items()}


def weekly_actions(starts: tuple[int, ...], needs: tuple[Need, ...], lead_minutes: int,
                   max_size: int) -> tuple[ScalingAction, ...]:
    """The actions that give the group, at each minute of the week, the need of the segment it is in and of
    every segment opening within `lead_minutes` after it (`starts`: each segment's first minute, the first 0).
    () when that never changes."""
    if not needs:
        return ()
    n = len(starts)

    def need_at(t: int) -> Need:
        current = bisect_right(starts, t) - 1
        low, high = needs[current]
        # the segments opening within the lead after t, in order round the week (each at most once)
        for step in range(1, n):
            k = (current + step) % n
            if lead_minutes < MINUTES_PER_WEEK and (starts[k] - t) % MINUTES_PER_WEEK > lead_minutes:
                break
            low, high = max(low, needs[k][0]), max(high, needs[k][1])
        return min(low, max_size), min(high, max_size)

    # The held need changes only where a segment opens or where one's lead time begins.
    moments = sorted({s for s in starts} | {(s - lead_minutes) % MINUTES_PER_WEEK for s in starts})
    held = [need_at(t) for t in moments]
    actions = []
    for k, t in enumerate(moments):
        if held[k] != held[k - 1]:  # k = 0 compares with the week's last moment: the week repeats
            low, high = held[k]
            actions.append(ScalingAction(t, low, high, max_size))
    return _within(actions, MAX_ACTIONS)


def _sizes(a: ScalingAction) -> Need:
    return a.min_size, a.desired_size


def _added(actions: list[ScalingAction], span: list[int], i: int) -> int:
    """The machine-minutes a fold of stretch i into the one before it adds."""
    before, this = actions[i - 1], actions[i]
    top = max(before.desired_size, this.desired_size)
    return span[i - 1] * (top - before.desired_size) + span[i] * (top - this.desired_size)


def _within(actions: list[ScalingAction], limit: int) -> tuple[ScalingAction, ...]:
    """At most `limit` actions: a stretch is folded into the one before it, the two holding the larger of
    their sizes (never fewer machines than a segment needs: more, for a while), the fold that adds the
    fewest machine-minutes first, until it fits."""
    out = list(actions)
    while len(out) > limit:
        n = len(out)
        span = [(out[(i + 1) % n].minute - out[i].minute) % MINUTES_PER_WEEK or MINUTES_PER_WEEK for i in range(n)]
        k = min(range(n), key=lambda i: (_added(out, span, i), i))
        before, folded = out[(k - 1) % n], out[k]
        out[(k - 1) % n] = replace(before, min_size=max(before.min_size, folded.min_size),
                                   desired_size=max(before.desired_size, folded.desired_size))
        del out[k]
        # a stretch now the same as the one before it sets nothing
        out = [a for i, a in enumerate(out) if _sizes(a) != _sizes(out[i - 1])] if len(out) > 1 else []
    return tuple(out)


def pool_zones(inventory: Inventory, plan: Plan) -> dict[PoolKey, str]:
    """(site, pool) -> the IANA zone of its work's windows: the one with the most window hours on the pool
    (ties: the first by name); pools without windowed work are not listed (UTC)."""
    schedules = {w.name: w.schedule for w in inventory.workloads if w.schedule is not None}
    hours: dict[PoolKey, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for p in plan.placements:
        schedule = schedules.get(p.workload)
        for window in schedule.windows if schedule is not None else ():
            hours[(p.site, p.pool)][window.tz] += len(window.day_indexes()) * window.span_minutes()[1]
    return {key: min(by_zone, key=lambda z: (-by_zone[z], z)) for key, by_zone in hours.items()}


def on_wall_clock(actions: tuple[ScalingAction, ...], zone: str, week: str) -> tuple[ScalingAction, ...]:
    """The actions recurring in `zone`: each at the wall-clock minute of the week its UTC minute has there in
    the plan's `week`. Two that fall on one wall minute (a week with a clock change) are one, the later."""
    if zone in (UTC_ZONE, "UTC"):
        return actions
    monday = parse_iso_week(week).monday
    start = datetime(monday.year, monday.month, monday.day, tzinfo=UTC)
    tz = zoneinfo.ZoneInfo(zone)
    by_wall: dict[int, ScalingAction] = {}
    for a in actions:
        local = (start + timedelta(minutes=a.minute)).astimezone(tz)
        wall = local.weekday() * 1440 + local.hour * 60 + local.minute
        by_wall[wall] = replace(a, zone=zone, wall_minute=wall)
    return tuple(sorted(by_wall.values()))


def pool_schedules(inventory: Inventory, plan: Plan, max_sizes: Mapping[PoolKey, int]
                   ) -> dict[PoolKey, tuple[ScalingAction, ...]]:
    """(site, pool) -> its weekly scaling actions, for the pay-per-use cloud pools in `max_sizes` (each
    node group's max size) whose need changes over the plan's week; {} for an untimed plan."""
    if not plan.segments:
        return {}
    sites = {s.name: s for s in inventory.sites}
    starts = tuple(round(s.start_hour * 60) for s in plan.segments)
    out: dict[PoolKey, tuple[ScalingAction, ...]] = {}
    usages = {(u.site, u.pool): u for u in plan.pools}
    needs_of = segment_needs(plan)
    zones = pool_zones(inventory, plan)
    for key, maximum in sorted(max_sizes.items()):
        usage, site, needs = usages.get(key), sites.get(key[0]), needs_of.get(key[1])
        if usage is None or site is None or needs is None:  # committed, or no work: no schedule
            continue
        lead = math.ceil(site.provision_minutes_effective)
        actions = weekly_actions(starts, needs, lead, maximum)
        if actions:
            out[key] = on_wall_clock(actions, zones.get(key, UTC_ZONE), plan.week) if plan.week else actions
    return out


def with_schedules(inventory: Inventory, plan: Plan, node_pools: dict[PoolKey, NodePoolConfig]
                   ) -> dict[PoolKey, NodePoolConfig]:
    """`node_pools` with their weekly actions. A scheduled group's min is the week's floor (the smallest min
    of its actions): a node group update must not raise the group back above what a segment needs."""
    schedules = pool_schedules(inventory, plan, {k: p.max_size for k, p in node_pools.items()
                                                 if p.capacity_type != "reserved"})
    out = dict(node_pools)
    for key, actions in schedules.items():
        pool = node_pools[key]
        out[key] = replace(pool, schedule=actions, min_size=min(pool.min_size, *(a.min_size for a in actions)))
    return out
