"""The command line: argument parsing, one error boundary, and exit codes.

Commands live in sibling modules that import only typer and the standard library at
module level, so `hybridctl --help` stays fast; each imports what it needs when it runs.
"""

from __future__ import annotations

import os
import sys

import typer

from hybridctl import __version__
from hybridctl.errors import HybridctlError

INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in hybridctl, not a user mistake

app = typer.Typer(
    name="hybridctl",
    help="Plan, deploy and fail over AI workloads across on-prem, cloud and edge GPU capacity.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"hybridctl {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Print the version and exit."),
) -> None:
    """Plan, deploy and fail over AI workloads across on-prem, cloud and edge GPU capacity."""


def _register() -> None:
    # the order of these imports is the order of `hybridctl --help`: the workflow's order
    from hybridctl.commands import inventory_cmds  # noqa: F401, I001
    from hybridctl.commands import plan_cmds  # noqa: F401
    from hybridctl.commands import synth_cmds  # noqa: F401
    from hybridctl.commands import apply_cmds  # noqa: F401
    from hybridctl.commands import discover_cmds  # noqa: F401
    from hybridctl.commands import failover_cmds  # noqa: F401
    from hybridctl.commands import bundle_cmds  # noqa: F401


def render_error(error: HybridctlError) -> None:
    from rich.markup import escape

    from hybridctl.core.diagnostics import InvalidInventoryError
    from hybridctl.render.console import stderr

    console = stderr()
    if isinstance(error, InvalidInventoryError):
        from hybridctl.render.diagnostics import InventoryReport, render_text

        path = error.diagnostics[0].location.file if error.diagnostics[0].location else "inventory"
        render_text(console, [InventoryReport(path, tuple(error.diagnostics))])
        return
    where = f"{error.location}: " if error.location else ""
    console.print(f"[red]error:[/] {escape(where + error.message)}")
    if error.hint:
        console.print(f"[cyan]hint:[/] {escape(error.hint)}")


def run(argv: list[str] | None = None) -> None:
    _register()
    command = typer.main.get_command(app)
    try:
        # standalone mode: typer renders usage errors (exit 2) and turns typer.Exit into the exit code
        command.main(args=argv, prog_name="hybridctl", standalone_mode=True)
    except HybridctlError as error:
        render_error(error)
        sys.exit(int(error.exit_code))
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
    except Exception as error:  # a bug: say so plainly, keep the traceback for those who ask
        if os.environ.get("HYBRIDCTL_DEBUG"):
            raise
        print(f"hybridctl: internal error: {type(error).__name__}: {error}\n"
              "hint: this is a bug in hybridctl; rerun with HYBRIDCTL_DEBUG=1 and report the traceback",
              file=sys.stderr)
        sys.exit(INTERNAL_ERROR)
