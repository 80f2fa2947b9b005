"""The LP relaxation leaves out the columns their bounds fix, and bounds the same optimum.

A failover's model holds the placements on the lost site's pools, and on pools the pinned work
fills, with an upper bound of 0: a fifth of its columns. HiGHS's presolve drops them too, but the
LP is a fifth faster without them (bench/failover_bench.py).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import pytest
from hybridctl.core.failover.events import Event, EventKind
from hybridctl.core.failover.replan import replan
from hybridctl.core.inventory.models import Inventory
from hybridctl.core.placement.planner import plan
from hybridctl.core.solver import highs_run
from hybridctl.core.solver.effort import Effort
from inventory_gen import generate


def test_the_lp_leaves_out_the_columns_its_bounds_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    inventory = Inventory.model_validate(generate(3000, 100, 1))
    base = plan(inventory)
    gpus_at = Counter[str]()
    for p in base.placements:
        gpus_at[p.site] += p.gpus
    relaxations: list[tuple[Any, Any, Any]] = []
    run = highs_run.run

    def watched(model: Any, columns: Any, fixed_values: Any, **options: Any) -> Any:
        outcome = run(model, columns, fixed_values, **options)
        if not options["integer"]:
            relaxations.append((model, columns, outcome))
        return outcome

    monkeypatch.setattr(highs_run, "run", watched)
    replan(inventory, base, [Event(EventKind.SITE_LOST, gpus_at.most_common(1)[0][0])])
    assert relaxations, "the failover's model was solved by the MIP directly: make the fleet larger"
    for model, columns, relaxed in relaxations:
        fixed = model.upper <= model.lower
        assert fixed.any()
        assert not np.isin(np.flatnonzero(fixed), columns).any()
        assert np.isin(np.flatnonzero(~fixed), columns).all()
        # with every column in, the LP's optimum is the same
        whole = run(model, np.arange(model.columns), model.lower, integer=False, effort=Effort(), gap=0.0)
        assert relaxed.objective == pytest.approx(whole.objective, rel=1e-9, abs=1e-6)
        assert (relaxed.values[fixed] == model.lower[fixed]).all()
