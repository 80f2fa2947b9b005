"""Capacity over the week (inventory revision 3, "Time"), worked by hand.

A 16-GPU owned H100 pool; a daytime service of 3 x 4 GPUs, Monday to Friday 08:00-20:00 UTC (60 h a
week, whole windows), and an 8-GPU batch without schedule. The week is cut at 8, 20, 32, ... 116: five
12-hour day segments and six off-hours segments of 8 + 12 + 12 + 12 + 12 + 52 = 108 hours.
- 100 h a week of batch fit the off-hours: both stay on the owned pool (revision 2 counted the batch's 8
  GPUs all month beside the service's 12: 20 > 16, and sent it away).
- 120 h do not: 12 h must go into day segments, where 4 GPUs are free. GPU-hours would allow it
  (4 GPUs x 60 h = 240 GPU-hours spare, 96 needed), the gang rule does not (8 GPUs never fit beside
  12 of 16): the batch is not placed on the owned pool.
"""

from __future__ import annotations

import pytest
from support.cases import placements_of
from support.timed import DAY, HAND, planned


def test_the_week_is_cut_at_the_service_windows() -> None:
    result = planned(100)
    assert result.week == "2026-W48"
    assert [(s.start_hour, s.end_hour) for s in result.segments] == [
        (0, 8), (8, 20), (20, 32), (32, 44), (44, 56), (56, 68), (68, 80), (80, 92), (92, 104), (104, 116), (116, 168)]


def test_deferrable_hours_fill_the_off_hours_beside_a_daytime_service() -> None:
    result = planned(100)
    assert not result.unplaced
    (service,) = placements_of(result, "day-service")
    (batch,) = placements_of(result, "batch")
    assert (service.pool, batch.pool) == ("own", "own")
    assert service.segment_hours == tuple(12.0 if s in DAY else 0.0 for s in range(11))
    assert sum(batch.segment_hours) == pytest.approx(100, abs=1e-4)
    assert all(batch.segment_hours[s] == 0 for s in DAY)  # 8 GPUs never fit beside 12 of 16


def test_a_gang_never_runs_on_free_gpu_hours_it_does_not_fit() -> None:
    result = planned(120)
    assert [pl.pool for pl in placements_of(result, "day-service")] == ["own"]
    assert not placements_of(result, "batch")  # opportunistic: no on-demand, and the owned pool's gangs don't fit
    assert [u.workload for u in result.unplaced] == ["batch"]


def test_with_room_the_solver_moves_the_cheaper_replica_out() -> None:
    # the service may rent, and the batch is a burst run whose GPU-hours rank before the service's cash: one 4-GPU
    # replica on a p5 for 60 h a week (8 GPUs x 60 x 730/168 x $10 = $20,857) frees a gang of 8 beside 8 in the day
    # segments. As opportunistic work (the example's batch_inference), the batch waits instead (revision 4)
    free = HAND.replace("    sites: [dc]\n", "")
    waiting = planned(120, free)
    assert [u.workload for u in waiting.unplaced] == ["batch"]
    assert sorted((pl.pool, pl.replicas) for pl in placements_of(waiting, "day-service")) == [("own", 3)]
    result = planned(120, free.replace("type: batch_inference", "type: training"))
    assert not result.unplaced
    assert sorted((pl.pool, pl.replicas) for pl in placements_of(result, "day-service")) == [("own", 2), ("rent", 1)]
    (batch,) = placements_of(result, "batch")
    assert batch.pool == "own" and sum(batch.segment_hours) == pytest.approx(120, abs=1e-4)
    for s, segment in enumerate(result.segments):  # GPUs of whole replicas + GPU-hours / L <= 16
        whole = 8 if s in DAY else 0
        assert whole + 8 * batch.segment_hours[s] / segment.hours <= 16 + 1e-6


def test_deferrable_replicas_time_share_a_committed_pool() -> None:
    # revision 2 counted GPUs: two 8-GPU replicas of 60 h a week could not share 8 GPUs; GPU-hours can
    text = HAND.replace("gpus: 16,", "gpus: 8,").replace("    replicas: 3\n", "    replicas: 1\n") \
        .replace("    hours_per_month: HOURS\n",
                                                                    "    hours_per_month: HOURS\n    replicas: 2\n")
    result = planned(50, text)
    (batch,) = placements_of(result, "batch")
    assert (batch.pool, batch.replicas) == ("own", 2)
    for s, segment in enumerate(result.segments):
        whole = 4 if s in DAY else 0
        assert whole + 2 * 8 * batch.segment_hours[s] / segment.hours <= 8 + 1e-6
