"""The independent checker: every rule of the spec re-derived, sharing no code with the formulation."""
