"""validate, schema, init: the inventory's own commands."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path

import typer

from hybridctl.commands.app import app
from hybridctl.errors import ExitCode
from hybridctl.render.untrusted import echo


class ValidateFormat(StrEnum):
    text = "text"
    json = "json"
    github = "github"
    sarif = "sarif"


@app.command()
def validate(
    paths: list[Path] = typer.Argument(..., help="Inventory files or directories; each is one inventory.",
                                       show_default=False),
    output_format: ValidateFormat = typer.Option(ValidateFormat.text, "--format", "-f", help="Output format."),
    strict: bool = typer.Option(False, "--strict", help="Fail (exit 1) on warnings too."),
) -> None:
    """Check inventories against format v1: schema, references, and whether every workload can be placed.

    Exit codes: 0 valid, 1 invalid, 2 usage error (missing path, unreadable file).
    """
    from hybridctl.operations.inventory import validate_inventories
    from hybridctl.render import diagnostics as render
    from hybridctl.render.console import stdout

    reports, usage_failed = validate_inventories(paths)
    if output_format is ValidateFormat.json:
        echo(render.render_json(reports))
    elif output_format is ValidateFormat.github:
        text = render.render_github(reports)
        if text:
            echo(text)
    elif output_format is ValidateFormat.sarif:
        echo(render.render_sarif(reports))
    else:
        render.render_text(stdout(), reports)
    if usage_failed:
        raise typer.Exit(ExitCode.USAGE)
    if any(r.errors for r in reports) or (strict and any(r.warnings for r in reports)):
        raise typer.Exit(ExitCode.FAILED)


@app.command()
def schema() -> None:
    """Print the inventory's JSON Schema (for editors' YAML language servers)."""
    import json

    from hybridctl.operations.inventory import inventory_schema

    echo(json.dumps(inventory_schema(), indent=2))


@app.command()
def init(
    directory: Path = typer.Argument(Path("."), help="Where to write the starter inventory."),
    pattern: str = typer.Option("cloud-burst", "--pattern", "-p",
                                help="Deployment pattern: cloud-burst, split-inference, train-onprem-serve-cloud, "
                                     "federated, enterprise, multi-cloud-inference."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing inventory.yaml."),
) -> None:
    """Write a starter inventory for a deployment pattern, from templates/."""
    from hybridctl.render.starter import write_starter

    target = write_starter(directory, pattern, force=force)
    echo(f"wrote {target}; next: hybridctl validate {target}")
