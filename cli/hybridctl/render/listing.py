"""Tables for people, drawn by rich up to a screenful or two, and as plain columns beyond.

rich lays a table out cell by cell (measure, wrap, pad, crop): about 2 ms a row, so the 14,000
placements of a 10,000-workload plan took 25 s. Someone who asks for every row is reading a
listing, or piping it to grep, so past `RICH_ROWS` the same columns come out as one line a row,
padded to the widest cell and never folded, written straight to the console's file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from hybridctl.render.untrusted import printable

T = TypeVar("T")
Cell = str | Text  # a str is plain text, never markup; a Text carries its own style

# The plan commands' default --max-rows: what they show unasked stays a rich table.
RICH_ROWS = 200


def print_capped(console: Console, title: str, columns: Sequence[str], items: Sequence[T],
                 row: Callable[[T], Sequence[Cell]], max_rows: int, what: str, *, fold_last: bool = False) -> None:
    """A table of at most max_rows items (0: all), one row each, and a line saying how many were left out."""
    shown = items if max_rows <= 0 else items[:max_rows]
    print_table(console, title, columns, [row(item) for item in shown], fold_last=fold_last)
    if len(items) > len(shown):
        console.print(f"[dim]… and {len(items) - len(shown):,} more {what} "
                      "(--max-rows 0 shows all; --format json has everything)[/]")


def print_table(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[Cell]],
                *, fold_last: bool = False) -> None:
    """One table; the title is markup, written by us. A column name ending in ">" is right-aligned
    (numbers). A str cell is plain text, never markup; a Text cell keeps its style in a rich table
    and its text in plain columns. With `fold_last`, a rich table folds its last column (an
    explanation) and never the others (names people grep for)."""
    if len(rows) > RICH_ROWS:
        _print_columns(console, title, columns, [[c.plain if isinstance(c, Text) else c for c in r] for r in rows])
        return
    table = Table(title=title, title_justify="left")
    for i, column in enumerate(columns):
        last = i == len(columns) - 1
        table.add_column(column.rstrip(">"), justify="right" if column.endswith(">") else "left",
                         no_wrap=fold_last and not last, ratio=1 if fold_last and last else None,
                         min_width=16 if fold_last and last else None)
    for row in rows:
        table.add_row(*(cell if isinstance(cell, Text) else escape(cell) for cell in row))
    console.print(table)


def _width(cell: str) -> int:
    return len(cell) if cell.isascii() else cell_len(cell)


def _print_columns(console: Console, title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    names = [c.rstrip(">") for c in columns]
    right = [c.endswith(">") for c in columns]
    # written past rich (below), so each cell passes the one rule itself: a value from a file is shown, not obeyed
    rows = [[printable(cell) for cell in row] for row in rows]
    widths = [max([_width(n), *(_width(row[i]) for row in rows)]) for i, n in enumerate(names)]
    last = len(columns) - 1

    def line(cells: Sequence[str]) -> str:
        # the last column is left unpadded so that lines carry no trailing blanks
        return "  ".join(
            cell if i == last and not right[i]
            else (" " * (widths[i] - _width(cell)) + cell if right[i] else cell + " " * (widths[i] - _width(cell)))
            for i, cell in enumerate(cells)).rstrip()

    console.print(f"[italic]{title}[/] ({len(rows):,} rows)")
    rule = "  ".join("─" * w for w in widths)
    block = "\n".join([line(names), rule, *(line(row) for row in rows)]) + "\n"
    if console.record:
        console.out(block, end="", highlight=False)
    else:
        # Plain text needs none of rich's rendering, which costs half a second per 10,000 lines.
        console.file.write(block)
