"""Prices and cost: the one place of the core that prices anything (the spec's Cost section).

- rates.py: what a GPU-hour of a pool costs (the pool's price, else the catalog's list price), a
  committed pool, one replica (amortized, cash, its share of the planner's objective), whole
  machines, and reading a dataset from elsewhere (egress);
- arrays.py: the same prices as the solver's arrays (numpy, over every placement column at once);
- pools.py: each pool's GPUs in use, machines and cash, from the placements;
- totals.py: a plan's totals (compute, data, committed, pay-per-use, idle committed, cash, the total
  under its cost model), each workload's cost, and the change in cost between two plans;
- shares.py: each placement's share of its pool (compute and the pay-per-use machine rounding it carries);
- cents.py: amounts in cents that add up to their total (largest remainder);
- showback.py: a plan's cost broken down by tier, type, site, pool, workload, capacity type or team;
- incident.py: what a failover or drill costs in cash, committed capacity lost still paid.

totals.py and showback.py read plans alone and import nothing heavy: a plan file is priced without
numpy. This package imports none of its modules, so that reading one pulls in no other.
The independent checker (checker*.py) keeps its own statement of the rules on purpose.
"""
