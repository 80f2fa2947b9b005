"""synth: the plan's cloud stacks run under Pulumi's mocks and written out for review (commands/synth_cmds.py)."""

from __future__ import annotations

import time
from pathlib import Path

from hybridctl.errors import UsageError
from hybridctl.render.terminal import Terminal


def run_synth(source: Path, out: Path, inventory: Path | None, week_text: str | None, view: Terminal) -> None:
    """Load (or plan), build the stack configurations, synthesize each stack and write them with their index."""
    from hybridctl.core.deploy.gke_aks import CloudPoolsStackConfig, other_cloud_stacks
    from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
    from hybridctl.core.deploy.stackvalues import GpuPoolsStackConfig, QueuesStackConfig
    from hybridctl.core.inventory.catalog import catalog
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.synth import synth_stack
    from hybridctl.drivers.synth_write import write_synth
    from hybridctl.operations.common import looks_like_plan, plan_of_inventory
    from hybridctl.operations.moments import week_of_source
    from hybridctl.operations.week import planned
    from hybridctl.paths import stacks_dir

    began = time.perf_counter()
    synth_week = week_of_source(week_text, source, what="stacks", inventory=inventory)
    if looks_like_plan(source):
        if inventory is None:
            raise UsageError(f"synth {source} needs --inventory PATH: the inventory the plan was made from")
        # a plan file is untrusted, and of its inventory (exit 4, as apply): its stacks are what apply would make
        the_plan, loaded = plan_of_inventory(source, inventory)
    else:
        loaded = load_inventory(source).inventory
        the_plan = planned(loaded, synth_week)  # verified: its stacks are what apply would make of it
    digest = plan_digest(the_plan)
    configs = stack_configs(loaded, the_plan, digest)
    specs: list[GpuPoolsStackConfig | CloudPoolsStackConfig | QueuesStackConfig] = [
        *configs.gpu_pools, *other_cloud_stacks(loaded, the_plan, digest, catalog()), *configs.queues]
    if not specs:
        view.say("the plan uses no cloud pool: nothing to synthesize")
        return
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    runs = []
    for spec in specs:
        view.note(f"synth {spec.project}/{spec.stack_name}")
        runs.append(synth_stack(spec.project, spec.stack_name, spec.values(), stacks_dir()))
    index = write_synth(out, runs, plan_digest=digest, inventory=loaded.name,
                        note=lambda text: view.note(f"note: {text}", markup=False))
    count = sum(len(r.resources) for r in runs)
    view.say(f"wrote {len(runs)} stack(s), {count} resource(s) to {out} "
             f"(index: {index}) in {time.perf_counter() - began:.1f}s")
