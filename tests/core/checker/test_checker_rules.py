"""The checker is shown bad plans: a valid plan broken one rule at a time must be flagged,
and the violation must name the rule it breaks.

One inventory holds everything a rule needs. The planner places it (and the checker must
accept that plan: latency equal to the budget is inside it). Each test then moves one
placement somewhere it may not go, re-pricing it so that only the rule under test breaks,
or tightens the inventory under an unchanged plan.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
import yaml
from hybridctl.core.checker.check import check_plan
from hybridctl.core.checker.rules import spec_capacity_allowed, spec_tier
from hybridctl.core.inventory.documents import Source
from hybridctl.core.inventory.loader import load_sources
from hybridctl.core.inventory.models import CapacityType, Inventory, Policies, Workload
from hybridctl.core.placement.planner import plan
from hybridctl.core.plan.model import Placement, Plan
from support.cases import placements_of

BUDGET_MS = 30  # web's latency budget; dc-eu2 is exactly this far from the users


def _site(name: str, kind: str, jurisdiction: str, latency: int, egress: float, pools: list[dict[str, Any]],
          **extra: Any) -> dict[str, Any]:
    site = {"name": name, "kind": kind, "jurisdiction": jurisdiction, "egress_usd_per_gb": egress,
            "latency_ms": {"users": latency}, "pools": pools, **extra}
    if kind == "cloud":
        site.update(provider="aws", region="us-east-1", cluster="k8s-us")
    return site


def _owned(name: str, gpu: str, gpus: int, usd: float) -> dict[str, Any]:
    return {"name": name, "gpu": gpu, "gpus": gpus, "capacity_type": "reserved", "usd_per_gpu_hour": usd}


def _rented(name: str, capacity_type: str, usd: float) -> dict[str, Any]:
    return {"name": name, "gpu": "L4", "instance_type": "g6.xlarge", "max_gpus": 8, "capacity_type": capacity_type,
            "usd_per_gpu_hour": usd}


def _work(name: str, kind: str, types: list[str], **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": kind, "gpu": {"types": types, "count": 1}, **extra}


def load(raw: dict[str, Any]) -> Inventory:
    """Through the real loader: every inventory here is one `hybridctl validate` accepts."""
    return load_sources([Source("checker.yaml", yaml.safe_dump(raw, sort_keys=False))]).inventory


def document(**policies: Any) -> dict[str, Any]:
    return {
        "version": 1, "name": "checker", "regions": ["users"],
        "policies": {"spread_fixed_across": 3, **policies},
        "sites": [
            _site("dc-eu", "onprem", "EU", 10, 0.02, [_owned("eu-l4", "L4", 8, 1.0)], failure_domain="d-eu"),
            _site("dc-eu2", "onprem", "EU", BUDGET_MS, 0.0,
                  [_owned("eu2-l4", "L4", 8, 1.5), _owned("eu2-t4", "T4", 4, 0.5)], failure_domain="d-eu2"),
            _site("dc-eu3", "onprem", "EU", 20, 0.0, [_owned("eu3-l4", "L4", 8, 1.2)], failure_domain="d-eu3"),
            _site("aws-us", "cloud", "US", 80, 0.09, [_rented("us-od", "on_demand", 2.0), _rented("us-spot", "spot", 0.5)]),
        ],
        "datasets": [
            {"name": "claims", "site": "dc-eu", "size_gb": 100, "sensitivity": "restricted", "residency": ["EU"]},
            {"name": "metrics", "site": "dc-eu3", "size_gb": 10, "sensitivity": "confidential", "residency": ["EU"]},
            {"name": "ledger", "site": "dc-eu3", "size_gb": 10, "sensitivity": "restricted"},
        ],
        "workloads": [
            # fixed, 3 replicas over 3 domains: one of them must be dc-eu2, exactly at the latency budget
            _work("web", "realtime_inference", ["L4"], replicas=3, latency={"region": "users", "p95_ms": BUDGET_MS}),
            # pays data movement: claims lives at dc-eu, and train may only run at dc-eu2
            _work("train", "training", ["L4"], hours_per_month=100, datasets=["claims"], sites=["dc-eu2"]),
            _work("sweep", "experiment", ["L4"], hours_per_month=100, preemptible=True, checkpoint_minutes=10),
            _work("batch", "batch_inference", ["L4"], hours_per_month=100),
            _work("tune", "fine_tuning", ["T4"], hours_per_month=100, max_usd_per_month=200),
            _work("eval", "evaluation", ["L4"], hours_per_month=50, datasets=["metrics"]),
            _work("audit", "training", ["L4"], hours_per_month=50, datasets=["ledger"]),
        ],
    }


@pytest.fixture(scope="module")
def inv() -> Inventory:
    return load(document())


@pytest.fixture(scope="module")
def good(inv: Inventory) -> Plan:
    result = plan(inv)
    assert not result.unplaced, result.unplaced
    return result


def _one(p: Plan, workload: str, site: str | None = None) -> Placement:
    return next(pl for pl in p.placements if pl.workload == workload and (site is None or pl.site == site))


def moved(inv: Inventory, p: Plan, workload: str, to_pool: str, *, from_site: str | None = None) -> Plan:
    """`p` with one placement of `workload` moved to `to_pool`, priced as that pool charges."""
    site, pool = next((s, q) for s in inv.sites for q in s.pools if q.name == to_pool)
    w = next(w for w in inv.workloads if w.name == workload)
    old = _one(p, workload, from_site)
    price = pool.usd_per_gpu_hour or 0.0
    new = dataclasses.replace(old, site=site.name, pool=pool.name, gpu_type=pool.gpu,
                              usd_per_month=round(old.replicas * w.gpu.count * w.hours * price, 2))
    return dataclasses.replace(p, placements=tuple(new if pl is old else pl for pl in p.placements))


def with_workload(inv: Inventory, name: str, **changes: Any) -> Inventory:
    workloads = [w.model_copy(update=changes) if w.name == name else w for w in inv.workloads]
    return inv.model_copy(update={"workloads": workloads})


# Moving a placement by hand leaves the plan's per-pool machines and cash figures as the planner
# wrote them; the checker rightly flags those too, as consequences of the move, not as the rule.
_RESTATED_SUMMARIES = ("machines: pool ", "pool cost: pool ", "missing from the plan's pools",
                       "committed cost: plan says", "pay-per-use cost: plan says", "total cost: plan says",
                       "idle committed cost: plan says")


def rule_violations(inv: Inventory, p: Plan) -> list[str]:
    """The checker's violations less the pool summaries a hand-made move leaves stale."""
    return [x for x in check_plan(inv, p) if not any(s in x for s in _RESTATED_SUMMARIES)]


def flagged(inv: Inventory, p: Plan, *words: str) -> list[str]:
    """The violations; every one must name the rule (all of `words`) or be a pool summary the move
    left stale, and at least one must name the rule."""
    problems = check_plan(inv, p)
    assert problems, "the checker accepted a plan that breaks a rule"
    named = [problem for problem in problems if all(word in problem for word in words)]
    assert named, f"no violation names the rule {words}: {problems}"
    for problem in problems:
        assert problem in named or any(s in problem for s in _RESTATED_SUMMARIES), \
            f"{problem!r} does not name the rule {words}"
    return named


class TestTheGoodPlan:
    def test_is_accepted(self, inv: Inventory, good: Plan) -> None:
        assert check_plan(inv, good) == []

    def test_uses_the_site_exactly_at_the_latency_budget(self, good: Plan) -> None:
        """spread 3 over dc-eu, dc-eu2, dc-eu3 needs dc-eu2, whose latency equals the budget: `<=`, not `<`."""
        assert sorted(pl.site for pl in placements_of(good, "web")) == ["dc-eu", "dc-eu2", "dc-eu3"]

    def test_pays_the_data_movement_it_must(self, good: Plan) -> None:
        assert [(m.workload, m.dataset, m.from_site, m.to_site, m.usd_per_month) for m in good.data_movements
                if m.usd_per_month] == [
            ("train", "claims", "dc-eu", "dc-eu2", 2.0)]  # 100 GB × 1 pass × $0.02/GB


class TestEachBrokenRuleIsNamed:
    def test_capacity(self, inv: Inventory, good: Plan) -> None:
        used = next(u.used_gpus for u in good.pools if u.pool == "eu2-l4")
        tight = inv.model_copy(update={"sites": [
            s.model_copy(update={"pools": [q.model_copy(update={"gpus": used - 1}) if q.name == "eu2-l4" else q
                                           for q in s.pools]}) for s in inv.sites]})
        assert flagged(tight, good, "pool eu2-l4", "capacity") == [
            f"pool eu2-l4: {used} GPUs used, capacity {used - 1}"]

    def test_gpu_type(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "tune", "eu2-l4"), "tune in eu2-l4", "GPU L4 is not one of ['T4']")

    def test_spot_for_burst_work(self, inv: Inventory, good: Plan) -> None:
        problems = check_plan(inv, moved(inv, good, "eval", "us-spot"))
        assert any("capacity type spot not allowed for tier burst" in p for p in problems)
        assert any("spot capacity for non-preemptible work" in p for p in problems)

    def test_spot_for_opportunistic_work_that_does_not_checkpoint(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "batch", "us-spot"), "spot")

    def test_spot_for_preemptible_work_is_allowed(self, inv: Inventory, good: Plan) -> None:
        assert rule_violations(inv, moved(inv, good, "sweep", "us-spot")) == []

    def test_on_demand_for_opportunistic_work(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "batch", "us-od"), "capacity type on_demand not allowed for tier opportunistic")

    def test_on_demand_for_opportunistic_work_when_the_policy_allows_it(self, good: Plan) -> None:
        allowing = load(document(allow_on_demand_for_opportunistic=True))
        assert rule_violations(allowing, moved(allowing, good, "batch", "us-od")) == []

    def test_residency(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "eval", "us-od"), "dataset metrics must stay in ['EU'], site is US")

    def test_restricted_data_in_the_cloud(self, inv: Inventory, good: Plan) -> None:
        # restricted data in the cloud breaks two rules of the spec: the sensitivity rule, and the
        # cloud's max_sensitivity (confidential at most); both are named
        problems = rule_violations(inv, moved(inv, good, "audit", "us-od"))
        assert sorted(problems) == ["audit in us-od: max_sensitivity: restricted dataset ledger at aws-us",
                                    "audit in us-od: restricted dataset ledger processed in the cloud"]

    def test_latency_over_the_budget(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "web", "us-od", from_site="dc-eu3"),
                f"latency to users 80 ms at aws-us, over {BUDGET_MS} ms")

    def test_unmeasured_latency_is_named_as_such(self, inv: Inventory, good: Plan) -> None:
        # no latency_ms for the region is no proof of any latency: refused, in words that say why
        sites = [s.model_copy(update={"latency_ms": {}}) if s.name == "aws-us" else s for s in inv.sites]
        unmeasured = inv.model_copy(update={"sites": sites})
        flagged(unmeasured, moved(unmeasured, good, "web", "us-od", from_site="dc-eu3"),
                f"latency to users unmeasured at aws-us (no latency_ms for it), needs ≤ {BUDGET_MS} ms")

    def test_latency_one_millisecond_under_the_site(self, inv: Inventory, good: Plan) -> None:
        tighter = with_workload(inv, "web", latency=inv.workloads[0].latency.model_copy(  # type: ignore[union-attr]
            update={"p95_ms": BUDGET_MS - 1}))
        flagged(tighter, good, "web in eu2-l4", f"latency to users {BUDGET_MS} ms at dc-eu2, over {BUDGET_MS - 1} ms")

    def test_allow_list(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, moved(inv, good, "train", "eu3-l4"), "site dc-eu3 not in the allow-list")

    def test_spread_of_three(self, inv: Inventory, good: Plan) -> None:
        assert flagged(inv, moved(inv, good, "web", "eu-l4", from_site="dc-eu3"), "web", "failure domains") == [
            "spread: web spans 2 failure domains, needs 3"]

    def test_spread_of_two(self, good: Plan) -> None:
        two = load(document(spread_fixed_across=2))
        together = moved(two, moved(two, good, "web", "eu-l4", from_site="dc-eu3"), "web", "eu-l4",
                         from_site="dc-eu2")
        assert flagged(two, together, "failure domains") == ["spread: web spans 1 failure domains, needs 2"]

    def test_spread_of_two_is_met_by_two_domains(self, good: Plan) -> None:
        two = load(document(spread_fixed_across=2))
        assert rule_violations(two, moved(two, good, "web", "eu-l4", from_site="dc-eu3")) == []

    def test_cost_ceiling(self, inv: Inventory, good: Plan) -> None:
        cost = _one(good, "tune").usd_per_month
        assert cost == 50.0  # 100 h × $0.50
        flagged(with_workload(inv, "tune", max_usd_per_month=cost - 0.1), good, "tune: costs 50.00, ceiling 49.90")

    def test_cost_ceiling_counts_data_movement(self, inv: Inventory, good: Plan) -> None:
        compute = _one(good, "train").usd_per_month  # 100 h × $1.50 = 150, plus $2 of movement
        flagged(with_workload(inv, "train", max_usd_per_month=compute + 1), good, "train: costs 152.00, ceiling 151.00")

    def test_data_movement_left_out(self, inv: Inventory, good: Plan) -> None:
        flagged(inv, dataclasses.replace(good, data_movements=()), "train: data movement: plan says 0.00, rules give 2.00")

    def test_data_movement_charged_to_another_workload(self, inv: Inventory, good: Plan) -> None:
        wrong = tuple(dataclasses.replace(m, workload="eval") for m in good.data_movements)
        problems = check_plan(inv, dataclasses.replace(good, data_movements=wrong))
        assert sorted(problems) == ["eval: data movement: plan says 2.00, rules give 0.00",
                                    "train: data movement: plan says 0.00, rules give 2.00"]

    def test_data_movement_not_charged_after_a_move(self, inv: Inventory, good: Plan) -> None:
        """train moved to dc-eu, where claims lives, reads it locally: a plan still charging the
        $2 of movement it paid at dc-eu2 is flagged."""
        train_at_eu = moved(with_workload(inv, "train", sites=None), good, "train", "eu-l4")
        problems = rule_violations(with_workload(inv, "train", sites=None), train_at_eu)
        assert problems == ["train: data movement: plan says 2.00, rules give 0.00"]

    def test_tier_that_the_rules_do_not_give(self, inv: Inventory, good: Plan) -> None:
        old = _one(good, "batch")
        wrong = dataclasses.replace(good, placements=tuple(
            dataclasses.replace(pl, tier="burst") if pl is old else pl for pl in good.placements))
        flagged(inv, wrong, "batch in", "tier burst, but the rules give opportunistic")

    def test_a_replica_dropped_silently(self, inv: Inventory, good: Plan) -> None:
        dropped = dataclasses.replace(good, placements=tuple(pl for pl in good.placements if pl.workload != "batch"))
        flagged(inv, dropped, "batch: 0 placed + 0 unplaced != 1 replicas")

    def test_a_price_that_is_not_the_pool_s(self, inv: Inventory, good: Plan) -> None:
        old = _one(good, "batch")
        wrong = dataclasses.replace(good, placements=tuple(
            dataclasses.replace(pl, usd_per_month=pl.usd_per_month - 1) if pl is old else pl for pl in good.placements))
        flagged(inv, wrong, "batch in", "costs")

    def test_a_pool_at_another_site(self, inv: Inventory, good: Plan) -> None:
        old = _one(good, "batch")
        wrong = dataclasses.replace(good, placements=tuple(
            dataclasses.replace(pl, site="aws-us") if pl is old else pl for pl in good.placements))
        flagged(inv, wrong, "batch in", "pool is at")

    def test_gpus_that_do_not_match_the_replicas(self, inv: Inventory, good: Plan) -> None:
        old = _one(good, "batch")
        wrong = dataclasses.replace(good, placements=tuple(
            dataclasses.replace(pl, gpus=2) if pl is old else pl for pl in good.placements))
        flagged(inv, wrong, "batch in", "2 GPUs for 1 × 1")


def _bare(**fields: Any) -> Workload:
    """A workload with `fields`; a field given as None is left out (its default applies)."""
    raw = {"name": "w", "type": "training", "gpu": {"types": ["L4"], "count": 1}, "hours_per_month": 100, **fields}
    return Workload.model_validate({k: v for k, v in raw.items() if v is not None})


class TestTheCheckersOwnTierRules:
    """Written from the spec's table, not from core/placement/tiers.py: hand-worked per rule."""

    @pytest.mark.parametrize(("fields", "tier"), [
        ({"type": "experiment", "preemptible": True, "checkpoint_minutes": 5, "hours_per_month": 730}, "opportunistic"),
        ({"type": "realtime_inference", "hours_per_month": None}, "fixed"),
        ({"type": "training", "hours_per_month": 730}, "fixed"),  # rule 2 at exactly 730 hours
        ({"type": "batch_inference", "hours_per_month": 730}, "fixed"),
        ({"type": "training", "hours_per_month": 729.9}, "burst"),  # one step under the boundary
        ({"type": "batch_inference", "hours_per_month": 729.9}, "opportunistic"),
        ({"type": "pretraining"}, "burst"), ({"type": "fine_tuning"}, "burst"), ({"type": "evaluation"}, "burst"),
        ({"type": "federated_training", "datasets": []}, "burst"),
        ({"type": "experiment"}, "opportunistic"), ({"type": "embedding"}, "opportunistic"),
        ({"type": "realtime_inference", "tier": "burst", "hours_per_month": None}, "burst"),  # explicit wins
    ])
    def test_tier(self, fields: dict[str, Any], tier: str) -> None:
        assert spec_tier(_bare(**fields)) == tier

    @pytest.mark.parametrize(("tier", "capacity", "preemptible", "allow", "allowed"), [
        ("fixed", "reserved", False, False, True), ("fixed", "on_demand", False, False, True),
        ("fixed", "spot", True, True, False), ("burst", "on_demand", False, False, True),
        ("burst", "spot", True, True, False), ("opportunistic", "reserved", False, False, True),
        ("opportunistic", "on_demand", False, False, False), ("opportunistic", "on_demand", False, True, True),
        ("opportunistic", "spot", True, False, True), ("opportunistic", "spot", False, True, False),
    ])
    def test_capacity_types(self, tier: str, capacity: str, preemptible: bool, allow: bool, allowed: bool) -> None:
        policies = Policies(allow_on_demand_for_opportunistic=allow)
        assert spec_capacity_allowed(tier, CapacityType(capacity), preemptible, policies) is allowed
