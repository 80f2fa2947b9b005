"""state: operations on the state store itself (`state migrate` between a directory and PostgreSQL)."""

from __future__ import annotations

import typer

from hybridctl.commands.app import app

state_app = typer.Typer(name="state", help="Move the state between backends (a directory, PostgreSQL).",
                        no_args_is_help=True)
app.add_typer(state_app)


@state_app.command()
def migrate(
    source: str = typer.Option(..., "--from", metavar="STATE", help="The state to copy: a directory, or a postgresql:// URL."),
    target: str = typer.Option(..., "--to", metavar="STATE", help="Where to copy it: an empty directory, or a postgresql:// URL "
                               "(…?environment=NAME) whose environment holds no state yet."),
) -> None:
    """Copy a state and its journal to another backend, with nothing lost, verified by digests.

    Both states are locked during the copy. The source is left as it was; point --state (or
    HYBRIDCTL_STATE) at the target afterwards."""
    from hybridctl.operations.state_migrate import migrate_state
    from hybridctl.render.console import stdout
    from hybridctl.render.terminal import Terminal

    origin, destination, result = migrate_state(source, target, Terminal())
    out = stdout()
    out.print(f"migrated serial {result.serial}, {result.journal_records} journal record(s) and "
              f"{result.documents} document(s) "
              f"from {origin.location} to {destination.location}", markup=False)
    out.print(f"verified: source {result.source_digest}, target {result.target_digest}", markup=False)
    if result.working_files:
        out.print(f"local working files copied to {destination.root}: {', '.join(result.working_files)}",
                  markup=False)
    out.print(f"use it with: --state {destination.option}  (or HYBRIDCTL_STATE)", markup=False)
