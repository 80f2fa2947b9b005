"""synth: the cloud side of a plan, rendered offline for review (like `cdk synth`, `helm template`).

Runs each Pulumi stack program under Pulumi's mocks (no credentials, no Pulumi CLI) and writes
the Kubernetes objects as YAML, the AWS resources' inputs as JSON and an index; the layout is
documented in README.md and is a stable contract.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.commands.moments import WEEK_HELP, week_of_source
from hybridctl.errors import UsageError


@app.command()
def synth(
    source: Path = typer.Argument(..., help="A plan file from `plan --out` (with --inventory), or an inventory "
                                  "(planned first)."),
    out: Path = typer.Option(..., "--out", "-o", help="Directory to write the stacks into (created; the stacks "
                             "synth wrote there before are replaced, nothing else is removed)."),
    inventory: Path | None = typer.Option(None, "--inventory", "-i", help="With a plan file: the inventory it "
                                          "was made from."),
    week: str | None = typer.Option(None, "--week", metavar="YYYY-Www", help=WEEK_HELP + " Not with a plan file: "
                                    "its stacks are of the plan's own week."),
) -> None:
    """Render the plan's cloud stacks offline: Kubernetes YAML, AWS resource inputs, an index."""
    from hybridctl.core.deploy.stackconfig import plan_digest, stack_configs
    from hybridctl.core.deploy.stackvalues import GpuPoolsStackConfig, QueuesStackConfig
    from hybridctl.drivers.inventory_files import load_inventory
    from hybridctl.drivers.synth import synth_stack
    from hybridctl.drivers.synth_write import write_synth
    from hybridctl.operations.common import looks_like_plan, plan_of_inventory
    from hybridctl.operations.week import planned
    from hybridctl.paths import stacks_dir
    from hybridctl.render.console import stderr, stdout

    began = time.perf_counter()
    synth_week = week_of_source(week, source, what="stacks", inventory=inventory)
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
    specs: list[GpuPoolsStackConfig | QueuesStackConfig] = [*configs.gpu_pools, *configs.queues]
    if not specs:
        stdout().print("the plan uses no cloud pool: nothing to synthesize")
        return
    if out.exists() and not out.is_dir():
        raise UsageError(f"--out {out}: not a directory")
    err = stderr()
    runs = []
    for spec in specs:
        err.print(f"synth {spec.project}/{spec.stack_name}")
        runs.append(synth_stack(spec.project, spec.stack_name, spec.values(), stacks_dir()))
    index = write_synth(out, runs, plan_digest=digest, inventory=loaded.name,
                        note=lambda text: err.print(f"note: {text}", markup=False))
    count = sum(len(r.resources) for r in runs)
    stdout().print(f"wrote {len(runs)} stack(s), {count} resource(s) to {out} "
                   f"(index: {index}) in {time.perf_counter() - began:.1f}s")
