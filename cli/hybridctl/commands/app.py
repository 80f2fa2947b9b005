"""The command line: argument parsing, one error boundary, and exit codes.

Commands live in sibling modules that import only typer and the standard library at
module level, so `hybridctl --help` stays fast; each imports what it needs when it runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from typing import NoReturn

import typer

from hybridctl import __version__, exiting
from hybridctl.errors import CHANGES, ChangesFound, ExitCode, HybridctlError, environment_problem

INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in hybridctl, not a user mistake
INTERRUPTED = 130  # Ctrl-C (128 + SIGINT): not an error, so --detailed-exitcode keeps it too

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
    from hybridctl.commands import report_cmds  # noqa: F401
    from hybridctl.commands import synth_cmds  # noqa: F401
    from hybridctl.commands import apply_cmds  # noqa: F401
    from hybridctl.commands import discover_cmds  # noqa: F401
    from hybridctl.commands import failover_cmds  # noqa: F401
    from hybridctl.commands import bundle_cmds  # noqa: F401
    from hybridctl.commands import state_cmds  # noqa: F401


DETAILED_EXITCODE = "--detailed-exitcode"


def _detailed_exitcode(args: list[str]) -> bool:
    """--detailed-exitcode among the options, read from the words themselves: a usage error (an unknown
    option, a bad value) stops click before any command sees its parsed options. After `--` every word
    is an argument."""
    options = args[:args.index("--")] if "--" in args else args
    return any(word == DETAILED_EXITCODE or word.startswith(DETAILED_EXITCODE + "=") for word in options)


def run(argv: list[str] | None = None) -> None:
    _register()
    args = sys.argv[1:] if argv is None else list(argv)
    # with --detailed-exitcode, 2 means changes and nothing else: every error exits 1, as Terraform's does
    detailed = _detailed_exitcode(args)
    command = typer.main.get_command(app)
    try:
        # standalone mode: typer renders usage errors (exit 2) and turns typer.Exit into the exit code
        command.main(args=args, prog_name="hybridctl", standalone_mode=True)
    except SystemExit as exit_:  # every command's end: done, interrupted, failed, or a click usage error (2)
        if isinstance(exit_.code, int) and exit_.code not in (0, INTERRUPTED):
            sys.exit(_error_exit(exit_.code, detailed))
        raise
    except ChangesFound:
        sys.exit(CHANGES)
    except HybridctlError as error:
        from hybridctl.render.errors import render_error

        render_error(error)
        sys.exit(_error_exit(int(error.exit_code), detailed))
    except KeyboardInterrupt as interrupt:  # a run's CutOff names the steps it cut off
        print(str(interrupt) if str(interrupt).startswith("interrupted") else "interrupted", file=sys.stderr)
        sys.exit(INTERRUPTED)
    except BrokenPipeError:  # `hybridctl plan | head`: the reader left; nothing more to say to it
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(int(ExitCode.FAILED))
    except OSError as error:  # the machine said no (read-only, full, a directory in a file's place): not a bug
        if os.environ.get("HYBRIDCTL_DEBUG"):
            raise
        from hybridctl.render.errors import render_error

        problem = environment_problem(error)
        render_error(problem)
        sys.exit(_error_exit(int(problem.exit_code), detailed))
    except Exception as error:  # a bug: say so plainly, keep the traceback for those who ask
        if os.environ.get("HYBRIDCTL_DEBUG"):
            raise
        from hybridctl.render.untrusted import printable

        print(f"hybridctl: internal error: {type(error).__name__}: {printable(str(error), lines=True)}\n"
              "hint: this is a bug in hybridctl; rerun with HYBRIDCTL_DEBUG=1 and report the traceback",
              file=sys.stderr)
        sys.exit(_error_exit(INTERNAL_ERROR, detailed))


def _error_exit(code: int, detailed: bool) -> int:
    """An error's exit code: its own, or 1 for every error under --detailed-exitcode."""
    return int(ExitCode.FAILED) if detailed else code


def run_and_exit() -> NoReturn:
    """The console script: run(), then, when the command left its values to the exit, flush the output
    and end the process at once with the exit code run() gave."""
    exiting.exit_hard = True
    try:
        run()
        code: str | int | None = 0
    except SystemExit as exit_:
        code = exit_.code
    if not exiting.left_to_exit or not isinstance(code, int) or threading.active_count() > 1:
        sys.exit(code)  # the interpreter's own exit (which also waits for any other thread)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # the interpreter's exit flushes again and reports it, as it always has
        sys.exit(code)
    os._exit(code)
