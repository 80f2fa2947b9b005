"""How the console script's process ends: values a command leaves to the exit are dropped with the
process instead of being freed one by one."""

from __future__ import annotations

import gc

# The console script's process ends by os._exit once its output is flushed, when the command that ran
# asked for it (leave_to_exit): the interpreter's own exit would first free a large plan's millions of
# objects one by one (about a second at 100,000 workloads), to no one's benefit. run() called in
# process (the tests, CliRunner) never exits that way and keeps nothing.
exit_hard = False  # set by the console script (commands/app.py run_and_exit)
left_to_exit: list[object] = []


def leave_to_exit(*values: object) -> None:
    """Let the process's end drop `values` instead of freeing them here. Only a command with nothing left
    to finish at exit calls it (no child, no open file: atexit handlers and finalizers do not run); the
    console script then ends the process with os._exit. In process, it does nothing."""
    if exit_hard:
        left_to_exit.extend(values)
        # what they hold never becomes garbage: the collector, back on, need not walk it
        gc.freeze()
