"""The consoles every command writes to: colour only on a TTY, never with NO_COLOR."""

from __future__ import annotations

import os
import sys
from functools import cache

from rich.console import Console


def _width(stream_isatty: bool) -> int | None:
    # Off a TTY rich falls back to 80 columns, which folds wide tables in CI logs.
    if stream_isatty:
        return None
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() else 140


@cache
def stdout() -> Console:
    tty = sys.stdout.isatty()
    # emoji off: a name or a reason from an untrusted file saying `:warning:` is printed as written, not as ⚠
    return Console(no_color=bool(os.environ.get("NO_COLOR")) or not tty, highlight=False, width=_width(tty),
                   soft_wrap=False, emoji=False)


@cache
def stderr() -> Console:
    # Off a TTY (CI logs, a captured run) a message stays one line however long its paths are, so that
    # grep finds it whole; on a TTY rich folds it at the terminal's width, between words.
    tty = sys.stderr.isatty()
    return Console(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or not tty, highlight=False,
                   width=_width(tty), soft_wrap=not tty, emoji=False)
