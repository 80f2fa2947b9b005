"""Issue 34, item 12(g): `validate --format github` escapes what GitHub's workflow commands give a meaning.

Escaped by hand, following GitHub's rules: in the message `%` first (or the `%` of every other escape
would be escaped again), then CR and LF; in a property (file, title) also `:` and `,`, which end it."""

from __future__ import annotations

from hybridctl.core.inventory.diagnostics import Diagnostic, Severity
from hybridctl.errors import Location
from hybridctl.render.diagnostics import InventoryReport, render_github


def test_messages_and_properties_are_escaped_percent_first() -> None:
    located = Diagnostic("unknown-field:gpu", "50% of\r\nx: y, z", Location("inv/a,b:c%.yaml", 3, 5), hint="use a:b")
    report = InventoryReport("inv/a,b:c%.yaml", (located,))
    assert render_github([report]) == (
        # file: "," -> %2C, ":" -> %3A, "%" -> %25; title: "hybridctl unknown-field" + ":" -> %3A + "gpu"
        "::error file=inv/a%2Cb%3Ac%25.yaml,line=3,col=5,title=hybridctl unknown-field%3Agpu::"
        # body "50% of\r\nx: y, z" + "\nhint: use a:b": % -> %25, CR -> %0D, LF -> %0A; ":" and "," kept
        "50%25 of%0D%0Ax: y, z%0Ahint: use a:b")


def test_a_finding_without_a_line_names_the_inventory_escaped() -> None:
    unlocated = Diagnostic("old-field", "100%\n", None, severity=Severity.WARNING)
    assert render_github([InventoryReport("dir,1/x%y:z.yaml", (unlocated,))]) == (
        "::warning file=dir%2C1/x%25y%3Az.yaml,title=hybridctl old-field::100%25%0A")
