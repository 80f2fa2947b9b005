"""How much the solver may do: counted work, never time (spec, "Plans are reproducible").

A plan is a function of its inputs: the same inventory, options, week and previous plan give the same
plan file on any machine and under any load. So every decision of the route and the priority stages
depends on what the solver found, never on how long it took, and each HiGHS run stops on its gap or on a
count of work: branch-and-bound nodes, and HiGHS's own checks of its limits, which it makes at the same
points of its algorithm on every run (one thread, a fixed seed), in the root's cut rounds and heuristics
as in the tree (highs_run._CountedChecks). The LPs run to their optimum.

The wall clock is only a safety net against a pathological model (`--time-limit`): a run it cuts short
says so (status `time_limit`), and the command exits with a code of its own, since that plan may differ
from run to run.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

# Branch-and-bound nodes one MIP run may explore after its root. The root (cuts, heuristics) is where these
# models find their plans; the nodes mostly prove it. Measured on the bench's fleets (bench/plan_bench.py,
# docs/performance.md): at 10,000 x 300 with 30 % scheduled, the route's second restricted MIP took 2,625
# nodes and 60 CPU-s to close 0.02 % of its own bound, against the plan 50 nodes give within 0.03 % of the LP.
MIP_NODES = 50
# HiGHS's checks of its limits one MIP run may make (about 10 ms of root work each on the bench fleets): the
# root's cuts and heuristics, which the node count does not bound. At 10,000 x 300 with 30 % scheduled the
# route's restricted MIPs made 400-800 of them in 4-11 CPU-s each; at 100 the plans were the same (seeds 1
# and 3) or within 0.1 % (seed 2) in about half the CPU.
MIP_CHECKS = 100
# The safety net's default (plan, failover, drill --time-limit): far above what a work-bounded plan takes
# on this 2-core machine (the 100,000-workload fleet plans in about 30 CPU-s), so that it never decides a
# plan on a loaded machine, and still ends a pathological one.
SAFETY_SECONDS = 600.0
# Past the deadline each run still has this long: the stages that keep the spec's tier order where a whole
# stage was cut short (priority._local_stage) must end with an answer, or the plan would break the rule.
AFTER_DEADLINE_SECONDS = 0.5


@dataclass(frozen=True)
class Effort:
    """What one plan's solver runs may do: `mip_nodes` and `mip_checks` per MIP run (the work that decides
    the plan), and a wall-clock deadline (`time.perf_counter()`'s) that only the safety net reads."""

    mip_nodes: int = MIP_NODES
    mip_checks: int = MIP_CHECKS
    deadline: float = math.inf

    @staticmethod
    def within(seconds: float) -> Effort:
        """From now, with the safety net at `seconds` (inf: none)."""
        return Effort(deadline=time.perf_counter() + seconds if math.isfinite(seconds) else math.inf)

    def seconds_left(self) -> float:
        """What the safety net leaves (inf without one); a HiGHS run's time limit."""
        return self.deadline - time.perf_counter() if math.isfinite(self.deadline) else math.inf

    def expired(self) -> bool:
        return self.seconds_left() <= 0.0
