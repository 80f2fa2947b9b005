"""Run the CLI in-process, the way the console script does, and capture what it prints."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass

from hybridctl.commands.app import run
from hybridctl.render import console


@dataclass(frozen=True)
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run_cli(*args: str) -> Result:
    out, err = io.StringIO(), io.StringIO()
    console.stdout.cache_clear()
    console.stderr.cache_clear()
    code = 0
    with redirect_stdout(out), redirect_stderr(err):
        try:
            run(list(args))
        except SystemExit as exit_:
            code = exit_.code if isinstance(exit_.code, int) else (0 if exit_.code is None else 1)
    console.stdout.cache_clear()
    console.stderr.cache_clear()
    return Result(code, out.getvalue(), err.getvalue())
