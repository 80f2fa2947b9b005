"""Placement: each workload's tier, the pools it may use, the MILP that places it and why it landed where it did."""
