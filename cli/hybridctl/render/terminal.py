"""The view an operation is handed for what it has to say while it runs (Terraform's views).

An operation works and returns its values; whatever it says on the way (progress, notes, a prompt's
question, a document on stdout) goes through this object, which the command makes. The operations
never touch a console themselves: what a run looks like, and where each line goes, is decided here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console

from hybridctl.render.console import stderr, stdout
from hybridctl.render.untrusted import confirm, echo


class Terminal:
    """The human view: what was done on stdout (`say`), what was noticed on stderr (`note`)."""

    def __init__(self, out: Console | None = None, err: Console | None = None) -> None:
        self.out = stdout() if out is None else out
        self.err = stderr() if err is None else err

    def beside_document(self) -> Terminal:
        """The view for a run whose stdout is a document (`--format json`): what it says goes to stderr."""
        return Terminal(out=self.err, err=self.err)

    def say(self, text: str, *, markup: bool = True) -> None:
        self.out.print(text, markup=markup)

    def note(self, text: str, *, markup: bool = True) -> None:
        self.err.print(text, markup=markup)

    def document(self, text: str, *, newline: bool = False) -> None:
        """A document (JSON, markdown) on stdout, as written but for control characters (render/untrusted.py)."""
        echo(text, nl=newline)

    def raw(self, text: str) -> None:
        """Text rich already rendered (with this console's width and colours), written as it is."""
        self.out.file.write(text)
        self.out.file.flush()

    def captured(self, draw: Callable[[Console], None]) -> str:
        """What `draw` renders on stdout's console, as text, byte for byte (its width, its colours), unwritten."""
        self.out.begin_capture()
        try:
            draw(self.out)
        finally:
            text = self.out.end_capture()
        return text

    @contextmanager
    def working(self, text: str) -> Iterator[None]:
        """A spinner on stderr while something slow runs (nothing off a TTY)."""
        with self.err.status(text):
            yield

    def confirm(self, question: str) -> bool:
        return confirm(question)
