"""synth: the cloud side of a plan, rendered offline for review (like `cdk synth`, `helm template`).

Runs each Pulumi stack program under Pulumi's mocks (no credentials, no Pulumi CLI) and writes
the Kubernetes objects as YAML, the AWS resources' inputs as JSON and an index; the layout is
documented in README.md and is a stable contract.
"""

from __future__ import annotations

from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.commands.moments import WEEK_HELP


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
    from hybridctl.operations.synth import run_synth
    from hybridctl.render.terminal import Terminal

    run_synth(source, out, inventory, week, Terminal())
