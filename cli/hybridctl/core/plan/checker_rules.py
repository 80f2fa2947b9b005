"""The tier rules as the checker states them, written from the spec (inventory-v1.md, "Tiers").

The planner classifies with core/tiers.py. The checker must not borrow that code: a bug there
would then be a bug in both, and the checker would approve the plan it should reject. So the
spec's rules are written out again here, as plainly as the spec words them, and nothing here
imports the planner's classification.
"""

from __future__ import annotations

from hybridctl.core.inventory.models import CapacityType, Policies, TierChoice, Workload, WorkloadType

FIXED = "fixed"
BURST = "burst"
OPPORTUNISTIC = "opportunistic"

ALWAYS_ON_HOURS = 730  # the spec's rule 2: `hours_per_month: 730`
# rule 3 of the spec, word for word
_BURST_WORKLOAD_TYPES = ("pretraining", "training", "fine_tuning", "evaluation", "federated_training")


def spec_tier(workload: Workload) -> str:
    """The spec's `tier: auto` rules, first match wins; an explicit tier is taken as written."""
    if workload.tier is not TierChoice.AUTO:
        return workload.tier.value
    if workload.preemptible:  # rule 1
        return OPPORTUNISTIC
    hours = workload.hours_per_month if workload.hours_per_month is not None else ALWAYS_ON_HOURS
    if workload.type is WorkloadType.REALTIME_INFERENCE or hours >= ALWAYS_ON_HOURS:  # rule 2
        return FIXED
    if workload.type.value in _BURST_WORKLOAD_TYPES:  # rule 3
        return BURST
    return OPPORTUNISTIC  # rule 4: experiment, batch_inference, embedding


def spec_capacity_allowed(tier: str, capacity_type: CapacityType, preemptible: bool, policies: Policies) -> bool:
    """The spec's table of capacity types per tier, and "spot only for preemptible workloads"."""
    if capacity_type is CapacityType.RESERVED:
        return True
    if capacity_type is CapacityType.ON_DEMAND:
        return tier in (FIXED, BURST) or policies.allow_on_demand_for_opportunistic
    return tier == OPPORTUNISTIC and preemptible  # spot: never for fixed or burst
