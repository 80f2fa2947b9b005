"""The drill's fast paths give what the plain computation gives, on every example inventory and a
synthetic fleet, for every scenario the standard drill generates (and its rollback)."""

from __future__ import annotations

import pytest
from hybridctl.core.failover.demand_cache import DemandCache
from hybridctl.core.failover.disrupt import Disruption
from hybridctl.core.failover.impact import impacts
from hybridctl.core.failover.replan import Replan, replan
from hybridctl.core.failover.run import FailoverRun
from hybridctl.core.failover.scenario import standard_scenarios
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.memo import RunMemo
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Plan
from hybridctl.core.pricing.incident import cash_by_workload
from hybridctl.drivers.inventory_files import load_inventory
from hybridctl.paths import inventories_dir
from inventory_gen import generate
from support.plan_week import AT_PLAN_WEEK

_EXAMPLES = sorted(p.name for p in inventories_dir().iterdir() if p.name != "scenarios")


def _inventory(name: str) -> Inventory:
    if name == "synthetic":
        return Inventory.model_validate(generate(300, 40, 1))
    return load_inventory(inventories_dir() / name).inventory


@pytest.fixture(scope="module", params=[*_EXAMPLES, "synthetic"])
def replans(request: pytest.FixtureRequest) -> tuple[Inventory, list[Replan], RunMemo]:
    """A drill's replans: one DemandCache and one RunMemo for all the scenarios."""
    inventory = _inventory(request.param)
    base = plan(inventory, options=AT_PLAN_WEEK)
    cache, memo = DemandCache(), RunMemo()
    return inventory, [replan(inventory, base, s.events, run=FailoverRun(memo, demand_cache=cache))
                       for s in standard_scenarios(inventory)], memo


def _every_workload(inventory: Inventory):  # type: ignore[no-untyped-def]
    """impacts() told that every workload may have changed: the plain computation."""
    names = {w.name for w in inventory.workloads}
    return lambda before, after, run_memo=None: set(names)


def _usd(result: Plan, workload: str) -> float:
    return cash_by_workload(result).get(workload, 0) / 100  # each plan's cash shares worked out afresh


def test_impacts_matched_by_identity_are_the_impacts_of_every_workload(replans, monkeypatch) -> None:
    """impacts() looks only at workloads with a placement or movement object not shared by both plans,
    and keeps the last plans' tallies (in the run's memo, a drill's); looking at every workload of plans
    tallied afresh gives the same entries, with each workload's costs summed plainly."""
    from hybridctl.core.failover import impact

    inventory, results, memo = replans  # the replans' memo, as a drill's: the deltas they told it are read
    quiet = Disruption((), inventory, frozenset(), frozenset(), (), {})
    fast: list[list[impact.WorkloadImpact]] = []
    for result in results:
        back = Replan(quiet, result.after, result.before, {}, 0)  # a rollback's view
        fast += [impacts(inventory, result, run_memo=memo), impacts(inventory, back, returning=True, run_memo=memo)]
    assert len(memo[impact.TALLIES])  # the tallies were kept and read
    with monkeypatch.context() as patched:
        patched.setattr(impact, "changed_workloads", _every_workload(inventory))
        # no memo: each plan tallied afresh, not read from one
        plain: list[list[impact.WorkloadImpact]] = []
        for result in results:
            back = Replan(quiet, result.after, result.before, {}, 0)
            plain += [impacts(inventory, result), impacts(inventory, back, returning=True)]
    assert fast == plain
    for result, found in zip(results, fast[::2], strict=True):
        for i in found:
            assert (i.usd_per_month_before, i.usd_per_month_after) == (
                _usd(result.before, i.workload), _usd(result.after, i.workload)), i.workload
    assert any(fast)  # some scenario changes something


def test_the_movement_memo_gives_what_data_movements_gives(replans) -> None:
    """Only demands that read data from elsewhere are looked at; the memo's movements for each replan's
    plan, and for the applied plan on the disrupted inventory, are data_movements' own."""
    from hybridctl.core.failover.demand_cache import MovementMemo
    from hybridctl.core.placement.eligibility import demands
    from hybridctl.core.placement.movements import data_movements

    inventory, results, _ = replans
    memo = MovementMemo()
    wanted = demands(inventory)
    assert memo.movements(inventory, wanted, results[0].before.placements) == \
        data_movements(inventory, wanted, results[0].before.placements)
    moved = 0
    for result in results:
        disrupted = result.disruption.inventory
        wanted = demands(disrupted)
        for placements in (result.after.placements, result.before.placements):
            got = memo.movements(disrupted, wanted, placements)
            assert got == data_movements(disrupted, wanted, placements), result.disruption.events
            moved += len(got)
    assert moved or not results[0].before.data_movements  # the memo was exercised where data moves


def test_the_delta_a_replan_remembers_is_the_one_found_by_identity() -> None:
    """A replan tells the placement delta what it re-placed; the passes over both plans find the same."""
    from hybridctl.core.plan import delta

    inventory = _inventory("synthetic")
    base = plan(inventory)
    cache = DemandCache()
    memo = RunMemo()
    remembered = 0
    for scenario in standard_scenarios(inventory):
        result = replan(inventory, base, scenario.events, run=FailoverRun(memo, demand_cache=cache))
        remembered += any(known.before is base.placements and known.after is result.after.placements
                          for known in memo[delta.DELTAS])  # told by the replan: no pass has looked yet
        found = delta.placement_delta(result.before, result.after, memo)
        by_identity = delta.PlacementDelta.of(result.before.placements, result.after.placements)
        assert [id(p) for p in found.removed] == [id(p) for p in by_identity.removed], scenario.name
        assert [id(p) for p in found.added] == [id(p) for p in by_identity.added], scenario.name
    assert remembered  # the replans' own deltas were read


@pytest.mark.parametrize("placed_count", [3, 40])
def test_the_placed_work_merged_among_the_pinned_is_in_the_planners_order(placed_count: int) -> None:
    """Both ways of merging (a few placements put in, or the two runs sorted) give sorted(): ties keep the
    pinned placement first, so that a placement the replan kept as it was stays where it was."""
    from hybridctl.core.failover.scope import _PLACEMENT_ORDER, _merged
    from hybridctl.core.plan.model import Placement

    def placement(workload: str, pool: str) -> Placement:
        return Placement(workload, "fixed", "dc-a", pool, 1, 1, 1.0, demand=workload)

    pinned = sorted((placement(f"w-{n:03}", f"p-{n % 7}") for n in range(0, 200, 2)), key=_PLACEMENT_ORDER)
    # some placed ones tie with a pinned one (same workload, demand, site and pool): equal, not the same object
    placed = sorted([placement(f"w-{n:03}", f"p-{n % 7}") for n in range(1, 2 * placed_count, 2)]
                    + [placement(pinned[5].workload, pinned[5].pool)], key=_PLACEMENT_ORDER)
    merged = _merged(list(pinned), placed)
    expected = sorted([*pinned, *placed], key=_PLACEMENT_ORDER)
    assert len(merged) == len(expected) and all(a is b for a, b in zip(merged, expected, strict=True))
