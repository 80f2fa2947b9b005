"""The one rule for text hybridctl did not write itself (inventory values, state, lock holders, plan files,
runbooks, scenario files, arguments echoed back) on its way to a terminal or a pull-request comment.

A terminal obeys what it is sent: ESC starts a sequence that clears the screen, moves the cursor or, with
OSC 52, writes the user's clipboard; C1 (U+0080-U+009F) does the same in one character on terminals that
read it; CR and BS overwrite what was printed. rich strips only BEL, BS, VT, FF and CR from its text, so
every console hybridctl writes to passes each piece of text through `printable` (render/console.py), and
every document it echoes (JSON, markdown, GitHub annotations, a prompt) does too.
"""

from __future__ import annotations

import re

import typer

# C0 but newline and tab (a console's own line breaks and the tab rich expands), DEL, C1
_CONTROL_BUT_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _escaped(match: re.Match[str]) -> str:
    # JSON's and Python's spelling of the same character: visible in text, and the same value in a JSON string
    return f"\\u{ord(match.group()):04x}"


def printable(text: str, *, lines: bool = False) -> str:
    """`text` with every control character written out as `\\u001b`; newline and tab too unless `lines`
    (a console's or a document's own line breaks, not a value's)."""
    pattern = _CONTROL_BUT_LINES if lines else _CONTROL
    return pattern.sub(_escaped, text) if pattern.search(text) else text


# CommonMark's backslash escapes for what makes a link or an image (`[`), an HTML tag, an autolink or an entity,
# bold, or a table cell's end out of a name; GitHub renders each escaped character as itself. A backtick stays:
# hybridctl's own notes quote with it, and a code span makes what it holds inert.
_MARKDOWN = re.compile(r"([\\*\[\]<>|&])")


def markdown_text(text: str) -> str:
    """One value in a markdown table or line: escaped for markdown and HTML, on one line, no control."""
    return printable(_MARKDOWN.sub(r"\\\1", text))


def echo(text: str, *, nl: bool = True, err: bool = False) -> None:
    """A document (JSON, markdown, annotations) or a plain line, on stdout or stderr, with no control in it.
    In JSON only a string can hold a raw C1 or DEL (json.dumps escapes C0), and `\\u009b` there is the same value."""
    typer.echo(printable(text, lines=True), nl=nl, err=err)


def confirm(question: str) -> bool:
    return typer.confirm(printable(question, lines=True), default=False)
