"""Demands of many disrupted copies of one inventory, each workload's worked out once (drills).

A drill replans hundreds of scenarios of one fleet. A disrupted inventory (disrupt.py) keeps
the very Workload and Dataset objects of the inventory except those the events change, so a
workload's demands can be reused whenever the workload, the datasets it reads and the policies
are the same objects as when they were worked out: eligibility.demands() reads nothing else.
The cache holds those objects, so an identity cannot be reused by another object.
"""

from __future__ import annotations

from collections import defaultdict

from hybridctl.core.eligibility import Demand, demands
from hybridctl.core.inventory.models import Dataset, Inventory, Policies, Workload

_Known = tuple[Workload, tuple[Dataset, ...], Policies, tuple[Demand, ...]]


class DemandCache:
    def __init__(self) -> None:
        self._known: dict[int, _Known] = {}

    def demands(self, inventory: Inventory) -> list[Demand]:
        """What eligibility.demands(inventory) returns, in the same order."""
        datasets = {d.name: d for d in inventory.datasets}
        reads = {id(w): tuple(datasets[n] for n in w.datasets if n in datasets) for w in inventory.workloads}
        missing = [w for w in inventory.workloads if not self._fits(w, reads[id(w)], inventory.policies)]
        if missing:
            fresh: dict[str, list[Demand]] = defaultdict(list)
            for demand in demands(inventory.model_copy(update={"workloads": missing})):
                fresh[demand.workload.name].append(demand)
            for w in missing:
                self._known[id(w)] = (w, reads[id(w)], inventory.policies, tuple(fresh[w.name]))
        return [d for w in inventory.workloads for d in self._known[id(w)][3]]

    def _fits(self, workload: Workload, read: tuple[Dataset, ...], policies: Policies) -> bool:
        known = self._known.get(id(workload))
        return (known is not None and known[0] is workload and known[2] is policies and len(known[1]) == len(read)
                and all(a is b for a, b in zip(known[1], read, strict=True)))
