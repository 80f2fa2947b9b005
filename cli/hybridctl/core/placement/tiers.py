"""Tier classification: fixed, burst or opportunistic, with the rule that decided it."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from hybridctl.core.inventory.models import (
    DEFAULT_REALTIME_HOURS,
    CapacityType,
    Inventory,
    Policies,
    TierChoice,
    Workload,
    WorkloadType,
)


class Tier(StrEnum):
    FIXED = "fixed"
    BURST = "burst"
    OPPORTUNISTIC = "opportunistic"


TIER_ORDER = (Tier.FIXED, Tier.BURST, Tier.OPPORTUNISTIC)

_BURST_TYPES = frozenset({WorkloadType.PRETRAINING, WorkloadType.TRAINING, WorkloadType.FINE_TUNING,
                          WorkloadType.EVALUATION, WorkloadType.FEDERATED_TRAINING})


@dataclass(frozen=True)
class TierDecision:
    workload: str
    tier: Tier
    rule: str  # "explicit", or the number of the spec's default rule that matched
    reason: str
    capacity_types: tuple[CapacityType, ...]


def decide_tier(workload: Workload) -> tuple[Tier, str, str]:
    """The spec's default rules, first match wins; an explicit `tier:` overrides them."""
    if workload.tier is not TierChoice.AUTO:
        return Tier(workload.tier.value), "explicit", f"tier: {workload.tier.value} set in the inventory"
    if workload.preemptible:
        return Tier.OPPORTUNISTIC, "1", "preemptible: true"
    if workload.type is WorkloadType.REALTIME_INFERENCE:
        return Tier.FIXED, "2", "realtime_inference is always on"
    # the spec: with a schedule, a workload that runs its whole windows follows rules 3 and 4
    if workload.schedule is None and workload.hours >= DEFAULT_REALTIME_HOURS:
        return Tier.FIXED, "2", f"runs {workload.hours:g} h/month (always on) and is not preemptible"
    if workload.type in _BURST_TYPES:
        return Tier.BURST, "3", f"{workload.type.value} runs in bursts"
    return Tier.OPPORTUNISTIC, "4", f"{workload.type.value} is best-effort work"


def allowed_capacity_types(tier: Tier, preemptible: bool, policies: Policies) -> tuple[CapacityType, ...]:
    """The spec's table of capacity types per tier; spot only for preemptible work."""
    allowed = [CapacityType.RESERVED]
    if tier is not Tier.OPPORTUNISTIC or policies.allow_on_demand_for_opportunistic:
        allowed.append(CapacityType.ON_DEMAND)
    if tier is Tier.OPPORTUNISTIC and preemptible:
        allowed.append(CapacityType.SPOT)
    return tuple(allowed)


def classify_workload(workload: Workload, policies: Policies) -> TierDecision:
    tier, rule, reason = decide_tier(workload)
    return TierDecision(workload.name, tier, rule, reason,
                        allowed_capacity_types(tier, workload.preemptible, policies))


def classify(inventory: Inventory) -> list[TierDecision]:
    return [classify_workload(w, inventory.policies) for w in inventory.workloads]
