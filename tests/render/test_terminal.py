"""The view operations speak through: each kind of line goes where the command's output contract puts it."""

from __future__ import annotations

import io

import pytest
from hybridctl.render.terminal import Terminal
from rich.console import Console


def _terminal() -> tuple[Terminal, io.StringIO, io.StringIO]:
    out, err = io.StringIO(), io.StringIO()
    return Terminal(Console(file=out, width=80), Console(file=err, width=80)), out, err


def test_what_was_done_goes_to_stdout_and_what_was_noticed_to_stderr() -> None:
    view, out, err = _terminal()
    view.say("[bold]applied[/]")
    view.note("[x] kept literally", markup=False)
    assert out.getvalue() == "applied\n"
    assert err.getvalue() == "[x] kept literally\n"


def test_beside_a_json_document_what_a_run_says_goes_to_stderr() -> None:
    view, out, err = _terminal()
    beside = view.beside_document()
    beside.say("runbook rb-1 failed")
    beside.note("note: superseded")
    assert out.getvalue() == ""
    assert err.getvalue() == "runbook rb-1 failed\nnote: superseded\n"


def test_a_captured_rendering_is_returned_not_written() -> None:
    view, out, _ = _terminal()
    text = view.captured(lambda console: console.print("a table"))
    assert (text, out.getvalue()) == ("a table\n", "")
    view.raw(text)
    assert out.getvalue() == "a table\n"


def test_a_document_is_written_as_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    view, _, _ = _terminal()
    view.document('{"a": 1}')
    view.document("[b]", newline=True)
    assert capsys.readouterr().out == '{"a": 1}[b]\n'
