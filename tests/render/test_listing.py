"""Tables: rich up to RICH_ROWS rows, plain aligned columns beyond; cells are never markup."""

from __future__ import annotations

import io

from hybridctl.render.listing import RICH_ROWS, print_capped, print_table
from rich.console import Console
from rich.text import Text

COLUMNS = ("workload", "site", "cost/mo>", "why")


def _rendered(rows: list[tuple[str, ...]], width: int = 100) -> str:
    console = Console(file=io.StringIO(), width=width, no_color=True, highlight=False)
    print_table(console, "Placements", COLUMNS, rows, fold_last=True)
    return console.file.getvalue()  # type: ignore[attr-defined]


def _rows(n: int) -> list[tuple[str, ...]]:
    return [(f"w-{i}", "dc-lab" if i % 2 else "aws-eu-west-1", f"${i * 7:,}", f"[red]reason {i}[/] ≤ quota")
            for i in range(n)]


def test_a_table_within_the_rich_limit_is_drawn_by_rich_with_markup_shown_literally() -> None:
    out = _rendered(_rows(3))
    assert "┃ workload" in out and "│ w-2" in out
    assert "[red]reason 2[/] ≤ quota" in out


def test_beyond_the_rich_limit_every_row_is_one_aligned_line() -> None:
    rows = _rows(RICH_ROWS + 1)
    lines = _rendered(rows, width=60).splitlines()
    assert lines[0] == f"Placements ({RICH_ROWS + 1:,} rows)"
    header, rule, *body = lines[1:]
    assert header.split() == ["workload", "site", "cost/mo", "why"]
    assert len(body) == len(rows)
    # names and explanations are never folded or cropped, even past the console's width
    assert body[-1].startswith(f"{'w-200':8}  aws-eu-west-1")
    assert body[-1].endswith(f"[red]reason {RICH_ROWS}[/] ≤ quota")
    # numbers are right-aligned: every cost ends in the same column, under the header's
    ends = {line.index(row[2]) + len(row[2]) for line, row in zip(body, rows, strict=True)}
    assert ends == {header.index("cost/mo") + len("cost/mo")}
    # each column as wide as its widest cell or its name
    assert rule.split() == ["─" * len("workload"), "─" * len("aws-eu-west-1"), "─" * len("cost/mo"),
                            "─" * len("[red]reason 200[/] ≤ quota")]


def test_a_recording_console_keeps_a_long_listing_for_export() -> None:
    console = Console(file=io.StringIO(), width=80, record=True, no_color=True)
    print_table(console, "Placements", COLUMNS, _rows(RICH_ROWS + 1))
    exported = console.export_text()
    assert exported.splitlines()[0] == f"Placements ({RICH_ROWS + 1:,} rows)"
    assert f"[red]reason {RICH_ROWS}[/] ≤ quota" in exported


def test_capped_tables_say_how_many_rows_they_leave_out_and_styled_cells_keep_their_text() -> None:
    console = Console(file=io.StringIO(), width=200, no_color=True, highlight=False)
    items = list(range(RICH_ROWS * 3))
    print_capped(console, "Cloud changes", ("name", "action"), items,
                 lambda i: (f"queue-{i}", Text("delete", style="bold red") if i % 2 else "update"),
                 RICH_ROWS + 50, "cloud changes")
    lines = console.file.getvalue().splitlines()  # type: ignore[attr-defined]
    assert lines[0] == f"Cloud changes ({RICH_ROWS + 50:,} rows)"
    assert lines[3].split() == ["queue-0", "update"] and lines[4].split() == ["queue-1", "delete"]
    assert lines[-1] == f"… and {RICH_ROWS * 3 - RICH_ROWS - 50:,} more cloud changes (--max-rows 0 shows all; --format json has everything)"


def test_beyond_the_rich_limit_a_cell_prints_no_control_character() -> None:
    """The plain columns are written past rich's console: each cell is escaped on its own (render/untrusted.py)."""
    rows = [(*row[:3], f"why\x1b]52;c;aGk=\x07 {i}\x9b2J") for i, row in enumerate(_rows(RICH_ROWS + 1))]
    out = _rendered(rows)
    assert "\x1b" not in out and "\x07" not in out and "\x9b" not in out
    assert out.splitlines()[-1].endswith(f"why\\u001b]52;c;aGk=\\u0007 {RICH_ROWS}\\u009b2J")
