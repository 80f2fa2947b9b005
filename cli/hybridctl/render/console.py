"""The consoles every command writes to: colour only on a TTY, never with NO_COLOR."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from functools import cache

from rich.console import (
    Console,
    ConsoleOptions,
    HighlighterType,
    JustifyMethod,
    OverflowMethod,
    RenderableType,
)
from rich.segment import Segment
from rich.style import Style
from rich.text import Text

from hybridctl.render.untrusted import printable


class GuardedConsole(Console):
    """A console that sends no control character it was given as text: each piece of text a renderable makes
    (a value in a table cell, in a message) goes through `printable` before it is laid out, and only rich's
    own control segments (colours, a spinner's cursor moves) reach the terminal as control. A string is
    escaped before rich measures it, so that a table's columns fit the text as it is shown."""

    def render_str(self, text: str, *, style: str | Style = "", justify: JustifyMethod | None = None,
                   overflow: OverflowMethod | None = None, emoji: bool | None = None, markup: bool | None = None,
                   highlight: bool | None = None, highlighter: HighlighterType | None = None) -> Text:
        return super().render_str(printable(text, lines=True), style=style, justify=justify, overflow=overflow,
                                  emoji=emoji, markup=markup, highlight=highlight, highlighter=highlighter)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control:
                yield segment
            else:
                text = printable(segment.text, lines=True)
                yield segment if text is segment.text else Segment(text, segment.style)


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
    return GuardedConsole(no_color=bool(os.environ.get("NO_COLOR")) or not tty, highlight=False, width=_width(tty),
                   soft_wrap=False, emoji=False)


@cache
def stderr() -> Console:
    # Off a TTY (CI logs, a captured run) a message stays one line however long its paths are, so that
    # grep finds it whole; on a TTY rich folds it at the terminal's width, between words.
    tty = sys.stderr.isatty()
    return GuardedConsole(stderr=True, no_color=bool(os.environ.get("NO_COLOR")) or not tty, highlight=False,
                   width=_width(tty), soft_wrap=not tty, emoji=False)
