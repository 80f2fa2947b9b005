"""Tables: rich up to RICH_ROWS rows, plain aligned columns beyond; cells are never markup."""

from __future__ import annotations

import io

from hybridctl.render.listing import RICH_ROWS, print_table
from rich.console import Console

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
