"""Solving the placement MILP with HiGHS: the route, the greedy starts, strict tier priority's stages."""
