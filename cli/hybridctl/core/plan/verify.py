"""The checker as a guard: every plan and every replan the CLI makes is verified before use.

A plan that breaks a rule of the spec is a bug in the planner, not a user mistake, so it is
raised as PlanCheckFailed, which the CLI reports as an internal error (exit 70) naming the
broken rule, instead of showing, saving or applying the plan.
"""

from __future__ import annotations

from hybridctl.core.inventory.models import Inventory
from hybridctl.core.plan.checker import check_plan
from hybridctl.core.plan.model import Plan

_SHOWN = 10  # violations listed in the message; the rest are counted


class PlanCheckFailed(Exception):
    """The independent checker rejected a plan the planner produced: a bug in hybridctl."""

    def __init__(self, what: str, violations: list[str]) -> None:
        self.what = what
        self.violations = violations
        listed = "; ".join(violations[:_SHOWN])
        more = f" (and {len(violations) - _SHOWN} more)" if len(violations) > _SHOWN else ""
        super().__init__(f"the {what} breaks the spec's placement rules: {listed}{more}")


def verified(inventory: Inventory, plan: Plan, what: str = "plan") -> Plan:
    """`plan` itself when the checker finds nothing wrong with it; PlanCheckFailed otherwise."""
    violations = check_plan(inventory, plan)
    if violations:
        raise PlanCheckFailed(what, violations)
    return plan
