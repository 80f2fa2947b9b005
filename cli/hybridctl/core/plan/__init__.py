"""Placement: the plan model, the MILP planner, the independent checker, diffs, and pricing (pricing/)."""
